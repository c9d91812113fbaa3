"""``RetrievalModule`` at module level, ``RetrievalTrainer.from_config`` and ``RetrievalResult``
(no training here: ``test_retrieval_trainer.py`` trains)."""

from __future__ import annotations

import pickle


def test_retrieval_module_is_an_ordinary_module_level_class():
    import pytorch_lightning as pl

    from lean_dojo_v2.trainer.retrieval_module import RetrievalModule
    from lean_dojo_v2.trainer.retrieval_trainer import retrieval_module_class

    assert retrieval_module_class() is RetrievalModule
    assert issubclass(RetrievalModule, pl.LightningModule)
    # Module level: found by its name, so it pickles (a class built in a function does not).
    assert RetrievalModule.__qualname__ == "RetrievalModule"
    assert pickle.loads(pickle.dumps(RetrievalModule)) is RetrievalModule


def test_from_config_is_the_seed_constructor_with_that_config(tmp_path):
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    cfg = TrainingConfig(output_dir=str(tmp_path / "out"), lambda_value=0.5)
    marker = object()
    trainer = RetrievalTrainer.from_config(cfg, callbacks=[marker])
    assert trainer.config is cfg and trainer.callbacks == [marker]
    assert (
        RetrievalTrainer().config == TrainingConfig()
    )  # upstream LeanDojo-v2's RetrievalTrainer(config=None)


def test_retrieval_result_keeps_the_keys_and_order_of_the_old_summary_dict_then_new_ones():
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalResult

    r = RetrievalResult(
        passes=[{"label": "a", "steps": 2}],
        steps=2,
        examples=10,
        seconds=1.5,
        output_dir="out",
        encoder_dir="out/encoder",
        val={"R@10_val": 0.5},
        ewc_tasks=1,
        resumed_from=None,
        run_id=3,
    )
    assert list(r.to_dict()) == [
        "passes",
        "steps",
        "examples",
        "seconds",
        "output_dir",
        "encoder_dir",
        "val",
        "ewc_tasks",
        "resumed_from",
        "run_id",
        # added after the refactoring, at the end so the old keys keep their order
        "resume_exact",
        "resume_note",
    ]
    assert r["encoder_dir"] == "out/encoder" and r["val"]["R@10_val"] == 0.5


def test_validation_without_a_corpus_is_a_typed_error_that_says_what_to_pass():
    import types

    import pytest
    import torch

    from lean_dojo_v2.errors import TrainerError
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_module import RetrievalModule

    encoder = types.SimpleNamespace(module=torch.nn.Linear(2, 2))
    module = RetrievalModule(encoder, TrainingConfig())
    with pytest.raises(TrainerError, match="corpus="):
        module.on_validation_epoch_start()
