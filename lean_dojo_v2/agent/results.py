"""Layer 4 (agent): what ``prove()`` returns — a :class:`ProveReport` around the pipeline's
:class:`~lean_dojo_v2.prover.outcome.TheoremOutcome` s (one per theorem) — and what
``LeanAgent.train()`` returns (:class:`LifelongResult`).

Plain dataclasses with ``to_dict()`` (JSON-ready); ``str(report)`` is the summary an agent prints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..prover.outcome import DEPENDS_ON_SORRY, TheoremOutcome

if TYPE_CHECKING:
    from ..trainer.retrieval_trainer import RetrievalResult


@dataclass
class ProveReport:
    """What one ``prove()`` call did.

    ``backend``: the proof environment (``"pantograph"`` or ``"replay"``; a list when repositories
    used different ones); ``backend_notice``: the one-line notice given when replay was chosen;
    ``target``: which theorems were tried (``"sorry"``: the database's unproved ``sorry``
    theorems; ``"test"``/``"val"``/``"train"``: that split of the ``random`` strategy);
    ``model``: what generated the tactics; ``trained``: whether the agent's own training had run
    (False: the trainer's base model was used; None: the agent has nothing to train); ``left_out``: theorems of the target the
    environment cannot start (replay: no recorded tactic proof); ``write_back``: per repository,
    the working copy, diff file, written and skipped theorems; ``recorded``: the database's
    recording summary; ``notes``: what the agent said while proving."""

    agent: str
    backend: str | list[str]
    target: str
    model: str | None
    trained: bool | None
    whole_proof: bool
    outcomes: list[TheoremOutcome]
    seconds: float
    backend_notice: str | None = None
    left_out: int = 0
    write_back: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def attempted(self) -> int:
        return len(self.outcomes)

    @property
    def proved(self) -> int:
        return sum(o.proved for o in self.outcomes)

    @property
    def failed(self) -> int:
        return self.attempted - self.proved

    @property
    def expansions(self) -> int:
        return sum(o.expansions for o in self.outcomes)

    @property
    def proofs(self) -> dict[str, list[str]]:
        return {o.theorem: list(o.proof or []) for o in self.outcomes if o.proved}

    @property
    def depends_on_sorry(self) -> list[str]:
        return [o.theorem for o in self.outcomes if o.triage == DEPENDS_ON_SORRY]

    def to_dict(self) -> dict[str, Any]:
        statuses = Counter(o.status for o in self.outcomes)
        return {
            "agent": self.agent,
            "backend": self.backend,
            "backend_notice": self.backend_notice,
            "target": self.target,
            "model": self.model,
            "trained": self.trained,
            "whole_proof": self.whole_proof,
            "attempted": self.attempted,
            "proved": self.proved,
            "failed": statuses.get("failed", 0),
            "timeout": statuses.get("timeout", 0),
            "error": statuses.get("error", 0),
            "expansions": self.expansions,
            "seconds": round(self.seconds, 3),
            "checked_by": dict(Counter(o.checked_by for o in self.outcomes if o.proved)),
            "left_out": self.left_out,
            "depends_on_sorry": self.depends_on_sorry,
            "proofs": self.proofs,
            "outcomes": [o.to_dict() for o in self.outcomes],
            "write_back": self.write_back,
            "recorded": self.recorded,
            "notes": list(self.notes),
        }

    def summary(self, notice: bool = True) -> str:
        """A few lines for a terminal: the counts, each proof, what was written back
        (``notice=False``: without the replay notice and the notes, when they were said
        already)."""
        backend = self.backend if isinstance(self.backend, str) else ", ".join(self.backend)
        what = (
            "the unproved sorry theorems"
            if self.target == "sorry"
            else (f"the random {self.target} split")
        )
        lines = [
            f"{self.agent}: proved {self.proved} of {self.attempted} theorem(s) ({what}) in "
            f"{self.seconds:.1f} s; {self.expansions} expansions; backend {backend}; "
            f"model {self.model}" + (" (untrained base model)" if self.trained is False else "")
        ]
        if notice:
            lines.extend(f"  {text}" for text in [self.backend_notice, *self.notes] if text)
        if self.left_out:
            lines.append(
                f"  {self.left_out} theorem(s) left out: the environment cannot start them "
                "(replay: no recorded tactic proof)"
            )
        for o in self.outcomes:
            mark = "proved" if o.proved else o.status
            extra = f" [{o.triage}: uses {', '.join(o.depends_on)}]" if o.triage else ""
            lines.append(f"  {mark:<8} {o.theorem}{extra}")
            if o.proved:
                lines.extend(
                    "             " + t.replace("\n", "\n             ") for t in o.proof or []
                )
            if o.reason and not o.proved:
                lines.append(f"             ({o.reason})")
        for repo, wb in self.write_back.items():
            if wb.get("error"):
                lines.append(f"  not written back to {repo}: {wb['error']}")
            elif wb.get("written"):
                lines.append(
                    f"  wrote {len(wb['written'])} proof(s) into {wb.get('workdir')}"
                    + (f" on branch {wb['branch']}" if wb.get("branch") else "")
                    + (f"; diff: {wb['diff_file']}" if wb.get("diff_file") else "")
                )
            for name, why in (wb.get("skipped") or {}).items():
                lines.append(f"  not written back: {name}: {why}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


@dataclass
class LifelongResult:
    """What ``LeanAgent.train()`` did: the retrieval trainer's result, and after each new
    repository the R@10 of every repository so far.

    ``r10[k][j]`` is R@10 on repository ``j``'s held-out split (``eval_splits[j]``) after pass
    ``k`` (``None`` when that split has no premise to retrieve); ``forgetting[j]`` is R@10 of
    ``j`` after the last pass minus R@10 right after ``j`` was learnt (negative: forgotten)."""

    repositories: list[str]
    training: RetrievalResult
    r10: list[list[float | None]]
    eval_splits: list[str | None]
    forgetting: dict[str, float | None]
    retriever_dir: str | None = None

    def to_dict(self) -> dict[str, Any]:
        training = self.training.to_dict() if hasattr(self.training, "to_dict") else self.training
        return {
            "repositories": list(self.repositories),
            "r10": [list(row) for row in self.r10],
            "eval_splits": list(self.eval_splits),
            "forgetting": dict(self.forgetting),
            "retriever_dir": self.retriever_dir,
            "training": training,
        }

    def __getattr__(self, name: str) -> Any:
        # The trainer's result's fields (steps, encoder_dir, ...) read through.
        if name.startswith("_") or name == "training":
            raise AttributeError(name)
        return getattr(self.training, name)


__all__ = ["DEPENDS_ON_SORRY", "LifelongResult", "ProveReport", "TheoremOutcome"]
