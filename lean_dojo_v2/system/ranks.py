"""Layer 0 (system): this process's place in a run of several processes started by a launcher
(``accelerate launch``, ``torchrun``, ``srun`` through them), read from the variables they set:
``RANK``/``LOCAL_RANK``, ``WORLD_SIZE``. One process alone is rank 0 of 1; nothing here starts a
process group (the trainers' frameworks do) or imports torch before it is needed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TypeVar

from ..errors import LeanDojoError

T = TypeVar("T")


def is_main_process() -> bool:
    """True on rank 0 of a distributed run (and in a plain one). Without ``RANK`` (Lightning's
    own launcher sets ``NODE_RANK`` and ``LOCAL_RANK`` only): local rank 0 of node 0."""
    if os.environ.get("RANK"):
        return int(os.environ["RANK"]) == 0
    return all(int(os.environ.get(k, "0") or 0) == 0 for k in ("NODE_RANK", "LOCAL_RANK"))


def world_size() -> int:
    """The number of processes of the run (``accelerate launch`` / ``torchrun`` set WORLD_SIZE)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1") or 1))
    except ValueError:
        return 1


def wait_for_everyone() -> None:
    """A barrier across the processes of an ``accelerate``/``torchrun`` run (nothing alone)."""
    if world_size() > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def from_main_process(value: T) -> T:
    """Rank 0's ``value`` on every process of the run (``value`` itself alone); the process
    group must be up (the trainers' config starts it)."""
    if world_size() == 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def summed_over_processes(counts: Mapping[str, object]) -> dict[str, object]:
    """``counts`` with each number summed over the run's processes (each counts its own share;
    other values are this process's); ``counts`` itself alone. Every process must call it."""
    if world_size() == 1:
        return dict(counts)
    import torch.distributed as dist

    every: list[Mapping[str, object] | None] = [None] * world_size()
    dist.all_gather_object(every, dict(counts))
    summed = dict(counts)
    for key, value in counts.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            shares = [c.get(key) for c in every if c is not None]
            summed[key] = sum(x for x in shares if isinstance(x, int | float))
    return summed


def on_main_process(work: Callable[[], T]) -> T | None:
    """Run ``work`` on rank 0 alone and tell every process how it ended: its value on rank 0
    (None elsewhere); an exception it raised is raised on every process (on the others, rebuilt
    from its class and message, or a :class:`LeanDojoError` with the message where the class
    takes other arguments), so that no process waits for a rank 0 that has given up."""
    value: T | None = None
    error: Exception | None = None
    if is_main_process():
        try:
            value = work()
        except Exception as exc:
            error = exc
    failed = from_main_process(None if error is None else (type(error), str(error)))
    if error is not None:
        raise error
    if failed is not None:
        try:
            rebuilt = failed[0](failed[1])
        except Exception:
            rebuilt = LeanDojoError(failed[1])
        raise rebuilt
    return value


__all__ = [
    "from_main_process",
    "is_main_process",
    "on_main_process",
    "wait_for_everyone",
    "world_size",
]
