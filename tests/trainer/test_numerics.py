"""Precision and non-finite stops of the SFT trainer, on the CPU
with the tiny random Llama: full fine-tuning asked for in bf16 keeps float32 master weights and
its updates at upstream LeanDojo-v2's learning rate; LoRA trains a float32 adapter on a bf16 base; a loss or
gradient that becomes NaN/inf stops the run with ``NonFiniteLossError`` and saves no model."""

from __future__ import annotations

import math

import pytest

from lean_dojo_v2.trainer.errors import NonFiniteLossError, TrainerError
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

from .conftest import fast_settings

# Upstream LeanDojo-v2's learning rate: at 2e-5 most Adam steps are smaller than half a bf16
# rounding step of the weights, so weights held in bf16 lose them.
UPSTREAM_LR = 2e-5


def _watch(seen: dict):
    from transformers import TrainerCallback

    class Watch(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            seen["before"] = {n: p.detach().clone() for n, p in model.named_parameters()}

        def on_train_end(self, args, state, control, model=None, **kwargs):
            changed = total = 0
            for n, p in model.named_parameters():
                if n in seen["before"] and p.requires_grad:
                    changed += int((p.detach() != seen["before"][n]).sum())
                    total += p.numel()
            seen["fraction"] = changed / total
            seen["trainable_dtypes"] = {p.dtype for p in model.parameters() if p.requires_grad}
            seen["frozen_dtypes"] = {p.dtype for p in model.parameters() if not p.requires_grad}
            seen["bf16"] = args.bf16

    return Watch()


def _run(model_dir, data, out, **values):
    seen: dict = {}
    settings = fast_settings(lr=UPSTREAM_LR, max_steps=5, max_examples=16, seed=0)
    settings.update(values)
    trainer = SFTTrainer(str(model_dir), output_dir=out, callbacks=[_watch(seen)], **settings)
    return trainer, trainer.train(data_path=data), seen


def test_full_sft_in_bf16_keeps_float32_master_weights_and_its_updates(
    tiny_model_dir, sample_path, tmp_path
):
    import torch
    from safetensors.torch import load_file

    _, _, fp32 = _run(tiny_model_dir, sample_path, tmp_path / "fp32", dtype="float32")
    trainer, result, bf16 = _run(tiny_model_dir, sample_path, tmp_path / "bf16", dtype="bfloat16")
    assert result.steps == 5 and math.isfinite(result.last_loss)
    # Before: the model was loaded and trained in bf16 (25% of the weights moved vs 86% in fp32).
    assert fp32["fraction"] > 0.5, fp32
    assert bf16["fraction"] >= 0.9 * fp32["fraction"], (bf16["fraction"], fp32["fraction"])
    assert bf16["trainable_dtypes"] == {torch.float32}
    assert bf16["bf16"] is True  # bf16 is autocast's, not the weights'
    # What is saved is the float32 master weights (docs/training.md, "Precision").
    saved = load_file(str(tmp_path / "bf16" / "model.safetensors"))
    assert {t.dtype for t in saved.values()} == {torch.float32}


def test_lora_on_a_bf16_base_trains_a_float32_adapter(tiny_model_dir, sample_path, tmp_path):
    import torch

    _, result, seen = _run(
        tiny_model_dir,
        sample_path,
        tmp_path / "lora",
        dtype="bfloat16",
        lora=True,
        lr=1e-3,
        max_steps=2,
    )
    assert result.steps == 2
    assert seen["trainable_dtypes"] == {torch.float32}
    assert seen["frozen_dtypes"] == {torch.bfloat16}  # the base may stay in bf16: it is frozen
    assert seen["fraction"] > 0.5


def test_training_precision_rules():
    from lean_dojo_v2.trainer.numerics import training_precision

    full = training_precision("bfloat16", "cpu", full=True)
    assert (full.load_dtype, full.autocast, full.adapter_float32) == ("float32", "bf16", False)
    lora = training_precision("bfloat16", "cpu", full=False)
    assert (lora.load_dtype, lora.autocast, lora.adapter_float32) == ("bfloat16", "bf16", True)
    # DeepSpeed keeps its own float32 master copy: the model loads as asked.
    ds = training_precision("bfloat16", "cpu", full=True, deepspeed=True)
    assert ds.load_dtype == "bfloat16" and ds.autocast == "bf16"
    plain = training_precision("auto", "cpu", full=True)
    assert (plain.load_dtype, plain.autocast) == ("float32", None)
    off = training_precision("bfloat16", "cpu", full=True, bf16=False)
    assert (off.load_dtype, off.autocast) == ("float32", None)


# --------------------------------------------------------------------------- non-finite stops


def test_sft_with_an_absurd_lr_stops_with_a_typed_error_and_saves_no_model(
    tiny_model_dir, sample_path, tmp_path
):
    out = tmp_path / "out"
    with pytest.raises(NonFiniteLossError, match=r"at step \d+") as info:
        SFTTrainer(
            str(tiny_model_dir), output_dir=out, **fast_settings(lr=1e30, max_steps=6)
        ).train(data_path=sample_path)
    assert isinstance(info.value, TrainerError)
    assert "lr=1e+30" in str(info.value) and "\n" not in str(info.value)
    assert not (out / "model.safetensors").exists()


def test_sft_nan_loss_is_caught_even_when_logged_rarely(tiny_model_dir, sample_path, tmp_path):
    # A forced NaN in the forward pass: the gradients are NaN before the first optimizer step.
    import torch
    from transformers import TrainerCallback

    class Poison(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            model.get_input_embeddings().register_forward_hook(
                lambda mod, inp, output: output * torch.tensor(float("nan"))
            )

    out = tmp_path / "out"
    trainer = SFTTrainer(
        str(tiny_model_dir),
        output_dir=out,
        callbacks=[Poison()],
        **fast_settings(max_steps=3, logging_steps=100),
    )
    with pytest.raises(NonFiniteLossError, match="gradient norm is nan at step 1"):
        trainer.train(data_path=sample_path)
    assert not (out / "model.safetensors").exists()


def test_check_finite_weights_names_the_weight(tmp_path):
    import torch

    from lean_dojo_v2.trainer.numerics import check_finite_weights

    layer = torch.nn.Linear(2, 2)
    check_finite_weights(layer, str(tmp_path))
    with torch.no_grad():
        layer.bias[0] = float("inf")
    with pytest.raises(NonFiniteLossError, match="weight bias"):
        check_finite_weights(layer, str(tmp_path / "out"))
