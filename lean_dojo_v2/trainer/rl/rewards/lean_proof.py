"""``lean_proof``: the Lean-checked reward of a whole proof (proof mode).

Full reward (``proved``, 1.0) only when :func:`~lean_dojo_v2.prover.verify.verify_proof` accepts
the completion (cut at its end marker) as the proof of the row's theorem, against the
theorem's own statement (the environment puts the tactics after that statement; the completion
never supplies one). Before any Lean runs, :func:`~.text.refusal_reason` gives 0 to a
completion that uses ``sorry``/``admit``/``sorryAx``, declares something (``theorem``,
``lemma``, ``def``, ``axiom``…), restates the goal with ``:=``, or names a way to a non-standard
axiom or around the kernel (``native_decide``, ``implemented_by``, ``extern``, ``unsafe``,
``run_tac``…). With Lean (Pantograph) the check also asks Lean which axioms the accepted proof
depends on (``#print axioms``, ``Verdict.axioms``): anything beyond ``propext``,
``Classical.choice`` and ``Quot.sound`` — an axiom the project declares that a lemma used rests
on, ``sorryAx`` behind a lemma, ``Lean.ofReduceBool`` — earns 0 as well. Replay cannot say
which axioms a proof uses; its proofs are recorded ones.

``partial_credit`` (default 0: off): when > 0, a proof that is not accepted earns
``partial_credit * k / n`` where ``k`` of its ``n`` tactics apply one after another from the
theorem's first state (so always below ``partial_credit`` < 1, and 0 for a refused completion).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ....data.model import Theorem
from ....errors import ConfigValueError
from ....interaction.base import ProofEnv
from ....interaction.types import ProofFinished, ProofState, TacticError, TacticTimeout
from .base import RewardContext, RewardInfo, StepRecord, Trajectory
from .checked import Check, LeanCheckedScorer, Outcome
from .env_pool import theorem_key
from .text import END_MARKERS, clean_completion, completion_tactics, refusal_reason, tactic_key


@dataclass(frozen=True)
class _Work:
    theorem: Theorem
    proof: str

    @property
    def prompt_key(self) -> str:
        return theorem_key(self.theorem)


class LeanProofScorer(LeanCheckedScorer[_Work]):
    """See the module docstring."""

    name = "lean_proof"

    def __init__(
        self,
        context: RewardContext | None = None,
        *,
        proved: float = 1.0,
        failed: float = 0.0,
        partial_credit: float = 0.0,
        retries: int = 1,
        end_markers: Sequence[str] = END_MARKERS,
    ) -> None:
        super().__init__(context)
        if not 0.0 <= partial_credit < 1.0:
            raise ConfigValueError(
                f"partial_credit must be in [0, 1) (0 turns it off), got {partial_credit!r}"
            )
        self.proved = float(proved)
        self.failed = float(failed)
        self.partial_credit = float(partial_credit)
        self.retries = retries
        self.end_markers = tuple(end_markers)

    def reward(self, outcome: Outcome) -> float:
        if outcome.outcome == "proved":
            return self.proved
        fraction = outcome.details.get("replayed_fraction")
        if self.partial_credit > 0 and isinstance(fraction, int | float) and fraction:
            return self.partial_credit * float(fraction)
        return self.failed

    def prepare(self, trajectory: Trajectory) -> Check[_Work] | Outcome:
        proof = clean_completion(trajectory.completion, self.end_markers)
        if not proof:
            return Outcome("error", (), "empty completion", cacheable=False)
        reason = refusal_reason(proof)
        if reason is not None:
            return Outcome("error", (), f"refused: {reason}", cacheable=False,
                           details={"refused": reason})  # fmt: skip
        theorem = trajectory.theorem
        if theorem is None and self.context is not None:
            theorem = self.context.theorem(trajectory.theorem_key)
        if theorem is None:
            return Outcome(
                "error", (), f"no theorem {trajectory.theorem_key!r} in the reward context",
                cacheable=False,
            )  # fmt: skip
        tactics = completion_tactics(proof)
        # With partial credit an outcome also holds the replayed fraction: cached apart.
        key = ("lean_proof", theorem_key(theorem), tuple(tactic_key(t) for t in tactics),
               self.partial_credit > 0)  # fmt: skip
        return Check(key, _Work(theorem, proof))

    def check(self, env: ProofEnv, work: _Work) -> Outcome:
        from ....prover.verify import verify_proof

        verdict = verify_proof(env, work.theorem, work.proof, retries=self.retries)
        backend = env.backend
        if verdict is None:
            return Outcome("crash", (), "the environment failed on every attempt", backend, False)
        details: RewardInfo = {"checked_by": verdict.checked_by}
        if verdict.axioms is not None:
            details["axioms"] = list(verdict.axioms)
        if verdict.ok and verdict.nonstandard_axioms:
            # Lean accepted it, but through more than the kernel's foundations (an axiom of the
            # project, sorryAx behind a lemma, native_decide's Lean.ofReduceBool): no reward.
            extra = ", ".join(verdict.nonstandard_axioms)
            details["refused"] = "nonstandard axioms"
            return Outcome("error", (), f"depends on axioms beyond the standard three: {extra}",
                           backend, True, details)  # fmt: skip
        if verdict.ok:
            return Outcome("proved", (), "", backend, True, details)
        message = "; ".join(verdict.messages)[:500]
        steps: tuple[StepRecord, ...] = ()
        if self.partial_credit > 0:
            steps = self._replay(env, work)
            tactics = max(1, len(completion_tactics(work.proof)))
            applied = sum(1 for s in steps if s.outcome in ("progress", "no_progress", "proved"))
            details["replayed_fraction"] = applied / tactics
        timed_out = "timeout" in message.lower()
        return Outcome("timeout" if timed_out else "error", steps, message, backend,
                       not timed_out, details)  # fmt: skip

    def _replay(self, env: ProofEnv, work: _Work) -> tuple[StepRecord, ...]:
        """The completion's tactics run one after another from the theorem's first state, up to
        the first that fails (for partial credit)."""
        assert self.context is not None
        state: ProofState | ProofFinished = self.context.pool.state_at(env, work.theorem, 0)[0]
        steps: list[StepRecord] = []
        for tactic in completion_tactics(work.proof):
            if not isinstance(state, ProofState):
                break
            result = env.run_tactic(state, tactic, self.context.tactic_timeout)
            if isinstance(result, TacticError):
                kind = "timeout" if isinstance(result, TacticTimeout) else "error"
                steps.append(StepRecord(tactic, kind, state.num_goals, None, result.message))
                break
            after = result.num_goals if isinstance(result, ProofState) else 0
            outcome = "proved" if after == 0 else "progress"
            steps.append(StepRecord(tactic, outcome, state.num_goals, after))
            state = result
        return tuple(steps)


__all__ = ["LeanProofScorer"]
