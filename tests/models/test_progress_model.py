"""ProgressModel / load_progress_model / progress_text (models/progress.py) on a tiny random BERT
regressor; metrics on hand-computed numbers; the offline base-model rules."""

from __future__ import annotations

import logging

import pytest
from lean_progress.tiny_bert import build_tiny_progress_model, one_torch_thread

from lean_dojo_v2.data import clean_state, load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ModelError, ModelNotFoundError
from lean_dojo_v2.models.progress import (
    ENV_MODEL,
    ProgressModel,
    load_progress_model,
    minilm_path,
    progress_metrics,
    progress_text,
    resolve_progress_base,
    round_steps,
)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    yield from one_torch_thread()


@pytest.fixture(scope="module")
def tiny_progress_dir(tmp_path_factory):
    return build_tiny_progress_model(tmp_path_factory.mktemp("tiny_progress"))


@pytest.fixture(scope="module")
def tiny(tiny_progress_dir):
    return ProgressModel.load(tiny_progress_dir, device="cpu")


@pytest.fixture(scope="module")
def real_states():
    states = []
    for t in load_theorems(sample_dataset_path()):
        states += [(x.state_before, x.tactic) for x in t.traced_tactics]
    return states[:12]


def test_progress_text_is_the_upstream_template(real_states):
    state, tactic = real_states[0]
    assert progress_text(state, "intro x\nsimp", tactic) == (
        f"Goal:\n{clean_state(state)}\n\nPrefix:\nintro x\nsimp\n\nCandidate tactic:\n{tactic}"
    )
    assert progress_text(state) == f"Goal:\n{clean_state(state)}\n\nPrefix:\n"
    assert progress_text(state, None, "") == progress_text(state, "", None)


def test_progress_text_normalises_the_goal():
    # The same state as LeanDojo prints it and with a "1 goal" header and trailing blanks.
    state = "n : ℕ\n⊢ n + 0 = n"
    assert progress_text("1 goal\nn : ℕ  \n⊢ n + 0 = n\n") == progress_text(state)


