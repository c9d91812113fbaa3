"""Layer 4 (evaluation): what one problem's search comes to (:func:`problem_outcome`: its
correct samples, budget and proof, from the search result and its attempt records) and the
progress bar over them (:class:`Progress`: the running pass@1 and budget)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .attempts import ProblemOutcome
from .budget import Budget

if TYPE_CHECKING:
    from ..prover.result import SearchResult

__all__ = ["Progress", "lean_calls", "problem_outcome"]


def problem_outcome(
    name: str, result: SearchResult, records: Sequence[Mapping[str, Any]], samples: int
) -> ProblemOutcome:
    """One problem's outcome from its search result and attempt records (Lean usage and dollars
    are filled in by the caller). A sample counts as correct when any of its rounds was
    accepted; in tactic mode the one search is sample 0."""
    correct = sorted({_int(r.get("index")) for r in records if r.get("ok") is True})
    correct = [i for i in correct if 0 <= i < samples]
    if samples == 1 and result.proved:
        correct = [0]
    accepted = [r for r in records if r.get("ok") is True]
    budget = Budget(
        attempts=len(records),
        tokens_in=sum(_int(r.get("tokens_in")) for r in records),
        tokens_out=sum(_int(r.get("tokens_out")) for r in records),
        generator_seconds=sum(_float(r.get("generator_seconds")) for r in records),
        gpu_seconds=sum(_float(r.get("gpu_seconds")) for r in records),
        wall_seconds=float(result.seconds),
    )
    stats = result.stats or {}
    if not budget.generator_seconds:
        budget.generator_seconds = _float(stats.get("generator_seconds"))
    proof = result.proof_text if result.proved else None
    if proof is None and accepted:
        proof = str(accepted[0].get("proof") or "")
    checked_by = result.checked_by or (str(accepted[0].get("checked_by")) if accepted else None)
    return ProblemOutcome(
        name=name,
        status=result.status,
        attempts=len(records),
        correct_samples=correct,
        proof=proof,
        checked_by=checked_by if correct else None,
        error=result.error,
        budget=budget,
        to_solve=_to_solve(records) if correct else None,
    )


def lean_calls(records: Sequence[Mapping[str, Any]]) -> int:
    """The Lean calls the searches themselves counted (a cached verdict cost none)."""
    return sum(_int(r.get("lean_calls")) for r in records if not r.get("cached"))


def _to_solve(records: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """What the attempts up to the first accepted one cost, in sample and round order."""
    ordered = sorted(records, key=lambda r: (_int(r.get("index")), _int(r.get("round"))))
    spent = {"attempts": 0.0, "tokens": 0.0, "lean_calls": 0.0}
    for r in ordered:
        spent["attempts"] += 1
        spent["tokens"] += _int(r.get("tokens_in")) + _int(r.get("tokens_out"))
        spent["lean_calls"] += 0 if r.get("cached") else _int(r.get("lean_calls"))
        if r.get("ok") is True:
            return spent
    return None


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


class Progress:
    """The bar on stderr: problems done, the running pass@1 (mean of correct/n over the problems
    done), problems solved, tokens, Lean calls and dollars so far."""

    def __init__(
        self, benchmark: str, total: int, samples: int, done: Iterable[ProblemOutcome], *, on: bool
    ) -> None:
        from tqdm.auto import tqdm

        self.n = samples
        self.outcomes: list[ProblemOutcome] = list(done)
        self.bar = tqdm(
            total=total,
            initial=len(self.outcomes),
            desc=f"eval {benchmark}",
            unit="problem",
            disable=not on,
            dynamic_ncols=True,
        )
        self._postfix()

    def _postfix(self) -> None:
        done = self.outcomes
        budget = Budget.total(o.budget for o in done)
        pass1 = sum(min(o.correct, self.n) / self.n for o in done) / len(done) if done else 0.0
        postfix = {
            "pass@1": f"{pass1:.3f}",
            "solved": sum(o.solved for o in done),
            "tokens": budget.tokens_in + budget.tokens_out,
            "lean_calls": budget.lean_calls,
        }
        if budget.dollars is not None:
            postfix["$"] = f"{budget.dollars:.2f}"
        self.bar.set_postfix(postfix, refresh=False)

    def update(self, outcome: ProblemOutcome) -> None:
        self.outcomes.append(outcome)
        self._postfix()
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
