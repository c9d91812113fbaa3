"""ProgressTrainer: upstream LeanProgress's ``bert-base-uncased`` falling back to MiniLM offline is said on
stderr and in the result on every run, and a loss that becomes NaN/inf stops the
run with ``NonFiniteLossError``, leaving the previous model in ``output_dir`` as it was. Tiny random BERT, CPU, seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lean_progress.tiny_bert import build_tiny_bert, one_torch_thread, sample_rows_file

from lean_dojo_v2.trainer.errors import NonFiniteLossError
from lean_dojo_v2.trainer.progress_trainer import ProgressTrainer

FAST = dict(batch_size=4, max_length=128, progress_bar=False, logging_steps=1, max_steps=2)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    yield from one_torch_thread()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_progress_numerics"))


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory) -> Path:
    return sample_rows_file(tmp_path_factory.mktemp("progress_rows") / "rows.jsonl", 24)


def test_offline_fallback_from_bert_base_uncased_is_said_every_time(
    tiny_bert, rows_file, tmp_path, monkeypatch, capsys
):
    from lean_dojo_v2.models import loading
    from lean_dojo_v2.models import progress as progress_model

    # As on this machine: offline, bert-base-uncased not in the HF cache; the tiny BERT stands in
    # for the bundled MiniLM, so that the test trains in seconds.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_in_hub_cache", lambda repo_id: False)
    monkeypatch.setattr(progress_model, "minilm_path", lambda: tiny_bert)
    for run in range(2):  # not only the first time: no warnings-once filter
        out = tmp_path / f"run{run}"
        result = ProgressTrainer(
            rows_file, model_name="bert-base-uncased", output_dir=str(out), **FAST
        ).train()
        err = capsys.readouterr().err
        assert "warning: bert-base-uncased" in err and "MiniLM" in err, err
        assert result.model_fallback is True
        assert result.requested_model == "bert-base-uncased"
        assert result.base_model == str(tiny_bert)
        summary = json.loads((out / "summary.json").read_text("utf-8"))
        assert summary["model_fallback"] is True
        assert summary["requested_model"] == "bert-base-uncased"


def test_a_model_asked_for_by_path_is_no_fallback(tiny_bert, rows_file, tmp_path, capsys):
    result = ProgressTrainer(
        rows_file, model_name=str(tiny_bert), output_dir=str(tmp_path / "out"), **FAST
    ).train()
    assert result.model_fallback is False and result.requested_model == str(tiny_bert)
    assert "warning:" not in capsys.readouterr().err


def test_absurd_lr_stops_with_a_typed_error_and_keeps_the_previous_model(
    tiny_bert, rows_file, tmp_path
):
    out = tmp_path / "out"
    ProgressTrainer(rows_file, model_name=str(tiny_bert), output_dir=str(out), **FAST).train()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(NonFiniteLossError, match=r"is (nan|inf) at step \d+"):
        ProgressTrainer(
            rows_file,
            model_name=str(tiny_bert),
            output_dir=str(out),
            learning_rate=1e30,
            **{**FAST, "max_steps": 6},
        ).train()
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert after == before  # the model of the first run, byte for byte
