"""Record search results in the :class:`~lean_dojo_v2.database.DynamicDatabase`.

Only results with status ``"proved"`` (re-checked by ``ProofEnv.verify``) are recorded, each with
:meth:`~lean_dojo_v2.database.DynamicDatabase.record_proof`: the tactics, the backend, ``verified``
true only when Lean itself checked the proof (``checked_by == "lean"``; a replayed proof is
recorded but not verified), the search time and the model. A theorem with an unproved ``sorry``
then moves to ``sorry_proved``. A result whose theorem the database does not hold is counted and
warned about, never an error: proving a dataset that was not added to the database is fine. The
same proof (text and backend) recorded before for that theorem is not recorded again, so a run
can be repeated.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem

if TYPE_CHECKING:
    from ..database import DynamicDatabase
    from .result import SearchResult

logger = logging.getLogger(__name__)

__all__ = ["RecordingSummary", "record_results", "warn_not_recorded"]


@dataclass
class RecordingSummary:
    """What :func:`record_results` did: proofs ``recorded`` (their database ids in
    ``proof_ids``), proved results ``already_recorded`` (same proof and backend), results not
    recorded because they were not proved (``not_proved``), and the names of proved theorems
    the database does not hold (``not_in_db``) or holds several times with no theorem record to
    tell them apart (``ambiguous``)."""

    recorded: int = 0
    already_recorded: int = 0
    not_proved: int = 0
    not_in_db: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)
    proof_ids: list[int] = field(default_factory=list)

    def merge(self, other: RecordingSummary) -> None:
        """Add ``other``'s counts and names to this summary (a run recording result by
        result keeps one summary)."""
        self.recorded += other.recorded
        self.already_recorded += other.already_recorded
        self.not_proved += other.not_proved
        self.not_in_db += other.not_in_db
        self.ambiguous += other.ambiguous
        self.proof_ids += other.proof_ids

    def to_dict(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "already_recorded": self.already_recorded,
            "not_proved": self.not_proved,
            "not_in_db": list(self.not_in_db),
            "ambiguous": list(self.ambiguous),
        }


def _theorem_ref(
    db: DynamicDatabase, result: SearchResult, theorem: Theorem | None, summary: RecordingSummary
) -> Theorem | int | None:
    """The theorem record (matched by url, commit, file, name, start) or the database id of the
    one stored theorem of that name and file; None (counted) when there is none or several."""
    from ..database.errors import RecordNotFoundError

    if theorem is not None:
        try:
            return db.get_theorem(theorem).id
        except RecordNotFoundError:
            summary.not_in_db.append(result.theorem)
            return None
    ids = [
        st.id
        for st in db.stored_theorems(
            full_name=result.theorem, file_path=result.file_path, with_tactics=False
        )
    ]
    if not ids:
        summary.not_in_db.append(result.theorem)
        return None
    if len(ids) > 1:
        summary.ambiguous.append(result.theorem)
        return None
    return ids[0]


def record_results(
    db: DynamicDatabase,
    results: Iterable[SearchResult],
    theorems: Iterable[Theorem] | None = None,
    *,
    model: str | None = None,
    training_run: int | None = None,
    warn: bool = True,
) -> RecordingSummary:
    """Record the proved ``results`` in ``db`` (see the module docstring).

    ``theorems``: the theorem records searched (matched to results by full name and file path),
    which locate each theorem exactly (repository, commit, start). Without them a result is
    matched by full name and file path alone, and skipped as ``ambiguous`` when the database
    holds that theorem in several repository versions. ``model``: the model that found the
    proofs (a name or path), stored with each proof."""
    by_key = {(t.full_name, t.file_path): t for t in theorems} if theorems is not None else {}
    summary = RecordingSummary()
    for result in results:
        if result.status != "proved" or not result.proof:
            summary.not_proved += 1
            continue
        theorem = by_key.get((result.theorem, result.file_path))
        ref = _theorem_ref(db, result, theorem, summary)
        if ref is None:
            continue
        text = "\n".join(result.proof)
        if any(p.proof_text == text and p.backend == result.backend for p in db.proofs(ref)):
            summary.already_recorded += 1
            continue
        record = db.record_proof(
            ref,
            list(result.proof),
            backend=result.backend,
            verified=result.checked_by == "lean",
            time_s=float(result.seconds),
            model=model,
            training_run=training_run,
        )
        summary.recorded += 1
        summary.proof_ids.append(record.id)
    if warn:
        warn_not_recorded(summary)
    return summary


def warn_not_recorded(summary: RecordingSummary) -> None:
    """Log, once, how many proved theorems were not recorded and why (not in the database, or
    ambiguous in it). :func:`record_results` calls it unless ``warn=False``; a caller recording
    one result at a time (the proving pipeline, :mod:`.pipeline`) passes that and calls this once
    at the end."""
    if summary.not_in_db:
        shown = ", ".join(summary.not_in_db[:3]) + (", ..." if len(summary.not_in_db) > 3 else "")
        logger.warning(
            "%d proved theorem(s) are not in the database and were not recorded (%s): add their "
            "repository first (lean-dojo-v2 db add)",
            len(summary.not_in_db),
            shown,
        )
    if summary.ambiguous:
        logger.warning(
            "%d proved theorem(s) are in the database in several repository versions and were "
            "not recorded (%s): pass the theorem records searched",
            len(summary.ambiguous),
            ", ".join(summary.ambiguous[:3]),
        )
