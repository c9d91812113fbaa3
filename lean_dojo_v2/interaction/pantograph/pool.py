"""``PantographPool``: N Pantograph REPLs behind one :class:`AsyncProofEnv`, for parallel search.

A state is bound to the server that made it (its handle names that server), so ``run_tactic``
goes back there; ``start``/``verify`` go to the least busy server. Each server serialises its own
requests (replies are FIFO per process), so concurrent use neither loses nor crosses replies.
The memory guard restarts a server only when nothing of it is in use (no live states, no request
in flight); busy servers that need a restart stop receiving new theorems until they are idle.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar, Unpack

from ...data.model import Theorem
from ..base import AsyncProofEnv
from ..types import ProofFinished, ProofState, StaleStateError, TacticResult, Verdict
from .async_env import BACKEND, AsyncPantographEnv, StateHandle
from .client import GoalTacticFields
from .config import PantographConfig

T = TypeVar("T")

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")
_pool_ids = itertools.count(1)


class PantographPool(AsyncProofEnv):
    """``size`` servers launched from one :class:`PantographConfig`."""

    backend = BACKEND

    def __init__(
        self, config: PantographConfig | None = None, size: int = 4, **overrides: object
    ) -> None:
        if size < 1:
            raise ValueError("a PantographPool needs at least one server")
        pool_id = f"pantograph-pool-{os.getpid()}-{next(_pool_ids)}"
        self.envs = [
            AsyncPantographEnv(config, env_id=f"{pool_id}/{i}", **overrides) for i in range(size)
        ]
        self.config = self.envs[0].config
        self._by_id = {env.env_id: i for i, env in enumerate(self.envs)}
        self._busy = [0] * size  # requests in flight per server

    @property
    def size(self) -> int:
        return len(self.envs)

    async def open(self) -> PantographPool:
        """Launch every server (concurrently)."""
        await asyncio.gather(*(env.open() for env in self.envs))
        return self

    async def __aenter__(self) -> PantographPool:
        return await self.open()

    async def close(self) -> None:
        await asyncio.gather(*(env.close() for env in self.envs), return_exceptions=True)

    # ----------------------------------------------------------------------------- routing
    def _pick(self) -> tuple[int, bool]:
        """The server for a new theorem, and whether to apply its memory guard first."""
        order = sorted(
            range(self.size), key=lambda i: (self._busy[i], self.envs[i].client.live_states)
        )
        fallback: int | None = None
        for i in order:
            client = self.envs[i].client
            if not client.needs_recycle():
                return i, False
            if self._busy[i] == 0 and client.live_states == 0:
                return i, True
            if fallback is None:
                fallback = i
        # Every server is due for a restart and busy: keep serving (restart when idle).
        assert fallback is not None
        return fallback, False

    def _server_of(self, state: ProofState | ProofFinished) -> int:
        handle = getattr(state, "handle", None)
        if not isinstance(handle, StateHandle) or handle.env_id not in self._by_id:
            raise StaleStateError(f"this state was not made by this pool (handle {handle!r})")
        return self._by_id[handle.env_id]

    async def _on(self, i: int, coro: Awaitable[T]) -> T:
        self._busy[i] += 1
        try:
            return await coro
        finally:
            self._busy[i] -= 1

    # ----------------------------------------------------------------------- ProofEnv API
    async def start(self, theorem: Theorem | str) -> ProofState:
        i, recycle = self._pick()
        self._busy[i] += 1
        try:
            env = self.envs[i]
            if recycle:
                await env.client.recycle_if_needed()
            return await env.start(theorem, recycle=False)
        finally:
            self._busy[i] -= 1

    async def start_expr(self, expr: str, levels: list[str] | None = None) -> ProofState:
        i, recycle = self._pick()
        self._busy[i] += 1
        try:
            env = self.envs[i]
            if recycle:
                await env.client.recycle_if_needed()
            return await env.start_expr(expr, levels, recycle=False)
        finally:
            self._busy[i] -= 1

    async def start_from_source(
        self,
        file_text: str,
        *,
        binder_name: str | None = None,
        theorem: Theorem | None = None,
    ) -> list[ProofState]:
        i, recycle = self._pick()
        self._busy[i] += 1
        try:
            env = self.envs[i]
            if recycle:
                await env.client.recycle_if_needed()
            return await env.start_from_source(
                file_text, binder_name=binder_name, recycle=False, theorem=theorem
            )
        finally:
            self._busy[i] -= 1

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        i = self._server_of(state)
        return await self._on(i, self.envs[i].run_tactic(state, tactic, timeout))

    async def run_tactic_raw(
        self, state: ProofState, timeout: float | None = None, **fields: Unpack[GoalTacticFields]
    ) -> TacticResult:
        i = self._server_of(state)
        return await self._on(i, self.envs[i].run_tactic_raw(state, timeout, **fields))

    async def release(self, state: ProofState | ProofFinished) -> None:
        i = self._server_of(state)
        await self._on(i, self.envs[i].release(state))

    async def verify(
        self,
        theorem: Theorem,
        proof: str,
        timeout: float | None = None,
        *,
        options: Sequence[str] | Mapping[str, Any] | None = None,
    ) -> Verdict:
        """:meth:`AsyncPantographEnv.verify` on the least busy server (``options``: core
        options for the checked text, e.g. ``{"maxHeartbeats": 400000}``)."""
        i = min(range(self.size), key=lambda k: self._busy[k])
        return await self._on(i, self.envs[i].verify(theorem, proof, timeout, options=options))

    async def check_source(self, file_text: str, timeout: float | None = None) -> Verdict:
        i = min(range(self.size), key=lambda k: self._busy[k])
        return await self._on(i, self.envs[i].check_source(file_text, timeout))
