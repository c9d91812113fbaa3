"""Layer 4 (external_api): micro-batching: one bounded queue and one worker per model.

A request becomes an item ``(key, payload)`` in its model's queue; the worker takes the first
item, every item already waiting (up to ``max_batch``) and, while requests are arriving
concurrently, those that come within ``window_s``; then it makes one call of the model per key
(items with equal keys, e.g. equal ``num_samples``, ``prefix`` and decoding options, share a call)
in a thread of the model's own (``concurrency`` threads), never on the event loop. A lone request does not
wait for the window: with no other request in sight the batch starts at once.

Load shedding: a full queue answers :class:`ServerOverloadedError` (503, ``Retry-After``) at
once; an item whose deadline passes while it waits is dropped before the model sees it (503),
and so is one whose client gave up. An item already handed to the model is waited for.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .errors import ServerOverloadedError


@dataclass(eq=False)
class _Item:
    key: Hashable
    payload: Any
    future: asyncio.Future
    deadline: float
    started: bool = False
    dropped: bool = False


@dataclass
class BatchStats:
    """Counters a batcher keeps (also exported by ``/metrics``)."""

    calls: int = 0
    items: int = 0
    dropped_deadline: int = 0
    rejected_full: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class Batcher:
    """The queue and worker(s) of one model.

    ``run(key, payloads) -> results`` is the blocking model call (one result per payload, in
    order). ``concurrency`` workers drain the queue (1 for a local model: one call at a time).
    ``on_batch(size)`` is told the size of every call (metrics).
    """

    def __init__(
        self,
        name: str,
        run: Callable[[Hashable, list[Any]], list[Any]],
        *,
        max_batch: int = 32,
        max_queue: int = 256,
        window_s: float = 0.002,
        timeout_s: float = 60.0,
        concurrency: int = 1,
        batchable: bool = True,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self.name = name
        self.run = run
        self.max_batch = max_batch if batchable else 1
        self.max_queue = max_queue
        self.window_s = window_s
        self.timeout_s = timeout_s
        self.concurrency = max(1, concurrency)
        self.on_batch = on_batch
        self.stats = BatchStats()
        self._queue: asyncio.Queue[_Item] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[asyncio.Task] = []
        self._busy = False  # requests were seen together lately: worth a window
        # Threads of its own: a slow upstream cannot take the threads a local model needs.
        self._threads = ThreadPoolExecutor(self.concurrency, thread_name_prefix=f"model-{name}")

    # ..................................................................... the client side

    def depth(self) -> int:
        """Requests waiting (not yet handed to the model)."""
        return self._queue.qsize() if self._queue is not None else 0

    def _start(self) -> asyncio.Queue[_Item]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._queue is None:
            # A new event loop (a test client, a restarted server): a new queue and workers.
            self._loop = loop
            self._queue = asyncio.Queue(self.max_queue)
            self._workers = [loop.create_task(self._work()) for _ in range(self.concurrency)]
        return self._queue

    async def submit(self, key: Hashable, payload: Any) -> Any:
        """The model's result for ``payload`` (waits for its batch); 503 when the queue is
        full or the deadline passes first."""
        queue = self._start()
        loop = asyncio.get_running_loop()
        item = _Item(key, payload, loop.create_future(), time.monotonic() + self.timeout_s)
        try:
            queue.put_nowait(item)
        except asyncio.QueueFull:
            self.stats.rejected_full += 1
            raise ServerOverloadedError(
                f"model {self.name!r} has {self.max_queue} requests waiting (max_queue); retry "
                "in a moment",
                retry_after=1,
            ) from None
        # The deadline: a timer, not a task per request (cheap on the hot path).
        timer = loop.call_at(loop.time() + self.timeout_s, self._expire, item)
        try:
            return await item.future  # cancelled with its client: the worker then skips it
        finally:
            timer.cancel()

    def _expire(self, item: _Item) -> None:
        if not item.started and not item.future.done():  # started: the answer is coming
            item.dropped = True
            item.future.set_exception(self._late())

    def _late(self) -> ServerOverloadedError:
        self.stats.dropped_deadline += 1
        return ServerOverloadedError(
            f"the request waited {self.timeout_s:g} s for model {self.name!r} "
            "(queue_timeout_s) and was dropped before the model saw it; retry later",
            retry_after=max(1, round(self.timeout_s / 4)),
        )

    # ..................................................................... the worker side

    def _usable(self, item: _Item, now: float) -> bool:
        if item.dropped or item.future.done():
            return False
        if now > item.deadline:
            item.dropped = True
            item.future.set_exception(self._late())
            return False
        return True

    def _drain(self, queue: asyncio.Queue[_Item], batch: list[_Item]) -> None:
        now = time.monotonic()
        while len(batch) < self.max_batch and not queue.empty():
            item = queue.get_nowait()
            if self._usable(item, now):
                batch.append(item)

    async def _work(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            first = await queue.get()
            if not self._usable(first, time.monotonic()):
                continue
            batch = [first]
            self._drain(queue, batch)
            if self.window_s > 0 and len(batch) < self.max_batch and (self._busy or len(batch) > 1):
                # Requests are arriving together: give the stragglers a moment to join.
                await asyncio.sleep(self.window_s)
                self._drain(queue, batch)
            self._busy = len(batch) > 1 or not queue.empty()
            groups: dict[Hashable, list[_Item]] = {}
            for item in batch:
                groups.setdefault(item.key, []).append(item)
            for key, items in groups.items():
                await self._call(key, items)

    async def _call(self, key: Hashable, items: list[_Item]) -> None:
        for item in items:
            item.started = True
        self.stats.calls += 1
        self.stats.items += len(items)
        if len(self.stats.batch_sizes) < 100_000:
            self.stats.batch_sizes.append(len(items))
        if self.on_batch is not None:
            self.on_batch(len(items))
        try:
            loop = asyncio.get_running_loop()
            call = functools.partial(self.run, key, [it.payload for it in items])
            results = await loop.run_in_executor(self._threads, call)
            if len(results) != len(items):
                raise RuntimeError(
                    f"model {self.name!r} returned {len(results)} results for {len(items)} inputs"
                )
        except asyncio.CancelledError:  # the server is stopping
            for item in items:
                if not item.future.done():
                    item.future.set_exception(
                        ServerOverloadedError("the server is shutting down; retry", retry_after=1)
                    )
            raise
        except Exception as exc:  # handed to every request of the batch
            for item in items:
                if not item.future.done():
                    item.future.set_exception(exc)
            return
        for item, result in zip(items, results, strict=True):
            if not item.future.done():
                item.future.set_result(result)

    async def aclose(self) -> None:
        """Stop the workers (server shutdown)."""
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            try:
                await task
            except (asyncio.CancelledError, RuntimeError):
                pass
        self._workers = []
        self._queue = None
        self._loop = None
        self._threads.shutdown(wait=False)
        self._threads = ThreadPoolExecutor(
            self.concurrency, thread_name_prefix=f"model-{self.name}"
        )
