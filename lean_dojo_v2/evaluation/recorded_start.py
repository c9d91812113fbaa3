"""Layer 4 (evaluation): a problem's first goal from the benchmark, not from Lean, where whole
proofs are sampled.

A whole-proof or refinement search starts a problem only to show its first goal to the model;
it runs no tactic on it. miniF2F and ProofNet record that goal as Lean printed it, so in those
modes :class:`RecordedStartEnv` answers ``start`` from the record and Lean is asked only to
check proofs: one Lean call per problem less, and a re-run served by the verdict cache makes
none at all. A problem without a recorded goal (PutnamBench, a LeanDojo theorem) is started by
the environment as before; a tactic on a state made from the record (which these modes never
run) starts the problem in the environment first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..data.goals import goal_texts
from ..interaction.standalone import recorded_goal
from ..interaction.types import ProofState
from ..interaction.wrapped import WrappedEnv, wrap_each

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..interaction.base import AsyncProofEnv
    from ..interaction.types import ProofFinished, TacticResult
    from ..prover.search_types import EnvFactory

__all__ = ["RecordedStartEnv", "RecordedStartFactory"]

_FROM_RECORD = "recorded goal"  # the handle of a state made from the benchmark's record


class RecordedStartEnv(WrappedEnv):
    """``env`` with ``start`` answered from a problem's recorded goal (see the module
    docstring); every other call is the wrapped environment's."""

    async def start(self, theorem: Theorem) -> ProofState:
        goal = recorded_goal(theorem)
        if goal is None:
            return await self.env.start(theorem)
        return ProofState(tuple(goal_texts(goal)), self.backend, _FROM_RECORD, theorem)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        if state.handle == _FROM_RECORD and state.theorem is not None:
            state = await self.env.start(state.theorem)  # Lean's own state, then the tactic
        return await self.env.run_tactic(state, tactic, timeout)

    async def release(self, state: ProofState | ProofFinished) -> None:
        if state.handle != _FROM_RECORD:
            await self.env.release(state)


@dataclass(frozen=True)
class RecordedStartFactory:
    """``make_env`` with each environment it makes a :class:`RecordedStartEnv` (picklable when
    ``make_env`` is)."""

    make_env: EnvFactory

    def __call__(self) -> AsyncProofEnv | list[AsyncProofEnv]:
        return wrap_each(self.make_env(), RecordedStartEnv)
