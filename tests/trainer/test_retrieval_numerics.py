"""RetrievalTrainer's precision and non-finite stops, on the CPU
with the tiny BERT encoder: ``bf16-mixed`` trains float32 weights under autocast even when the
encoder was saved in bf16 (never a bf16 model with a bf16 optimizer), and a loss that becomes
NaN/inf stops the run with ``NonFiniteLossError`` before an encoder is saved."""

from __future__ import annotations

import math

import pytest

from lean_dojo_v2.trainer.errors import NonFiniteLossError

from .test_retrieval_fixtures import quick, sample_dir, tiny_encoder_dir  # noqa: F401

UPSTREAM_LR = 2e-5


def _config(encoder_dir, out, **extra):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    values = quick(model_name=str(encoder_dir), output_dir=str(out), validate=False)
    values.update(extra)
    return load_config(TrainingConfig, None, {}, **values)


@pytest.fixture(scope="module")
def bf16_encoder_dir(tiny_encoder_dir, tmp_path_factory):  # noqa: F811
    """The tiny encoder saved in bf16, as many hub checkpoints are."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    dst = tmp_path_factory.mktemp("tiny_bert_bf16")
    AutoModel.from_pretrained(tiny_encoder_dir, dtype=torch.bfloat16).save_pretrained(dst)
    AutoTokenizer.from_pretrained(tiny_encoder_dir).save_pretrained(dst)
    return dst


def _changed(encoder_dir, data, out, precision):
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    trainer = RetrievalTrainer(
        _config(encoder_dir, out, precision=precision, lr=UPSTREAM_LR, max_steps=3)
    )
    before = {n: p.detach().float().clone() for n, p in trainer.encoder.module.named_parameters()}
    loaded = {p.dtype for p in trainer.encoder.module.parameters()}
    result = trainer.train(data_path=data)
    after = dict(trainer.encoder.module.named_parameters())
    changed = sum(int((after[n].detach().float() != b).sum()) for n, b in before.items())
    total = sum(b.numel() for b in before.values())
    return changed / total, loaded, {p.dtype for p in after.values()}, result


def test_bf16_mixed_trains_float32_weights_of_a_bf16_checkpoint(
    tiny_encoder_dir,  # noqa: F811
    bf16_encoder_dir,
    sample_dir,  # noqa: F811
    tmp_path,
):
    import torch

    fp32, _, _, _ = _changed(tiny_encoder_dir, sample_dir, tmp_path / "fp32", "32-true")
    bf16, loaded, trained, result = _changed(
        bf16_encoder_dir, sample_dir, tmp_path / "bf16", "bf16-mixed"
    )
    assert loaded == {torch.bfloat16}  # the checkpoint's dtype, as transformers loads it
    assert trained == {torch.float32}
    assert math.isfinite(result["passes"][0]["train_loss"])
    # Before: the bf16 weights were the optimizer's, and most updates at 2e-5 were rounded away.
    assert fp32 > 0.5, fp32
    assert bf16 >= 0.9 * fp32, (bf16, fp32)


def test_retrieval_with_an_absurd_lr_stops_with_a_typed_error_and_saves_no_encoder(
    tiny_encoder_dir,  # noqa: F811
    sample_dir,  # noqa: F811
    tmp_path,
):
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    out = tmp_path / "out"
    trainer = RetrievalTrainer(_config(tiny_encoder_dir, out, lr=1e30, max_steps=6))
    with pytest.raises(NonFiniteLossError, match=r"is (nan|inf) at step \d+"):
        trainer.train(data_path=sample_dir)
    assert not (out / "encoder").exists()


def test_retrieval_nan_loss_stops_before_the_first_optimizer_step(
    tiny_encoder_dir,  # noqa: F811
    sample_dir,  # noqa: F811
    tmp_path,
):
    import pytorch_lightning as pl
    import torch

    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    seen: dict = {}

    class Poison(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            net = pl_module.net
            seen["before"] = {n: p.detach().clone() for n, p in net.named_parameters()}
            seen["net"] = net
            net.get_input_embeddings().register_forward_hook(
                lambda mod, inp, output: output * torch.tensor(float("nan"))
            )

    out = tmp_path / "out"
    trainer = RetrievalTrainer(_config(tiny_encoder_dir, out, max_steps=3), callbacks=[Poison()])
    with pytest.raises(NonFiniteLossError, match="training loss is nan at step 1"):
        trainer.train(data_path=sample_dir)
    for n, p in seen["net"].named_parameters():  # the NaN never reached the weights
        assert torch.equal(p.detach(), seen["before"][n]), n
    assert not (out / "encoder").exists()
