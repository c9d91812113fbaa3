"""Layer 3 (trainer): the numerics every trainer shares: which precision a model trains in (never
half-precision weights in the optimizer: at small learning rates bf16 rounds most updates away),
and the stop on a loss or gradient that is no longer finite, before the optimizer applies it
(:class:`~lean_dojo_v2.trainer.errors.NonFiniteLossError`). ``docs/training.md`` ("Precision",
"When the loss becomes NaN or infinite") has the measurements and the rules per trainer. No torch
at module level.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import NonFiniteLossError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

HALF_DTYPES = ("bfloat16", "float16")


@dataclass(frozen=True)
class TrainingPrecision:
    """How a model trains: ``load_dtype`` is the dtype its weights are loaded in (what the
    optimizer updates, for full fine-tuning), ``autocast`` the dtype of the forward and backward
    passes under autocast (``"bf16"``, ``"fp16"``) or None (none), ``adapter_float32`` whether the
    trainable (LoRA) parameters are to be cast to float32 after the model is wrapped."""

    load_dtype: str
    autocast: str | None
    adapter_float32: bool


def training_precision(
    dtype: str,
    device: str,
    *,
    full: bool,
    bf16: bool | None = None,
    deepspeed: bool = False,
) -> TrainingPrecision:
    """The precision of a transformers/TRL run on ``device`` (``"cpu"``, ``"cuda:0"``).

    ``dtype``: the config's (``auto`` is bf16 on a CUDA device that supports it, else float32).
    ``full``: every weight trains (else a LoRA adapter). ``bf16``: the config's switch (None:
    on where ``dtype`` resolves to bf16 or the device is a bf16 GPU). With ``deepspeed`` the
    model loads in ``dtype`` as asked: DeepSpeed's bf16 mode keeps its own float32 master copy.
    """
    from ..models.loading import resolve_dtype

    resolved = str(resolve_dtype(dtype, device)).removeprefix("torch.")
    on_cuda = device.startswith("cuda")
    if bf16 is None:
        import torch

        bf16 = resolved == "bfloat16" or bool(on_cuda and torch.cuda.is_bf16_supported())
    autocast: str | None = "bf16" if bf16 else None
    if resolved == "float16" and not bf16:
        if on_cuda:
            autocast = "fp16"  # with transformers' loss scaler, as fp16 needs
        else:
            log.warning(
                "dtype float16 on the CPU: training in float32 (fp16 autocast needs a GPU; "
                "use dtype bfloat16 for mixed precision on the CPU)"
            )
    if deepspeed:
        return TrainingPrecision(resolved, autocast, adapter_float32=False)
    if full and resolved in HALF_DTYPES:
        # Weights the optimizer updates stay float32; the half dtype is autocast's.
        return TrainingPrecision("float32", autocast, adapter_float32=False)
    return TrainingPrecision(resolved, autocast, adapter_float32=not full)


def upcast_trainable(model: torch.nn.Module) -> int:
    """Cast every trainable parameter held in bf16/fp16 to float32 (a LoRA adapter on a bf16
    base: PEFT does so by default, this makes it hold on every path, resume included); returns
    how many were cast."""
    import torch

    cast = 0
    for p in model.parameters():
        if p.requires_grad and p.dtype in (torch.bfloat16, torch.float16):
            p.data = p.data.float()
            cast += 1
    return cast


# --------------------------------------------------------------------------- non-finite stops


def _hint(lr: float | None) -> str:
    at = f" (lr={lr:g})" if lr is not None else ""
    return (
        f"the run stops here and saves no model{at}; lower the learning rate, or check the data "
        "and the precision (fp16 overflows where bf16 does not)"
    )


def check_finite(value: float, what: str, step: int, *, lr: float | None = None) -> None:
    """Raise :class:`NonFiniteLossError` when ``value`` (the ``what`` of optimizer step
    ``step``) is NaN or infinite."""
    if not math.isfinite(value):
        raise NonFiniteLossError(f"{what} is {value} at step {step}: {_hint(lr)}")


def grad_norm(parameters: Iterable[torch.Tensor]) -> float | None:
    """The global L2 norm of the gradients of ``parameters`` (None when none has one, e.g.
    under DeepSpeed, which keeps its own); NaN or inf when any gradient is."""
    import torch

    grads = [g.detach() for p in parameters if (g := getattr(p, "grad", None)) is not None]
    # torch's norm of per-tensor norms, gathered across devices (model-parallel parameters).
    return float(torch.nn.utils.get_total_norm(grads, 2.0)) if grads else None


def check_finite_step(
    loss: float | None,
    parameters: Iterable[torch.Tensor] | None,
    step: int,
    *,
    lr: float | None = None,
) -> None:
    """Before optimizer step ``step``: the loss (when given) and the gradients of ``parameters``
    (when given) must be finite, else :class:`NonFiniteLossError`."""
    if loss is not None:
        check_finite(float(loss), "the training loss", step, lr=lr)
    if parameters is not None:
        norm = grad_norm(parameters)
        if norm is not None:
            check_finite(norm, "the gradient norm", step, lr=lr)


def check_finite_weights(module: torch.nn.Module, where: str) -> None:
    """Raise :class:`NonFiniteLossError` when a weight of ``module`` is NaN or infinite (the
    last guard before ``where``, a save, is written)."""
    import torch

    for name, p in module.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p.detach()).all()):
            raise NonFiniteLossError(
                f"weight {name} holds NaN or infinite values after training: not saving it to "
                f"{where}; {_hint(None)}"
            )


__all__ = [
    "TrainingPrecision",
    "check_finite",
    "check_finite_step",
    "check_finite_weights",
    "grad_norm",
    "training_precision",
    "upcast_trainable",
]
