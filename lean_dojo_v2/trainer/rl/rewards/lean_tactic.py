"""``lean_tactic``: the Lean-checked reward of a tactic, run on the prompt's state.

The completion (cut at its end marker) is read as tactics (:func:`completion_tactics`); its first
one runs in a ``ProofEnv`` on the state before recorded tactic ``step`` of the row's theorem
(reached once per environment, :meth:`EnvPool.state_at`). With ``max_proof_steps > 1`` its
tactics run one after another until the proof is closed, a tactic fails, or that many ran; the
reward is the trajectory's (the furthest state it reached against the prompt's state).

Rewards (constructor arguments): the proof closed ``proved`` (1.0) > ``progress`` (0.5: fewer
goals, or as many with shorter goal text in total) > ``no_progress`` (0.2: accepted, nothing
simpler) > ``error`` (0.0: rejected, empty, ``sorry``, a timeout, a crash, or a state that could
not be reached). A later tactic that fails ends a multi-step rollout without undoing what the
earlier ones reached.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from ....data.model import Theorem
from ....interaction.base import ProofEnv
from ....interaction.types import ProofFinished, ProofState, TacticError, TacticTimeout
from ....models.candidates import is_forbidden
from .base import RewardContext, RewardInfo, StepRecord, Trajectory
from .checked import Check, LeanCheckedScorer, Outcome
from .text import END_MARKERS, clean_completion, completion_tactics, state_key, tactic_key


@dataclass(frozen=True)
class _Work:
    theorem: Theorem | None
    step: int
    state: str
    tactics: tuple[str, ...]

    @property
    def prompt_key(self) -> tuple[str, int, str]:
        """Checks with the same key run in one environment (the state is reached once)."""
        name = self.theorem.full_name if self.theorem is not None else ""
        return (name, self.step, self.state)


def _size(state: ProofState) -> tuple[int, int]:
    return (state.num_goals, sum(len(g) for g in state.goals))


class LeanTacticScorer(LeanCheckedScorer[_Work]):
    """See the module docstring."""

    name = "lean_tactic"

    def __init__(
        self,
        context: RewardContext | None = None,
        *,
        proved: float = 1.0,
        progress: float = 0.5,
        no_progress: float = 0.2,
        error: float = 0.0,
        max_proof_steps: int | None = None,
        end_markers: Sequence[str] = END_MARKERS,
    ) -> None:
        super().__init__(context)
        self.values = {
            "proved": float(proved),
            "progress": float(progress),
            "no_progress": float(no_progress),
        }
        self.error = float(error)
        self.max_proof_steps = max_proof_steps
        self.end_markers = tuple(end_markers)

    def steps_allowed(self) -> int:
        if self.max_proof_steps is not None:
            return max(1, int(self.max_proof_steps))
        return self.context.max_proof_steps if self.context is not None else 1

    def reward(self, outcome: Outcome) -> float:
        return self.values.get(outcome.outcome, self.error)

    def prepare(self, trajectory: Trajectory) -> Check[_Work] | Outcome:
        text = clean_completion(trajectory.completion, self.end_markers)
        tactics = completion_tactics(text)[: self.steps_allowed()]
        if not tactics:
            return Outcome("error", (), "empty completion", cacheable=False)
        if any(is_forbidden(t) for t in tactics):
            return Outcome("error", (), "uses sorry, admit or sorryAx", cacheable=False)
        theorem = trajectory.theorem
        if theorem is None and self.context is not None:
            theorem = self.context.theorem(trajectory.theorem_key)
        tactic_keys = tuple(tactic_key(t) for t in tactics)
        key: tuple[Hashable, ...] = ("lean_tactic", state_key(trajectory.state), tactic_keys)
        if not trajectory.state:
            # No recorded state to key on: the theorem and step identify it instead.
            key = ("lean_tactic", trajectory.theorem_key, trajectory.step, tactic_keys)
        return Check(key, _Work(theorem, trajectory.step, trajectory.state, tuple(tactics)))

    def check(self, env: ProofEnv, work: _Work) -> Outcome:
        assert self.context is not None  # score_batch checked it
        timeout = self.context.tactic_timeout
        start, matched = self.context.pool.state_at(env, work.theorem, work.step, work.state)
        backend = env.backend
        details: RewardInfo = {} if matched else {"state_matched": False}
        steps: list[StepRecord] = []
        current = start
        for tactic in work.tactics:
            result = env.run_tactic(current, tactic, timeout)
            before = current.num_goals
            if isinstance(result, TacticTimeout):
                steps.append(StepRecord(tactic, "timeout", before, None, result.message))
                if len(steps) == 1:
                    return Outcome("timeout", tuple(steps), result.message, backend, False, details)
                break
            if isinstance(result, TacticError):
                steps.append(StepRecord(tactic, "error", before, None, result.message))
                if len(steps) == 1:
                    return Outcome("error", tuple(steps), result.message, backend, True, details)
                break
            if isinstance(result, ProofFinished):
                steps.append(StepRecord(tactic, "proved", before, 0))
                return Outcome("proved", tuple(steps), "", backend, True, details)
            assert isinstance(result, ProofState)
            simpler = _size(result) < _size(current)
            steps.append(
                StepRecord(
                    tactic, "progress" if simpler else "no_progress", before, result.num_goals
                )
            )
            current = result
        # The trajectory's worth: the furthest state it reached against the prompt's state.
        overall = "progress" if _size(current) < _size(start) else "no_progress"
        # A timeout in a later step is not cached: that step might pass the next time.
        cacheable = steps[-1].outcome != "timeout"
        return Outcome(overall, tuple(steps), "", backend, cacheable, details)


__all__ = ["LeanTacticScorer"]
