"""Layer 3 (trainer): ``StopOnNonFinite``, the transformers callback that stops a run whose loss
or gradients become NaN or infinite (:mod:`.numerics` says why and how).

Imports transformers at module level: the SFT and progress trainers import it where they train,
so that ``import lean_dojo_v2.trainer`` stays light.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from .numerics import check_finite, check_finite_step


class StopOnNonFinite(TrainerCallback):
    """Raises :class:`~lean_dojo_v2.trainer.errors.NonFiniteLossError` before each optimizer step
    when a gradient is NaN or infinite (clipping does not help: a NaN norm scales every gradient
    to NaN), and at each log when the logged loss or gradient norm is (the trainer must log with
    ``logging_nan_inf_filter=False``, or transformers replaces a NaN step loss by the mean). Under
    fp16 autocast the gradient check is left to transformers' loss scaler, which skips overflowing
    steps by design; under DeepSpeed only the logged values are checked."""

    def on_pre_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: object,
    ) -> None:
        model = kwargs.get("model")
        if not isinstance(model, torch.nn.Module) or getattr(args, "fp16", False):
            return
        check_finite_step(None, model.parameters(), state.global_step + 1, lr=args.learning_rate)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: Mapping[str, float] | None = None,
        **kwargs: object,
    ) -> None:
        for key, what in (("loss", "the training loss"), ("grad_norm", "the gradient norm")):
            if key == "grad_norm" and getattr(args, "fp16", False):
                continue  # an overflow the loss scaler skipped
            value = (logs or {}).get(key)
            if isinstance(value, (int, float)):
                check_finite(float(value), what, state.global_step, lr=args.learning_rate)


__all__ = ["StopOnNonFinite"]
