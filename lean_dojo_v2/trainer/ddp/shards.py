"""Layer 3 (trainer): each process's share of a retriever run's data under DDP.

:class:`ShardSampler` deals a sampler's keys out to the processes so that a step's batches of all
processes are one batch of the sampler's order (what one process with them all would train on);
:class:`ShardData` tells it the rank once Lightning knows it. Lightning's own distributed sampler
is switched off for these loaders (it would shuffle the order again). Imports Lightning at module
level: import it only where training happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar

import pytorch_lightning as pl

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Keys(Protocol[T_co]):
    """A sampler as :class:`ShardSampler` sees it: its keys, and how many."""

    def __iter__(self) -> Iterator[T_co]: ...
    def __len__(self) -> int: ...


class ShardSampler(Generic[T]):
    """This process's share of ``inner``'s keys under data parallelism: every ``world``-th key
    from ``rank`` on, the last round filled from the start so that every process takes as many
    steps. A step's batches of all processes are then one batch of ``inner``'s order (the
    contrast :class:`~.retrieval_loss.CrossRankBatch` makes). :meth:`shard` is called once the
    rank is known (Lightning starts the other processes inside ``fit()``); until then, all keys.
    """

    def __init__(self, inner: Keys[T]) -> None:
        self.inner = inner
        self.rank, self.world = 0, 1

    def shard(self, rank: int, world: int) -> None:
        self.rank, self.world = rank, world

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.inner, "set_epoch"):
            self.inner.set_epoch(epoch)

    def __len__(self) -> int:
        return -(-len(self.inner) // self.world)

    def __iter__(self) -> Iterator[T]:
        keys = list(self.inner)
        keys += keys[: -len(keys) % self.world]
        return iter(keys[self.rank :: self.world])


class ShardData(pl.Callback):
    """Gives the samplers this process's rank and the process count once Lightning knows them."""

    def __init__(self, *samplers: ShardSampler[Any]) -> None:
        self.samplers = samplers

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        for sampler in self.samplers:
            sampler.shard(trainer.global_rank, trainer.world_size)


__all__ = ["Keys", "ShardData", "ShardSampler"]
