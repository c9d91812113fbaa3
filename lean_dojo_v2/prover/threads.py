"""Layer 3 (prover): the thread plumbing of proof search.

- :func:`run_sync`: run a coroutine from blocking code, also inside a running event loop;
- :class:`DaemonPool` and :func:`in_daemon_thread`: daemon worker threads for blocking model
  calls (generator, progress model), so an abandoned call never holds a search past its limit;
- :func:`timed_call`: a blocking call, timed, optionally in such a thread with a time limit;
  :func:`abandoned`: inside such a call, whether its caller stopped waiting (a call that sends
  request after request, such as a server's samples, stops there instead of going on unseen).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from blocking code, also where an event loop is already
    running in this thread (Jupyter): then it runs on a fresh loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="lean-dojo-v2-search", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class DaemonPool:
    """Daemon worker threads for blocking generator / progress-model calls.

    Not the loop's default executor: ``asyncio.run`` waits for that one at exit, so a generator
    call abandoned at the deadline would hold the search past its wall-clock limit. Threads are
    kept for the next call (a hop costs tens of microseconds, a new thread more); a new one is
    started only when every thread is busy (e.g. with an abandoned call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._idle = 0

    def submit(self, func: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._tasks.put((func, future))
        if spawn:
            threading.Thread(
                target=self._work, name="lean-dojo-v2-search-worker", daemon=True
            ).start()
        return future

    def _work(self) -> None:
        while True:
            func, future = self._tasks.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(func())
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1


# One pool per process: threads are started lazily, on the first submit.
_POOL = DaemonPool()


def in_daemon_thread(func: Callable[[], T]) -> asyncio.Future[T]:
    """Run ``func()`` in a daemon worker thread (:class:`DaemonPool`); an asyncio future."""
    return asyncio.wrap_future(_POOL.submit(func))


async def timed_call(
    func: Callable[..., T], *args: object, in_thread: bool, timeout: float
) -> tuple[T, float]:
    """``func(*args)`` (blocking) and its own run time; in a worker thread when ``in_thread``,
    then abandoned (TimeoutError) after ``timeout`` seconds."""

    gave_up = threading.Event()

    def call() -> tuple[T, float]:
        _current.abandoned = gave_up
        try:
            t = time.perf_counter()
            value = func(*args)
            return value, time.perf_counter() - t
        finally:
            _current.abandoned = None  # the pool's thread goes on to other calls

    if not in_thread:
        return call()
    future = in_daemon_thread(call)
    done, _ = await asyncio.wait({future}, timeout=max(timeout, 0.0))
    if not done:
        gave_up.set()
        future.add_done_callback(_discard_result)
        raise TimeoutError
    return future.result()


class CallAbandoned(TimeoutError):
    """Raised by a call that stopped because its caller had stopped waiting for it
    (:func:`abandoned`); nobody reads it."""


_current = threading.local()


def abandoned() -> threading.Event:
    """The signal of the :func:`timed_call` this thread is running: set once the caller gave up
    waiting for it (its time limit passed). A call that loops over requests checks it before
    each one and stops (:class:`CallAbandoned`): a search that ran out of time sends nothing
    more. Outside such a call, an event that is never set."""
    event = getattr(_current, "abandoned", None)
    return event if isinstance(event, threading.Event) else threading.Event()


def _discard_result(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # retrieve it so asyncio does not log "never retrieved"


__all__ = [
    "CallAbandoned",
    "DaemonPool",
    "abandoned",
    "in_daemon_thread",
    "run_sync",
    "timed_call",
]
