# ruff: noqa: F811  (pytest fixtures imported from test_retrieval_fixtures)
"""A retrieval run killed after a mid-epoch checkpoint and run again resumes and
ends with the weights of an uninterrupted run (``trainer/exact_resume.py``), dropout included;
the summary says it resumed and that the resume was exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from .test_retrieval_fixtures import build_tiny_encoder, quick, sample_dir  # noqa: F401
from .test_retrieval_trainer import _Stop as Killed  # a kill, raised from inside training
from .test_retrieval_trainer import _stop_at_epoch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def dropout_encoder_dir(tmp_path_factory):
    # Dropout on: the resumed run must also continue the random stream where it stopped.
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny_bert_dropout"), dropout=0.1)


def _kill_at_step(step: int):
    import pytorch_lightning as pl

    class KillAt(pl.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if trainer.global_step == step:
                raise Killed(f"killed before step {step + 1}")

    return KillAt()


def _config(model_dir, out):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    # 40 examples / batch 8 = 5 steps an epoch; a checkpoint every 2 steps lands mid-epoch.
    return load_config(
        TrainingConfig,
        None,
        {},
        **quick(
            model_name=str(model_dir),
            output_dir=str(out),
            max_epochs=2,
            max_examples=40,
            validate=False,
            save_every_n_steps=2,
        ),
    )


def _weights(module):
    return {n: p.detach().clone() for n, p in module.state_dict().items()}


# After the checkpoint of step 2 (epoch 0) / of step 6 (epoch 1).
@pytest.mark.parametrize("kill_at", [3, pytest.param(7, marks=pytest.mark.slow)])
def test_a_retrieval_run_killed_mid_epoch_resumes_to_the_uninterrupted_weights(
    dropout_encoder_dir, sample_dir, tmp_path, kill_at
):
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    full = RetrievalTrainer(_config(dropout_encoder_dir, tmp_path / "full"))
    full_summary = full.train(data_path=sample_dir)
    assert full_summary["resumed_from"] is None and full_summary["resume_exact"] is None

    out = tmp_path / "cut"
    cut = RetrievalTrainer(_config(dropout_encoder_dir, out), callbacks=[_kill_at_step(kill_at)])
    with pytest.raises(Killed):
        cut.train(data_path=sample_dir)
    assert not json.loads((out / "training_state.json").read_text())["finished"]

    again = RetrievalTrainer(_config(dropout_encoder_dir, out))
    summary = again.train(data_path=sample_dir)
    assert summary["resumed_from"] == str(out / "checkpoints" / "pass-000" / "steps" / "last.ckpt")
    assert summary["resume_exact"] is True and summary["resume_note"] is None
    assert summary["steps"] == full_summary["steps"] == 10
    assert json.loads((out / "summary.json").read_text())["resume_exact"] is True
    got, want = _weights(again.encoder.module), _weights(full.encoder.module)
    assert got.keys() == want.keys()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=0, msg=k)


def test_skipping_sampler_skips_once_and_keeps_its_length():
    from lean_dojo_v2.trainer.exact_resume import SkippingSampler
    from lean_dojo_v2.trainer.retrieval_data import EpochSampler

    inner = EpochSampler(10, seed=3)
    s = SkippingSampler(inner)
    s.set_epoch(2)
    whole = list(s)
    s.skip(4)
    assert list(s) == whole[4:] and len(s) == 10
    assert list(s) == whole  # only the next iteration is shortened
    s.set_epoch(3)
    assert inner.epoch == 3 and list(s) != whole


def test_a_multi_process_run_says_its_resume_is_not_exact():
    from lean_dojo_v2.trainer.exact_resume import exact_possible

    assert exact_possible(1) == (True, None)
    ok, why = exact_possible(2)
    assert not ok and "DDP" in why


def test_a_premise_selector_run_killed_after_a_checkpoint_resumes(
    dropout_encoder_dir, tmp_path, monkeypatch
):
    import lean_dojo_v2.trainer.premise_selector as ps

    fixture = Path(__file__).resolve().parents[1] / "data" / "ntp_toolkit" / "mini"

    def config(out):
        return ps.PremiseSelectorConfig(
            data_dir=str(fixture),
            model=str(dropout_encoder_dir),
            output_dir=str(out),
            batch_size=4,
            lr=1e-3,
            epochs=2,
            ks=[1, 4],
            device="cpu",
            progress_bar=False,
        )

    base = ps._training_config

    def short(*args, **kwargs):  # 16 examples: 4 steps an epoch
        cfg = base(*args, **kwargs)
        cfg.max_examples = 16
        return cfg

    monkeypatch.setattr(ps, "_training_config", short)
    full = ps.train_premise_selector(config(tmp_path / "full"))
    assert full.train_summary["resumed_from"] is None

    made = ps._selector_trainer

    def killed(*args, **kwargs):
        trainer = made(*args, **kwargs)
        trainer.callbacks = [_stop_at_epoch(1)]
        return trainer

    out = tmp_path / "cut"
    monkeypatch.setattr(ps, "_selector_trainer", killed)
    with pytest.raises(Killed):
        ps.train_premise_selector(config(out))
    assert not out.exists()  # nothing half-written where the output goes
    monkeypatch.setattr(ps, "_selector_trainer", made)

    again = ps.train_premise_selector(config(out))
    summary = json.loads((out / "summary.json").read_text())
    resumed = summary["train"]["resumed_from"]
    assert resumed == str(out / "training" / "checkpoints" / "pass-000" / "last.ckpt")
    assert summary["train"]["resume_exact"] is True
    assert again.train_summary["steps"] == full.train_summary["steps"]
    assert again.metrics == full.metrics  # same weights, same retrievals
    assert not any(p.name.startswith(".cut.") for p in tmp_path.iterdir())
