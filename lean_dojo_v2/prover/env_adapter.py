"""Turning whatever environment a caller has into the :class:`AsyncProofEnv` s search runs on.

- an :class:`AsyncProofEnv` is used as it is;
- a :class:`ReplayEnv` becomes its own async twin (:meth:`ReplayEnv.as_async`: replay never blocks);
- any other :class:`ProofEnv` (``PantographEnv``, a user's own) is wrapped in
  :class:`ThreadedProofEnv`, which runs each blocking call in a worker thread
  (:func:`asyncio.to_thread`), so that several such environments work at the same time.
  ``PantographEnv`` runs its own event loop in a thread of its own, so its calls are safe from
  any thread; search never runs two calls on one environment at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, AsyncReplayEnv, ProofEnv, ReplayEnv
from ..interaction.types import ProofState, TacticResult, Verdict


class ThreadedProofEnv(AsyncProofEnv):
    """The coroutine flavour of a blocking :class:`ProofEnv`: each call runs in a worker thread."""

    def __init__(self, env: ProofEnv) -> None:
        self.env = env
        self.backend = getattr(env, "backend", "unknown")

    async def start(self, theorem: Theorem) -> ProofState:
        return await asyncio.to_thread(self.env.start, theorem)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return await asyncio.to_thread(self.env.run_tactic, state, tactic, timeout)

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return await asyncio.to_thread(self.env.verify, theorem, proof)

    async def close(self) -> None:
        await asyncio.to_thread(self.env.close)

    def __getattr__(self, name: str) -> Any:  # restarts, client, ... of the wrapped env
        if name == "env":
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
    """Whether a state made by ``env`` may be passed to another environment of the same kind.

    Replay states carry their goals (the handle is the goal tuple), so any replay environment can
    continue them; Pantograph states are REPL state ids of one process and are not portable. An
    environment can say so itself with a ``shares_states`` attribute."""
    declared = getattr(env, "shares_states", None)
    if isinstance(declared, bool):
        return declared
    inner = env.env if isinstance(env, (AsyncReplayEnv, ThreadedProofEnv)) else env
    if isinstance(inner, ReplayEnv):
        return True
    declared = getattr(inner, "shares_states", None)
    return declared if isinstance(declared, bool) else False


def restarts_of(env: AsyncProofEnv) -> int | None:
    """How often the environment's process was restarted so far (Pantograph's client counts
    them), or None when the environment does not say."""
    inner = env.env if isinstance(env, ThreadedProofEnv) else env
    client = getattr(inner, "client", None)
    count = getattr(client, "restarts", None)
    return count if isinstance(count, int) else None
