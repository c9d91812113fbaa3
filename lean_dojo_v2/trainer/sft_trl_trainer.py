"""Layer 3 (trainer): ``LeanSFTTrainer``, TRL's ``SFTTrainer`` whose fused LM head scores only
the positions that carry a label, on every device.

TRL's SFT computes the loss with a fused LM head (``trl.trainer.utils.add_fused_lm_head``): the
per-token log-probabilities in tiles, without the ``(batch, length, vocabulary)`` logits. Where
Triton runs (CUDA, XPU) it projects only the positions whose label is not ``-100``; on any other
device it projects every position, so that a compiler for fixed shapes (Neuron) sees one tile
shape per batch. On a CPU nothing is compiled, and our rows are a prompt (the goal state, scored
by nobody: ``completion_only_loss``) followed by a short tactic: the quickstart's rows are 70-155
tokens of which about 10 are labelled, so the head (SmolLM2: 49,152 × 576) ran on ten times the
positions it needed, about a quarter of a training step.

:class:`LeanSFTTrainer` asks TRL's head for the labelled positions alone while it computes a loss on
a CPU (:func:`labelled_positions_only`). TRL's two paths give the same log-probabilities (the rows
of a matrix product do not depend on each other; the unlabelled positions are zeros either way),
so the loss and the gradients are the ones TRL computes, up to float32 rounding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import trl
from trl.trainer import utils as trl_utils

_HOOK = "_use_triton"  # TRL's "compact the positions?" (trl/trainer/utils.py, TRL 1.16)
_lock = threading.Lock()
_depth = 0
_original: Callable[[torch.device], bool] | None = None


@contextmanager
def labelled_positions_only() -> Iterator[None]:
    """While inside, TRL's fused LM head projects only the labelled positions on a CPU too.

    It answers TRL's question "compact the positions?" (``trl.trainer.utils._use_triton``, read
    on each forward) with yes for a CPU tensor; other devices keep TRL's own answer. Nested and
    concurrent uses share one swap, undone when the last one leaves; a TRL without that hook
    is left as it is (its own, slower, path)."""
    global _depth, _original
    if not callable(getattr(trl_utils, _HOOK, None)):
        yield
        return
    with _lock:
        if _depth == 0:
            _original = getattr(trl_utils, _HOOK)
            setattr(trl_utils, _HOOK, _compact_on_cpu(_original))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                setattr(trl_utils, _HOOK, _original)
                _original = None


def _compact_on_cpu(original: Callable[[torch.device], bool]) -> Callable[[torch.device], bool]:
    def compact(device: torch.device) -> bool:
        return device.type == "cpu" or original(device)

    return compact


class LeanSFTTrainer(trl.SFTTrainer):
    """``trl.SFTTrainer`` computing each loss with :func:`labelled_positions_only`."""

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> Any:
        with labelled_positions_only():
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )


__all__ = ["LeanSFTTrainer", "labelled_positions_only"]
