"""Layer 1 (interaction): whatever environment a caller has, as the :class:`AsyncProofEnv` that
search, agents and servers run on.

- an :class:`AsyncProofEnv` is used as it is;
- a :class:`ReplayEnv` becomes its own async twin (:meth:`ReplayEnv.as_async`: replay never blocks);
- any other :class:`ProofEnv` (``PantographEnv``, a user's own) is wrapped in
  :class:`ThreadedProofEnv`, which runs each blocking call in a worker thread
  (:func:`asyncio.to_thread`), so that several such environments work at the same time.
  ``PantographEnv`` runs its own event loop in a thread of its own, so its calls are safe from
  any thread; search never runs two calls on one environment at once.

:func:`shares_states` and :func:`restarts_of` read the capabilities every environment declares
(:class:`AsyncProofEnv`), whichever way it was wrapped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..data.model import Theorem
from ..errors import ConfigError
from .base import AsyncProofEnv, ProofEnv
from .replay import ReplayEnv
from .types import ProofFinished, ProofState, TacticResult, Verdict


class ThreadedProofEnv(AsyncProofEnv):
    """The coroutine flavour of a blocking :class:`ProofEnv`: each call runs in a worker thread.
    The declared capabilities (``shares_states``, ``restarts``, ``release``) are the wrapped
    environment's; any other attribute (``client``, ``config``, …) is read from it too."""

    def __init__(self, env: ProofEnv) -> None:
        self.env = env
        self.backend = getattr(env, "backend", "unknown")

    # Properties, not copies: a user's env may change its answer after wrapping. getattr with
    # the contract's default keeps a duck-typed env (outside the contract) working.
    @property
    def shares_states(self) -> bool:  # type: ignore[override]
        return getattr(self.env, "shares_states", False)

    @property
    def restarts(self) -> int | None:  # type: ignore[override]
        return getattr(self.env, "restarts", None)

    async def start(self, theorem: Theorem) -> ProofState:
        return await asyncio.to_thread(self.env.start, theorem)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return await asyncio.to_thread(self.env.run_tactic, state, tactic, timeout)

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return await asyncio.to_thread(self.env.verify, theorem, proof)

    async def release(self, state: ProofState | ProofFinished) -> None:
        await asyncio.to_thread(self.env.release, state)

    async def close(self) -> None:
        await asyncio.to_thread(self.env.close)

    def __getattr__(self, name: str) -> Any:  # client, config, ... of the wrapped env
        if name == "env":  # not set yet (during unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.env, name)


def as_async_env(env: ProofEnv | AsyncProofEnv) -> AsyncProofEnv:
    """``env`` as an :class:`AsyncProofEnv` (see the module docstring)."""
    if isinstance(env, AsyncProofEnv):
        return env
    if isinstance(env, ReplayEnv):
        return env.as_async()
    if isinstance(env, ProofEnv):
        return ThreadedProofEnv(env)
    raise ConfigError(
        f"search needs a ProofEnv or AsyncProofEnv (or a list of them), not {type(env).__name__}"
    )


def as_async_envs(
    envs: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv],
) -> list[AsyncProofEnv]:
    """One environment or a sequence of them, each as an :class:`AsyncProofEnv`."""
    if isinstance(envs, (ProofEnv, AsyncProofEnv)):
        return [as_async_env(envs)]
    if isinstance(envs, (str, bytes)) or not isinstance(envs, Sequence):
        raise ConfigError(
            f"search needs a ProofEnv or AsyncProofEnv or a list of them, not {type(envs).__name__}"
        )
    if not envs:
        raise ConfigError("search needs at least one environment; the list is empty")
    return [as_async_env(e) for e in envs]


def shares_states(env: AsyncProofEnv) -> bool:
    """Whether a state made by ``env`` may be passed to another environment of the same kind
    (:attr:`AsyncProofEnv.shares_states`: replay states carry their goals, Pantograph states are
    REPL state ids of one process). Only a declared ``True`` counts: anything else is False."""
    return getattr(env, "shares_states", False) is True


def restarts_of(env: AsyncProofEnv) -> int | None:
    """How often the environment's process was restarted so far
    (:attr:`AsyncProofEnv.restarts`), or None when the environment does not count them."""
    count = getattr(env, "restarts", None)
    return count if isinstance(count, int) else None


__all__ = [
    "ThreadedProofEnv",
    "as_async_env",
    "as_async_envs",
    "restarts_of",
    "shares_states",
]