def test_training_and_prediction_use_the_same_text(tiny, real_states):
    """The trainer's inputs are progress_text(...); predict() on the same goal/prefix/tactic gives
    exactly the model's output on that text."""
    import torch

    from lean_dojo_v2.lean_progress import ProgressExample
    from lean_dojo_v2.trainer.progress_trainer import model_inputs

    rows = [ProgressExample(s, "rfl", t, 2) for s, t in real_states[:3]]
    texts, labels = model_inputs(rows, "both")
    assert texts == [
        text
        for r in rows
        for text in (progress_text(r.goal, r.prefix, r.tactic), progress_text(r.goal, r.prefix))
    ]
    assert labels == [2.0] * 6
    enc = tiny.tokenizer(
        texts, truncation=True, max_length=tiny.max_length, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        direct = tiny.model(**enc).logits[:, 0].tolist()
    with_tactic = tiny.predict(
        [r.goal for r in rows], [r.tactic for r in rows], [r.prefix for r in rows]
    )
    without = tiny.predict([r.goal for r in rows], prefixes=[r.prefix for r in rows])
    got = [v for pair in zip(with_tactic, without, strict=True) for v in pair]
    assert got == pytest.approx([max(0.0, d) for d in direct], abs=1e-5)


def test_predict_batched_equals_one_at_a_time(tiny, real_states):
    goals = [s for s, _ in real_states]
    tactics = [t for _, t in real_states]
    tiny.batch_size = 5
    batched = tiny.predict(goals, tactics)
    single = [tiny.predict(g, t) for g, t in zip(goals, tactics, strict=True)]
    assert isinstance(batched, list) and len(batched) == len(goals)
    assert all(isinstance(v, float) and v >= 0 for v in batched)
    assert batched == pytest.approx(single, abs=1e-5)
    assert isinstance(tiny.predict(goals[0]), float)


def test_predictions_are_clamped_at_zero(tiny_progress_dir, real_states):
    import torch

    model = ProgressModel.load(tiny_progress_dir, device="cpu")
    with torch.no_grad():
        model.model.classifier.bias.fill_(-100.0)
    assert model.predict([s for s, _ in real_states[:4]]) == [0.0] * 4


def test_finished_state_predicts_zero(tiny_progress_dir, real_states):
    import torch

    model = ProgressModel.load(tiny_progress_dir, device="cpu")
    with torch.no_grad():
        model.model.classifier.bias.fill_(100.0)
    out = model.predict(["no goals", real_states[0][0], "🎉 no goals"])
    assert out[0] == 0.0 and out[2] == 0.0 and out[1] > 50


def test_predict_argument_errors(tiny, real_states):
    goals = [s for s, _ in real_states[:2]]
    with pytest.raises(ModelError, match="3 entries for 2 goals"):
        tiny.predict(goals, ["a", "b", "c"])
    with pytest.raises(ModelError, match="one string for 2 goals"):
        tiny.predict(goals, prefixes="simp")
    with pytest.raises(ModelError, match="must be text"):
        tiny.predict(goals, [1, 2])


def test_load_uses_env_and_reports_unset(monkeypatch, tiny_progress_dir):
    monkeypatch.delenv(ENV_MODEL, raising=False)
    with pytest.raises(ModelError, match=ENV_MODEL):
        ProgressModel.load()
    assert load_progress_model() is None
    monkeypatch.setenv(ENV_MODEL, str(tiny_progress_dir))
    model = load_progress_model(device="cpu")
    assert isinstance(model, ProgressModel) and model.path == str(tiny_progress_dir.resolve())
    assert isinstance(ProgressModel.load(device="cpu"), ProgressModel)


def test_load_errors_name_the_problem(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        ProgressModel.load(tmp_path / "missing", device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        ProgressModel.load(tmp_path / "empty", device="cpu")
    three = build_tiny_progress_model(tmp_path / "three", num_labels=3)
    with pytest.raises(ModelError, match="3 outputs"):
        ProgressModel.load(three, device="cpu")


def test_metrics_on_hand_computed_numbers():
    preds = [2.4, 0.6, -1.0, 7.0]
    labels = [2, 2, 1, 5]
    # clamped: 2.4, 0.6, 0.0, 7.0 -> errors 0.4, -1.4, -1.0, 2.0
    # rounded: 2, 1, 0, 7 -> exact: 1 of 4; within 1: |0|, |1|, |1| yes, |2| no -> 3 of 4
    m = progress_metrics(preds, labels)
    assert m["mae"] == pytest.approx((0.4 + 1.4 + 1.0 + 2.0) / 4)
    assert m["mse"] == pytest.approx((0.16 + 1.96 + 1.0 + 4.0) / 4)
    assert m["exact"] == 0.25 and m["within_1"] == 0.75 and m["n"] == 4
    assert [round_steps(x) for x in (0.5, 1.49, 2.5, -3)] == [1, 1, 3, 0]
    with pytest.raises(ValueError):
        progress_metrics([1.0], [1, 2])


def test_base_model_none_is_minilm():
    path, note = resolve_progress_base(None)
    assert path == str(minilm_path()) and note is None
    assert resolve_progress_base("minilm")[0] == path


def test_seed_default_falls_back_to_minilm_offline(monkeypatch, caplog):
    from lean_dojo_v2.models import loading

    # As on this machine: offline, and bert-base-uncased not in the local HF cache.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_in_hub_cache", lambda repo_id: False)
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.models.progress"):
        path, note = resolve_progress_base("bert-base-uncased")
    assert path == str(minilm_path())
    assert note and "bert-base-uncased" in note and "MiniLM" in note
    assert any("bert-base-uncased" in r.getMessage() for r in caplog.records)


def test_other_unknown_model_is_an_error_not_a_fallback(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError):
        resolve_progress_base("no-such-org/no-such-model")
