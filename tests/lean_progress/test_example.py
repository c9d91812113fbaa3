"""examples/leanprogress/train_and_predict.py runs end to end (tiny BERT, two steps; the real run
with MiniLM is in docs/progress.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lean_progress.tiny_bert import build_tiny_bert, one_torch_thread

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "leanprogress" / "train_and_predict.py"


@pytest.fixture()
def _one_thread():
    yield from one_torch_thread()


def test_leanprogress_example_creates_trains_predicts(tmp_path, capsys, _one_thread):
    spec = importlib.util.spec_from_file_location("leanprogress_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tiny = build_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "run"
    argv = [
        "--output-dir",
        str(out),
        "--model",
        str(tiny),
        "--max-steps",
        "2",
        "--max-length",
        "64",
    ]
    assert module.main(argv) == 0
    text = capsys.readouterr().out
    assert "1. 158 rows from 51 proofs" in text
    assert "2. trained 2 steps" in text
    predictions = text.split("3. predictions on held-out states")[1].splitlines()[1:7]
    assert len(predictions) == 6 and all(" -> " in line for line in predictions)
    assert (out / "progress_metadata.json").is_file()
    assert (tmp_path / "run-data.jsonl").is_file()
    # Running it again replaces its own outputs.
    assert module.main(argv) == 0
