"""``train progress``: it does not resume, and says so. A run killed during
training leaves the output directory as it was (nothing half-written, no staging left behind by an
exception), and the same command then trains from the start with a summary saying it did."""

from __future__ import annotations

import json

import pytest
from lean_progress.tiny_bert import build_tiny_bert, sample_rows_file

from lean_dojo_v2.cli import main


class Killed(Exception):
    pass


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_progress_restart"))


def test_a_killed_progress_run_restarts_from_zero_and_says_so(
    tiny_bert, tmp_path, capsys, monkeypatch
):
    import torch
    import transformers

    torch.set_num_threads(1)
    rows = sample_rows_file(tmp_path / "rows.jsonl")
    out = tmp_path / "out"
    argv = [
        "train", "progress", "--data", str(rows), "-o", str(out),
        "--set", f"model_name={tiny_bert}", "--set", "max_steps=2", "--set", "batch_size=4",
        "--set", "max_length=64", "--set", "progress_bar=false", "--json",
    ]  # fmt: skip
    real_train = transformers.Trainer.train

    def killed(self, *args, **kwargs):
        raise Killed("killed during training")

    monkeypatch.setattr(transformers.Trainer, "train", killed)
    with pytest.raises(Killed):
        main(argv)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []
    monkeypatch.setattr(transformers.Trainer, "train", real_train)

    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 2 and summary["resumed_from"] is None
    assert "does not resume" in summary["resume_note"]
