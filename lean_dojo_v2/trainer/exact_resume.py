"""Layer 3 (trainer): resume a Lightning fit mid-epoch exactly where it stopped.

Lightning restores the weights, the optimizer and its loop counters from ``last.ckpt``, but not
the position in the data: a run killed after batch *n* of an epoch restarts that epoch's data from
batch 0 and ends with other weights than an uninterrupted run. :class:`ExactResume` saves and
restores the two things missing: the batches of the epoch already trained on (a count, since
``EpochSampler`` orders each epoch by ``(seed, epoch)`` alone; :class:`SkippingSampler` drops
them), and torch's random state (dropout). Single-process runs only (:func:`exact_possible`).
Imports torch and Lightning at module level: import it only where training happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import pytorch_lightning as pl
import torch

_KEY = "lean_dojo_v2_exact_resume"

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class SizedIterable(Protocol[T_co]):
    """What a sampler is to :class:`SkippingSampler`: iterable, with a length."""

    def __iter__(self) -> Iterator[T_co]: ...
    def __len__(self) -> int: ...


class SkippingSampler(torch.utils.data.Sampler[T]):
    """``inner``, whose next iteration after :meth:`skip` leaves out its first items."""

    def __init__(self, inner: SizedIterable[T]) -> None:
        self.inner = inner
        self._skip = 0

    def set_epoch(self, epoch: int) -> None:
        # Lightning calls this at each epoch start; the order depends on it.
        if hasattr(self.inner, "set_epoch"):
            self.inner.set_epoch(epoch)

    def skip(self, items: int) -> None:
        """Leave out the first ``items`` of the next iteration (that one only)."""
        self._skip = max(0, int(items))

    def __len__(self) -> int:
        # The full length: Lightning's batch counters, restored from the checkpoint, count the
        # skipped batches as done, and the epoch ends when the shortened iteration does.
        return len(self.inner)

    def __iter__(self) -> Iterator[T]:
        skip, self._skip = self._skip, 0
        for i, item in enumerate(self.inner):
            if i >= skip:
                yield item


class ExactResume(pl.Callback):
    """Save the random state with each checkpoint; on restore, put it back and have
    ``sampler`` skip the batches of the current epoch the checkpoint had trained on."""

    def __init__(self, sampler: SkippingSampler, batch_size: int) -> None:
        self.sampler = sampler
        self.batch_size = batch_size
        self._rng: dict[str, Any] | None = None  # restored, to be put back at the next batch

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object, batch_idx: int
    ) -> None:
        state, self._rng = self._rng, None
        if state is not None:
            torch.set_rng_state(state["torch"])
            if "cuda" in state and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda"])

    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        state: dict[str, Any] = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        checkpoint[_KEY] = state

    def on_load_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        state = checkpoint.get(_KEY)
        if state is None:  # a checkpoint of an older version: resume as Lightning does
            return
        # Put back at the first batch, not now: starting the data iterator draws from torch's
        # generator, which the uninterrupted run did at the epoch's start, before the checkpoint.
        self._rng = state
        progress = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]["current"]
        batches = len(self.sampler) // self.batch_size + bool(len(self.sampler) % self.batch_size)
        done = int(progress["processed"])
        # A checkpoint at an epoch's end resumes at the next epoch's start: nothing to skip.
        if 0 < done < batches:
            self.sampler.skip(done * self.batch_size)


def exact_possible(world_size: int) -> tuple[bool, str | None]:
    """Whether a resumed run can reproduce the uninterrupted one, and if not, why."""
    if world_size > 1:
        return False, (
            "a multi-process (DDP) run resumes with fresh random states (dropout) and restarts a "
            "mid-epoch checkpoint's epoch; only an epoch-end one, without dropout, is exact"
        )
    return True, None


__all__ = ["ExactResume", "SkippingSampler", "exact_possible"]
