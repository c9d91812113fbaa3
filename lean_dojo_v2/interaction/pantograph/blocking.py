"""Layer 1 (interaction): ``PantographEnv``, the blocking :class:`ProofEnv` over a Pantograph REPL.

It runs :class:`AsyncPantographEnv` on a private event loop in a daemon thread, so it also works
where an event loop is already running (Jupyter), and its calls are safe from any thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import signal
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar, Unpack

from ...data.model import Theorem
from ..base import ProofEnv
from ..types import EnvClosedError, ProofFinished, ProofState, TacticResult, Verdict
from .async_env import BACKEND, AsyncPantographEnv
from .client import AsyncPantographClient, GoalTacticFields
from .config import PantographConfig

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")

T = TypeVar("T")


class _LoopThread:
    """A private event loop running in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()
        # Drain what is left (cancelled tasks) before closing.
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for it (a SimpleQueue hand-off: cheaper than
        ``run_coroutine_threadsafe``). An interrupt while waiting cancels the coroutine."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("blocking PantographEnv call from inside its own event loop")
        loop = self.loop
        done: queue.SimpleQueue[asyncio.Task[T]] = queue.SimpleQueue()
        holder: list[asyncio.Task[T]] = []

        def start() -> None:
            task = loop.create_task(coro)
            holder.append(task)
            task.add_done_callback(done.put)

        if loop.is_closed() or not self.thread.is_alive():
            coro.close()
            raise EnvClosedError("this environment's event loop has stopped; create a new one")
        loop.call_soon_threadsafe(start)
        try:
            while True:
                try:
                    task = done.get(timeout=1.0)
                    break
                except queue.Empty:
                    # Never wait on a loop that is gone (it would be forever).
                    if not self.thread.is_alive():
                        raise EnvClosedError(
                            "this environment's event loop stopped during the call; create a "
                            "new one"
                        ) from None
        except BaseException:
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: holder and holder[0].cancel())
            raise
        return task.result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(10)


class PantographEnv(ProofEnv):
    """Blocking :class:`ProofEnv` over a Pantograph REPL; the async core runs on a private event
    loop in a background thread (safe inside Jupyter's running loop). ``close()`` stops both."""

    backend = BACKEND

    def __init__(
        self,
        config: PantographConfig | None = None,
        *,
        env_id: str | None = None,
        **overrides: object,
    ) -> None:
        self._thread = _LoopThread("pantograph-env")
        self.aenv = AsyncPantographEnv(config, env_id=env_id, **overrides)
        self.config = self.aenv.config
        self._closed = False

    @property
    def client(self) -> AsyncPantographClient:
        """The async client (call its coroutines through :meth:`run_async`)."""
        return self.aenv.client

    @property
    def restarts(self) -> int:  # type: ignore[override]  # the contract's attribute, read-only here
        """How often the client relaunched the REPL so far."""
        return self.aenv.restarts

    def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of this environment (or its client) on the private loop."""
        if self._closed:
            coro.close()
            raise EnvClosedError("this PantographEnv is closed; create a new one")
        return self._thread.run(coro)

    def open(self) -> PantographEnv:
        self.run_async(self.aenv.open())
        return self

    def __enter__(self) -> PantographEnv:
        return self.open()

    def start(self, theorem: Theorem | str) -> ProofState:
        return self.run_async(self.aenv.start(theorem))

    def start_expr(self, expr: str, levels: list[str] | None = None) -> ProofState:
        return self.run_async(self.aenv.start_expr(expr, levels))

    def start_from_source(
        self, file_text: str, *, binder_name: str | None = None
    ) -> list[ProofState]:
        return self.run_async(self.aenv.start_from_source(file_text, binder_name=binder_name))

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return self.run_async(self.aenv.run_tactic(state, tactic, timeout))

    def run_tactic_raw(
        self, state: ProofState, timeout: float | None = None, **fields: Unpack[GoalTacticFields]
    ) -> TacticResult:
        return self.run_async(self.aenv.run_tactic_raw(state, timeout, **fields))

    def release(self, state: ProofState | ProofFinished) -> None:
        self.run_async(self.aenv.release(state))

    def goal_root(self, state: ProofState | ProofFinished) -> str | None:
        return self.run_async(self.aenv.goal_root(state))

    def verify(
        self,
        theorem: Theorem,
        proof: str,
        timeout: float | None = None,
        *,
        options: Sequence[str] | Mapping[str, Any] | None = None,
    ) -> Verdict:
        return self.run_async(self.aenv.verify(theorem, proof, timeout, options=options))

    def check_source(self, file_text: str, timeout: float | None = None) -> Verdict:
        return self.run_async(self.aenv.check_source(file_text, timeout))

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._thread.run(self.aenv.close())
        except Exception as exc:  # noqa: BLE001 - closing must not raise
            logger.warning("closing the Pantograph REPL failed: %s", exc)
        finally:
            self._closed = True
            self._thread.stop()

    def __del__(self) -> None:
        # A finaliser may run on any thread at any time, even after the loop thread is gone: it
        # must never wait. Kill the REPL's process group outright and let the daemon thread go.
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            pid = self.aenv.client.pid
            if pid is not None:
                os.killpg(pid, signal.SIGKILL)
        except Exception:  # noqa: BLE001 - nothing may escape a finaliser
            pass
        try:
            loop = self._thread.loop
            if loop.is_running():
                loop.call_soon_threadsafe(loop.stop)
        except Exception:  # noqa: BLE001
            pass


__all__ = ["PantographEnv"]
