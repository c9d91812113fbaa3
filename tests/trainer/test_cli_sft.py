"""``lean-dojo-v2 train sft`` through the real entry point (``lean_dojo_v2.cli.main``): the
database curriculum with ``--json``, and bad input as one-line errors with a non-zero exit code."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.data import DatasetDir, write_theorems

from .conftest import fast_settings


def _set_args(**extra) -> list[str]:
    """``--set key=value`` arguments for the quick tiny-model settings (plus ``extra``)."""
    values = fast_settings(**extra)
    out: list[str] = []
    for key, value in values.items():
        text = ",".join(value) if isinstance(value, list) else str(value)
        out += ["--set", f"{key}={text}"]
    return out


def _one_line_error(capsys) -> str:
    """The command's stderr, checked to be one ``lean-dojo-v2: error:`` line, no traceback."""
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err and "Traceback" not in captured.out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("lean-dojo-v2: error: ")
    return lines[0]


def test_cli_train_sft_db_json_summary_is_last_line_and_run_is_recorded(
    tiny_model_dir, sample_path, tmp_path, capsys
):
    from lean_dojo_v2.cli import main
    from lean_dojo_v2.database import DynamicDatabase

    db_path = tmp_path / "db.sqlite"
    with DynamicDatabase(db_path) as db:
        repo = db.add_repository(sample_path)
    out = tmp_path / "sft"
    argv = ["train", "sft", "--db", str(db_path), "-o", str(out), "--json"]
    argv += _set_args(model_name=str(tiny_model_dir), max_steps=2)
    assert main(argv) == 0

    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["steps"] == 2
    assert summary["output_dir"] == str(out)
    assert summary["first_loss"] > 0 and summary["last_loss"] > 0
    assert summary["seconds"] > 0
    assert (out / "model.safetensors").is_file()

    with DynamicDatabase(db_path) as db:
        runs = db.training_runs()
    assert [(r.kind, r.status) for r in runs] == [("sft", "finished")]
    assert runs[0].repository_ids == [repo.id]
    assert runs[0].metrics["steps"] == 2
    assert runs[0].checkpoint == str(out.resolve())


def test_cli_train_sft_unknown_model_offline_is_one_line_error(
    sample_path, tmp_path, capsys, monkeypatch
):
    from lean_dojo_v2.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["train", "sft", "--data", str(sample_path), "-o", str(tmp_path / "o")]
    argv += _set_args(model_name="no-such-org/no-such-model", max_steps=1)
    assert main(argv) != 0
    line = _one_line_error(capsys)
    assert "no-such-org/no-such-model" in line and "smollm2" in line


def test_cli_train_sft_unknown_set_key_lists_valid_keys(sample_path, tmp_path, capsys):
    from lean_dojo_v2.cli import main

    argv = ["train", "sft", "--data", str(sample_path), "-o", str(tmp_path / "o")]
    assert main([*argv, "--set", "learning_rate=1e-4"]) != 0
    line = _one_line_error(capsys)
    assert "unknown config key 'learning_rate'" in line
    for valid in ("lr", "batch_size", "epochs_per_repo", "max_seq_len"):
        assert valid in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "which,words",
    [("empty", "no theorems"), ("no_tactics", "traced tactics")],
)
def test_cli_train_sft_empty_or_tacticless_dataset_is_one_line_error(
    which, words, tiny_model_dir, sample_path, tmp_path, capsys
):
    from lean_dojo_v2.cli import main

    data = tmp_path / f"{which}.json"
    theorems = (
        []
        if which == "empty"
        else [t for t in DatasetDir(sample_path).theorems() if not t.traced_tactics]
    )
    if which == "no_tactics":
        assert theorems  # the sample has theorems without traced tactics
    write_theorems(data, theorems)
    argv = ["train", "sft", "--data", str(data), "-o", str(tmp_path / "o")]
    argv += _set_args(model_name=str(tiny_model_dir), max_steps=1)
    assert main(argv) != 0
    line = _one_line_error(capsys)
    assert words in line and str(data) in line
