"""Upstream LeanProgress's entry points: ``train_steps_model`` (its helpers in our one input
format, its command line training through ProgressTrainer) and ``create_sample_dataset`` as the
seed uses it (a module with ``main``/``parse_args``/a lazy ``SAMPLE_DATA``) and as we do (a
callable). The upstream test file itself runs unchanged in
``test_upstream_leanprogress_examples.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.lean_progress import create_sample_dataset, progress_examples, train_steps_model
from lean_dojo_v2.models.progress import METADATA_FILE, ProgressModel, progress_text
from lean_progress.tiny_bert import build_tiny_bert, one_torch_thread, sample_rows_file


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    yield from one_torch_thread()


def test_build_text_is_the_progress_models_input_format():
    # A header and trailing blanks are normalised away by progress_text: build_text must agree.
    goal = "1 goal\nn : ℕ\n⊢ Nat.gcd n n = n  \n"
    assert train_steps_model.build_text(goal, "intro n", "simp") == progress_text(
        goal, "intro n", "simp"
    )
    assert train_steps_model.build_text(goal, None, "simp") == progress_text(goal, "", "simp")


def test_tokenize_batch_pads_to_max_length_with_float_labels(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_bert(tmp_path / "bert"))
    batch = {
        "goal": ["⊢ a = a", "n : ℕ\n⊢ n + 0 = n"],
        "prefix": ["", "intro n"],
        "tactic": ["rfl", "simp"],
        "steps_remaining": [1, 2],
    }
    encoded = train_steps_model.tokenize_batch(tokenizer, max_length=24)(batch)
    assert [len(ids) for ids in encoded["input_ids"]] == [24, 24]
    assert encoded["labels"] == [1.0, 2.0] and all(isinstance(x, float) for x in encoded["labels"])
    texts = [
        progress_text(g, p, t)
        for g, p, t in zip(*[batch[k] for k in ("goal", "prefix", "tactic")], strict=True)
    ]
    expected = tokenizer(texts, padding="max_length", truncation=True, max_length=24)
    assert encoded["input_ids"] == expected["input_ids"]


def test_importing_the_modules_loads_nothing_heavy_and_reads_no_file():
    code = (
        "import sys\n"
        "from lean_dojo_v2.lean_progress import create_sample_dataset, train_steps_model\n"
        "assert create_sample_dataset._sample_rows.cache_info().currsize == 0\n"
        "heavy = [m for m in ('torch', 'transformers', 'lean_dojo_v2.trainer.progress_trainer',"
        " 'lean_dojo_v2.lean_progress.dataset') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_sample_data_is_the_bundled_real_sample_and_a_fresh_copy(tmp_path):
    expected = [ex.to_dict() for ex in progress_examples(load_theorems(sample_dataset_path()))]
    data = create_sample_dataset.SAMPLE_DATA
    assert data == expected and len(data) == 158
    data[0]["goal"] = "changed"
    assert create_sample_dataset.SAMPLE_DATA == expected
    # Our main with arguments writes the same rows; the module is still callable as the function.
    assert create_sample_dataset.main(["--output", str(tmp_path / "a.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text("utf-8").splitlines()]
    assert rows == expected
    summary = create_sample_dataset(tmp_path / "b.jsonl")
    assert summary["rows"] == 158
    with pytest.raises(AttributeError, match="NO_SUCH"):
        create_sample_dataset.NO_SUCH  # noqa: B018


def test_command_line_trains_through_progress_trainer(tmp_path, capsys):
    tiny = build_tiny_bert(tmp_path / "bert")
    rows = sample_rows_file(tmp_path / "rows.jsonl", 24)
    out = tmp_path / "model"
    argv = [
        "--dataset", str(rows),
        "--output-dir", str(out),
        "--model-name", str(tiny),
        "--max-length", "64",
        "--batch-size", "4",
        "--epochs", "1",
    ]  # fmt: skip
    assert train_steps_model.main(argv) == 0
    printed = capsys.readouterr().out
    assert f"LEANPROGRESS_MODEL={out}" in printed
    # ProgressTrainer's outputs: its summary and the metadata ProgressModel needs.
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["base_model"] == str(tiny) and summary["train_examples"] > 0
    assert (out / METADATA_FILE).is_file()
    model = ProgressModel.load(out, device="cpu")
    assert len(model.predict(["⊢ a = a"], ["rfl"])) == 1
    # A directory holding files this library did not write is refused without --force.
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    elsewhere = [*argv[:2], "--output-dir", str(foreign), *argv[4:]]
    assert train_steps_model.main(elsewhere) == 1
    assert "error:" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"
    assert train_steps_model.main([*elsewhere, "--force"]) == 0
    assert (foreign / METADATA_FILE).is_file()


def test_command_line_reports_a_missing_dataset(tmp_path, capsys):
    argv = ["--dataset", str(tmp_path / "none.jsonl"), "--output-dir", str(tmp_path / "m")]
    assert train_steps_model.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "none.jsonl" in err


def test_module_runs_with_python_dash_m():
    done = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2.lean_progress.train_steps_model", "--help"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    )
    assert done.returncode == 0 and "--output-dir" in done.stdout
