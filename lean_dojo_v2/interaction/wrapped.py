"""Layer 1 (interaction): an environment in front of another — the base of every wrapper that
changes one call and passes the rest through (a verdict cache, a meter, an axiom check).

:class:`WrappedEnv` holds the inner environment as an :class:`AsyncProofEnv`
(:func:`~.async_adapter.as_async_env`), answers every call and declared capability from it, and
lets a subclass override only what it changes. :func:`wrap_each` applies a wrapper to what an
environment factory made (one environment or a list).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..data.model import Theorem
from .async_adapter import as_async_env, restarts_of, shares_states
from .base import AsyncProofEnv, ProofEnv
from .types import ProofFinished, ProofState, TacticResult, Verdict

__all__ = ["WrappedEnv", "wrap_each"]


class WrappedEnv(AsyncProofEnv):
    """``env`` behind this object: every call, ``backend`` and the declared capabilities
    (``shares_states``, ``restarts``) are the wrapped environment's until a subclass says
    otherwise."""

    def __init__(self, env: ProofEnv | AsyncProofEnv) -> None:
        self.env = as_async_env(env)
        self.backend = self.env.backend

    @property
    def shares_states(self) -> bool:  # type: ignore[override]  # the wrapped env's
        return shares_states(self.env)

    @property
    def restarts(self) -> int | None:  # type: ignore[override]  # the wrapped env's
        return restarts_of(self.env)

    async def start(self, theorem: Theorem) -> ProofState:
        return await self.env.start(theorem)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return await self.env.run_tactic(state, tactic, timeout)

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return await self.env.verify(theorem, proof)

    async def release(self, state: ProofState | ProofFinished) -> None:
        await self.env.release(state)

    async def close(self) -> None:
        await self.env.close()


def wrap_each(
    made: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv],
    wrap: Callable[[ProofEnv | AsyncProofEnv], AsyncProofEnv],
) -> AsyncProofEnv | list[AsyncProofEnv]:
    """``wrap`` applied to what an environment factory made: one environment, or each of a
    list (the shape is kept)."""
    if isinstance(made, (ProofEnv, AsyncProofEnv)):
        return wrap(made)
    return [wrap(env) for env in made]
