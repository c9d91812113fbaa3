"""Layer 4 (external_api): micro-batching: one bounded queue and its model threads per model.

A request becomes an item ``(key, payload)`` in its model's queue. When a model thread is free,
the first waiting item is taken with every other one already waiting that has the same key (up
to ``max_batch``; equal keys mean equal ``num_samples``, ``prefix`` and decoding options) and,
while requests are arriving concurrently, those that come within ``window_s``; the batch is one
call of the model, made in a long-lived thread of the model's own (``concurrency`` of them),
never on the event loop. A lone request does not wait for the window: with no other request in
sight it is handed to the thread at once, by the request itself (no scheduler task between).

Load shedding: a full queue answers :class:`ServerOverloadedError` (503, ``Retry-After``) at
once; an item whose deadline passes while it waits is dropped before the model sees it (503),
and so is one whose client gave up. An item already handed to the model is waited for.

The hot path is kept short on purpose (a lone request costs one hand-off to the model thread
and one wake-up of the event loop): no task per request or per batch, no timer per request (one
timer per model, for the oldest waiting item's deadline), no ``concurrent.futures`` machinery.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from .errors import ServerOverloadedError

_get_running_loop = asyncio.get_running_loop

ModelCall = Callable[[Hashable, list[object]], Sequence[object]]
"""``run(key, payloads) -> results``: the blocking model call of a batch (see :class:`Batcher`)."""


class _Item:
    __slots__ = ("key", "payload", "future", "deadline", "started", "dropped")

    def __init__(
        self, key: Hashable, payload: object, future: asyncio.Future[object], deadline: float
    ) -> None:
        self.key = key
        self.payload = payload
        self.future = future
        self.deadline = deadline  # in the event loop's clock (``loop.time()``)
        self.started = False
        self.dropped = False


_Job = tuple[int, asyncio.AbstractEventLoop, Hashable, list[object], list[_Item]]
"""What a model thread is handed: the epoch, the loop to answer on, the key, the payloads and
their items."""


@dataclass
class BatchStats:
    """Counters a batcher keeps (also exported by ``/metrics``)."""

    calls: int = 0
    items: int = 0
    dropped_deadline: int = 0
    rejected_full: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class Batcher:
    """The queue and model thread(s) of one model.

    ``run(key, payloads) -> results`` is the blocking model call (one result per payload, in
    order; a result that is an exception is raised to its request alone, so a model can refuse
    one input, such as a prompt over its context, without failing the rest of the batch). At most ``concurrency`` calls run at once (1 for a local model: one call at a time),
    each in a thread of this batcher's. ``on_batch(size)`` is told the size of every call
    (metrics). Everything but the model call runs on the event loop.
    """

    def __init__(
        self,
        name: str,
        run: ModelCall,
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
        self.max_batch = max(1, max_batch if batchable else 1)
        self.max_queue = max_queue if max_queue > 0 else sys.maxsize  # as asyncio.Queue(0)
        self.window_s = window_s
        self.timeout_s = timeout_s
        self.concurrency = max(1, concurrency)
        self.on_batch = on_batch
        self.stats = BatchStats()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: deque[_Item] = deque()
        """Items waiting, oldest first (so deadlines ascend)."""
        self._running: dict[int, list[_Item]] = {}
        """Batches handed to the threads and not answered yet (by ``id``)."""
        self._slots = 0  # calls in flight, or reserved by a batching window
        self._window: asyncio.TimerHandle | None = None
        self._sweeper: asyncio.TimerHandle | None = None
        self._busy = False  # requests were seen together lately: worth a window
        self._epoch = 0  # bumped by a reset: answers of an older epoch free no slot
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    # ..................................................................... the client side

    def depth(self) -> int:
        """Requests waiting (not yet handed to the model)."""
        return len(self._pending)

    async def submit(self, key: Hashable, payload: object) -> object:
        """The model's result for ``payload`` (waits for its batch); 503 when the queue is
        full or the deadline passes first."""
        loop = _get_running_loop()
        if loop is not self._loop:
            self._bind(loop)
        pending = self._pending
        if len(pending) >= self.max_queue and not self._prune():
            self.stats.rejected_full += 1
            raise ServerOverloadedError(
                f"model {self.name!r} has {self.max_queue} requests waiting (max_queue); retry "
                "in a moment",
                retry_after=1,
            )
        future = loop.create_future()
        pending.append(_Item(key, payload, future, loop.time() + self.timeout_s))
        if self._slots < self.concurrency and self._window is None:
            self._kick()
        if pending and self._sweeper is None:
            self._arm_sweeper()
        # Cancelled with its client: the item is skipped when its batch is formed.
        return await future

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new event loop (the first request, a test client, a restarted server): start
        afresh. Whatever waited on the old loop is left to it."""
        self._reset()
        self._loop = loop

    def _prune(self) -> bool:
        """Forget waiting items whose client went away; whether there is room now."""
        live = [item for item in self._pending if not item.future.done()]
        self._pending.clear()
        self._pending.extend(live)
        return len(live) < self.max_queue

    def _arm_sweeper(self) -> None:
        loop = self._loop
        assert loop is not None
        self._sweeper = loop.call_at(self._pending[0].deadline, self._sweep)

    def _sweep(self) -> None:
        """Drop the waiting items past their deadline (the oldest first)."""
        self._sweeper = None
        loop = self._loop
        if loop is None:
            return
        now = loop.time()
        pending = self._pending
        while pending and (pending[0].deadline <= now or pending[0].future.done()):
            item = pending.popleft()
            if not item.future.done():
                item.dropped = True
                item.future.set_exception(self._late())
        if pending:
            self._arm_sweeper()

    def _late(self) -> ServerOverloadedError:
        self.stats.dropped_deadline += 1
        return ServerOverloadedError(
            f"the request waited {self.timeout_s:g} s for model {self.name!r} "
            "(queue_timeout_s) and was dropped before the model saw it; retry later",
            retry_after=max(1, round(self.timeout_s / 4)),
        )

    # ..................................................................... the batch side

    def _kick(self) -> None:
        """Start batches while items wait and threads are free: at once, or after the window
        when requests are arriving together (so the stragglers join)."""
        pending = self._pending
        while pending and self._slots < self.concurrency and self._window is None:
            self._slots += 1
            if (
                self.window_s > 0
                and len(pending) < self.max_batch
                and (self._busy or len(pending) > 1)
            ):
                loop = self._loop
                assert loop is not None
                self._window = loop.call_later(self.window_s, self._after_window)
            elif not self._start_batch():
                self._slots -= 1

    def _after_window(self) -> None:
        self._window = None
        if not self._start_batch():
            self._slots -= 1
        self._kick()  # what is left, while threads are free (``concurrency`` > 1)

    def _start_batch(self) -> bool:
        """Take a batch from the queue and hand it to a model thread (its slot is reserved);
        False when nothing usable waits."""
        loop = self._loop
        assert loop is not None
        pending = self._pending
        now = loop.time()
        first = None
        while pending:
            item = pending.popleft()
            if self._usable(item, now):
                first = item
                break
        if first is None:
            return False
        batch = [first]
        if pending and self.max_batch > 1:
            key = first.key
            others: list[_Item] = []
            while pending and len(batch) < self.max_batch:
                item = pending.popleft()
                if not self._usable(item, now):
                    continue
                if item.key == key:
                    batch.append(item)
                else:
                    others.append(item)
            if others:  # back to the front, in their order (deadlines stay ascending)
                pending.extendleft(reversed(others))
        self._busy = len(batch) > 1 or bool(pending)
        size = len(batch)
        for item in batch:
            item.started = True
        stats = self.stats
        stats.calls += 1
        stats.items += size
        if len(stats.batch_sizes) < 100_000:
            stats.batch_sizes.append(size)
        if self.on_batch is not None:
            self.on_batch(size)
        self._running[id(batch)] = batch
        if len(self._threads) < self._slots:
            self._spawn()
        payloads = [first.payload] if size == 1 else [item.payload for item in batch]
        self._jobs.put((self._epoch, loop, first.key, payloads, batch))
        return True

    def _usable(self, item: _Item, now: float) -> bool:
        if item.future.done():  # its client went away, or it was dropped
            return False
        if now > item.deadline:
            item.dropped = True
            item.future.set_exception(self._late())
            return False
        return True

    def _spawn(self) -> None:
        thread = threading.Thread(
            target=self._serve,
            args=(self._jobs,),
            name=f"model-{self.name}-{len(self._threads)}",
            daemon=True,
        )
        thread.start()
        self._threads.append(thread)

    def _serve(self, jobs: queue.SimpleQueue[_Job | None]) -> None:
        """A model thread: make each call handed to it, hand the answer back to the loop."""
        while True:
            job = jobs.get()
            if job is None:
                return
            epoch, loop, key, payloads, batch = job
            results: Sequence[object] = ()
            error: BaseException | None = None
            try:
                results = self.run(key, payloads)
                if len(results) != len(payloads):
                    raise RuntimeError(
                        f"model {self.name!r} returned {len(results)} results for "
                        f"{len(payloads)} inputs"
                    )
            except Exception as exc:  # handed to every request of the batch
                error = exc
            except BaseException as exc:  # noqa: BLE001  (a thread must always answer)
                error = RuntimeError(f"model {self.name!r} failed: {exc!r}")
            try:
                loop.call_soon_threadsafe(self._answer, epoch, batch, results, error)
            except RuntimeError:  # that loop is closed: nobody waits for the answer
                pass
            del job, batch, results, error

    def _answer(
        self,
        epoch: int,
        batch: list[_Item],
        results: Sequence[object],
        error: BaseException | None,
    ) -> None:
        """On the loop: a call came back; answer its requests, start the next batch."""
        if epoch != self._epoch:
            return
        self._running.pop(id(batch), None)
        self._slots -= 1
        if error is None:
            for item, result in zip(batch, results, strict=True):
                if not item.future.done():
                    if isinstance(result, BaseException):
                        item.future.set_exception(result)
                    else:
                        item.future.set_result(result)
        else:
            for item in batch:
                if not item.future.done():
                    item.future.set_exception(error)
        if self._pending:
            self._kick()

    # ..................................................................... shutdown

    def _reset(self) -> None:
        """Forget the queue, timers and threads (the threads end after their current call)."""
        if self._window is not None:
            self._window.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._window = self._sweeper = None
        self._pending = deque()
        self._running = {}
        self._slots = 0
        self._busy = False
        self._epoch += 1
        for _ in self._threads:
            self._jobs.put(None)
        self._threads = []
        self._jobs = queue.SimpleQueue()
        self._loop = None

    async def aclose(self) -> None:
        """Stop (server shutdown): what waits or runs is answered 503 (shutting down)."""
        waiting = [*self._pending, *(i for batch in self._running.values() for i in batch)]
        self._reset()
        for item in waiting:
            if not item.future.done():
                item.future.set_exception(
                    ServerOverloadedError("the server is shutting down; retry", retry_after=1)
                )
