"""Layer 3 (prover): :class:`TheoremOutcome`, what the proving pipeline says about one theorem.

A :class:`~lean_dojo_v2.prover.result.SearchResult` says what the search found; an outcome adds
what came after it: the repository the theorem belongs to, the placeholder triage
(:mod:`.triage`), whether the proof was written back, and why not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import SearchResult

DEPENDS_ON_SORRY = "depends_on_sorry"

__all__ = ["DEPENDS_ON_SORRY", "TheoremOutcome"]


@dataclass
class TheoremOutcome:
    """One theorem the pipeline tried to prove.

    ``status`` is the search's (``proved``, ``failed``, ``timeout``, ``error``); with the
    re-check on, ``proved`` only after ``verify_proof`` accepted the whole proof (``checked_by``
    is that verdict's: ``"lean"`` or ``"replay"``). ``triage`` is ``"depends_on_sorry"`` when the
    theorem's statement uses a declaration that is itself ``sorry`` (``depends_on`` names them):
    its proof, if any, is reported but not written back by default. ``written_back`` says whether
    the proof went into the working copy; ``reason`` why not (or why the search failed)."""

    theorem: str
    file_path: str
    status: str
    proof: list[str] | None
    backend: str
    checked_by: str | None
    expansions: int = 0
    seconds: float = 0.0
    repository: str | None = None
    triage: str | None = None
    depends_on: list[str] = field(default_factory=list)
    written_back: bool = False
    reason: str | None = None

    @classmethod
    def of(
        cls,
        result: SearchResult,
        repository: str | None = None,
        depends_on: list[str] | None = None,
    ) -> TheoremOutcome:
        """The outcome of ``result``, before any write-back; ``reason`` is the search's error,
        else why it stopped."""
        reason = result.error
        if result.status == "failed" and not reason:
            reason = str(result.stats.get("stop_reason") or "") or None
        proved = result.status == "proved"
        return cls(
            theorem=result.theorem,
            file_path=result.file_path,
            status=result.status,
            proof=list(result.proof) if proved and result.proof else None,
            backend=result.backend,
            checked_by=result.checked_by if proved else None,
            expansions=result.expansions,
            seconds=result.seconds,
            repository=repository,
            triage=DEPENDS_ON_SORRY if depends_on else None,
            depends_on=list(depends_on or []),
            reason=reason,
        )

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    def to_dict(self) -> dict[str, Any]:
        return {
            "theorem": self.theorem,
            "file_path": self.file_path,
            "status": self.status,
            "proof": list(self.proof) if self.proof is not None else None,
            "backend": self.backend,
            "checked_by": self.checked_by,
            "expansions": int(self.expansions),
            "seconds": round(float(self.seconds), 3),
            "repository": self.repository,
            "triage": self.triage,
            "depends_on": list(self.depends_on),
            "written_back": self.written_back,
            "reason": self.reason,
        }
