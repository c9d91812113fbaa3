"""Layer 3 (prover): refinement — a whole proof, then rounds that send Lean's error back.

:class:`RefineSearch` is whole-proof search (:mod:`.whole_proof`) with a second phase, the way the
strongest open provers use Lean (Goedel-Prover-V2's self-correction, StepFun-Prover's and
Leanabell-Prover-V2's multi-turn use of Lean's messages):

1. ``num_samples`` whole proofs are sampled (``whole_proof_rounds`` requests) and checked; each
   starts a *chain* (its sample index).
2. Up to ``config.refine_rounds`` (R) rounds follow. In each, every chain whose latest proof
   failed sends one request: the task, the failed proof and Lean's first error
   (:class:`~lean_dojo_v2.models.proof_prompt.LeanFeedback`: position, message and the goal
   there, from :func:`first_error`), rendered by the
   :class:`~lean_dojo_v2.models.proof_prompt.ProofPrompt`'s ``refine`` template; the answers of
   all chains come from one ``sample_proofs`` call (one expansion) and are checked.
3. A chain ends at its first accepted proof or after R rounds; with ``early_stop`` (the default)
   the search ends at the first accepted proof of any chain.

Every proof checked is an :class:`~.attempt.Attempt` (``index``: its chain, ``round``: 0 … R).

Lean's first error comes from the verdict (:func:`~.feedback.first_error`): its position in the
proof, its message and the goal Lean printed there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from ..interaction import AsyncProofEnv
from ..interaction.async_adapter import as_async_envs
from ..models.proof_prompt import FailedProof, LeanFeedback, ProofRequest, ProofTask
from .feedback import first_error
from .result import SearchResult
from .search_run import SearchStop, check_theorem
from .whole_proof import ProofSampler, Sampled, WholeProofRun, WholeProofSearch

if TYPE_CHECKING:
    pass


def feedback_of(sample: Sampled) -> LeanFeedback:
    """What a refinement round tells the model about a failed sample: Lean's first error, or
    why there was nothing for Lean to check."""
    if sample.text is None:
        return LeanFeedback(
            "the answer held no Lean 4 proof (it was empty, or it used sorry or admit)"
        )
    if sample.verdict is None:
        return LeanFeedback(
            "the proof could not be checked (the Lean environment failed); try another proof"
        )
    return first_error(sample.verdict)


class RefineSearch(WholeProofSearch):
    """Refinement mode (see the module docstring), built as :class:`~.whole_proof.WholeProofSearch`
    is; the generator must have ``sample_proofs`` (:class:`~.whole_proof.ProofSampler`; every
    prover of the library has it)."""

    needs_sampler = True

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        run = RefineRun(self, as_async_envs(envs), check_theorem(theorem))
        return await run.execute()


class RefineRun(WholeProofRun):
    """The state of one refinement search of one theorem."""

    label = "refinement search"
    mode_name = "refine"

    def __init__(self, owner: WholeProofSearch, envs: list[AsyncProofEnv], theorem: Theorem):
        super().__init__(owner, envs, theorem)
        self.rounds_run = 0
        self.stop_reason = "rounds"

    async def _search(self) -> None:
        generator = self.owner.generator.for_theorem(self.theorem)
        if not isinstance(generator, ProofSampler):
            raise SearchStop(
                "error",
                "generator_error",
                f"{type(generator).__name__} (the generator bound to the theorem) has no "
                "sample_proofs()",
            )
        root = await self._start()
        task = ProofTask.from_theorem(self.theorem, root.text)
        try:
            latest = await self._first_round(generator, task)
            await self._refine(generator, task, latest)
        except SearchStop as stop:
            if self.proof is None or stop.status == "proved":
                raise
            raise SearchStop("proved", stop.reason) from None  # a checked proof stands
        if self.proof is not None:
            raise SearchStop("proved", "proved")
        raise SearchStop("failed", self.stop_reason)

    async def _refine(
        self, generator: ProofSampler, task: ProofTask, latest: dict[int, Sampled]
    ) -> None:
        cfg = self.cfg
        history: dict[int, list[FailedProof]] = {i: [] for i in latest}
        for step in range(1, cfg.refine_rounds + 1):
            if self.proof is not None and cfg.early_stop:
                return
            failing = [i for i in sorted(latest) if not latest[i].attempt.ok]
            if not failing:
                return
            if self.expansions >= cfg.max_expansions:
                self.stop_reason = "max_expansions"
                return
            self._time_left()
            for i in failing:
                s = latest[i]
                history[i].append(FailedProof(s.attempt.proof, feedback_of(s), s.answer))
            requests = [ProofRequest(task, tuple(history[i])) for i in failing]
            answers = await self._sample(generator, requests, 1)
            indexed = [(i, got[0]) for i, got in zip(failing, answers, strict=True) if got]
            batch = self._records_of(indexed, step, self.last_usage)
            self.rounds_run = step
            await self._check_samples(batch)
            latest.update((s.attempt.index, s) for s in batch)

    def _stats(self, reason: str, seconds: float) -> dict[str, Any]:
        stats = super()._stats(reason, seconds)
        stats["refine_rounds"] = self.rounds_run
        return stats


__all__ = ["RefineRun", "RefineSearch", "feedback_of"]
