"""Small read-only records returned by the database (no theorem lists inside)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from ..data import Theorem
from .difficulty import theorem_difficulty


@dataclass(frozen=True)
class RepositoryInfo:
    """One repository version (url + commit) in the database, with its counts.

    Unlike the upstream ``Repository`` it does not hold the theorems: iterate them with
    ``db.theorems(repository=info)`` or materialise with ``db.load_repository(info)``.
    """

    id: int
    url: str
    name: str
    commit: str
    lean_version: str | None
    lean_dojo_version: str | None
    date_processed: str
    metadata: dict[str, Any] = field(hash=False, compare=False)
    pr_url: str | None = None
    num_proven_theorems: int = 0
    num_sorry_theorems_unproved: int = 0
    num_sorry_theorems_proved: int = 0
    num_tactics: int = 0
    num_premise_files: int = 0
    num_premises: int = 0
    num_files_traced: int = 0

    @property
    def total_theorems(self) -> int:
        return (
            self.num_proven_theorems
            + self.num_sorry_theorems_unproved
            + self.num_sorry_theorems_proved
        )

    @property
    def num_sorry_theorems(self) -> int:
        return self.num_sorry_theorems_unproved + self.num_sorry_theorems_proved

    @property
    def processed_datetime(self) -> _dt.datetime:
        return _dt.datetime.fromisoformat(self.date_processed)

    def __str__(self) -> str:
        # The upstream's directory-friendly form.
        return f"{self.name}_{self.commit}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "name": self.name,
            "commit": self.commit,
            "lean_version": self.lean_version,
            "lean_dojo_version": self.lean_dojo_version,
            "date_processed": self.date_processed,
            "total_theorems": self.total_theorems,
            "num_proven_theorems": self.num_proven_theorems,
            "num_sorry_theorems_unproved": self.num_sorry_theorems_unproved,
            "num_sorry_theorems_proved": self.num_sorry_theorems_proved,
            "num_tactics": self.num_tactics,
            "num_premise_files": self.num_premise_files,
            "num_premises": self.num_premises,
            "num_files_traced": self.num_files_traced,
        }


@dataclass
class StoredTheorem:
    """A theorem as stored: the record plus what the database knows about it."""

    id: int
    repository_id: int
    theorem: Theorem
    sorry_status: str
    sorry_source: str | None
    proof_steps: int | None
    upstream_difficulty: str | None = None  # difficulty_rating as read from an upstream file

    @property
    def steps(self) -> int:
        """Proof length used for difficulty: the found proof's for a proved sorry, else the
        traced tactics'."""
        if self.sorry_status == "sorry_proved" and self.proof_steps is not None:
            return self.proof_steps
        return self.theorem.num_tactics

    @property
    def difficulty(self) -> float | None:
        return theorem_difficulty(self.steps, self.sorry_status == "sorry_unproved")


@dataclass(frozen=True)
class ProofRecord:
    """A proof found for a theorem."""

    id: int
    theorem_id: int
    tactics: list[dict[str, str]] = field(hash=False)
    proof_text: str = ""
    backend: str = "unknown"
    verified: bool = False
    time_s: float | None = None
    model: str | None = None
    training_run_id: int | None = None
    found_at: str = ""

    @property
    def tactic_texts(self) -> list[str]:
        return [t["tactic"] for t in self.tactics]


@dataclass(frozen=True)
class TrainingRun:
    id: int
    kind: str
    model: str | None
    status: str
    started_at: str
    finished_at: str | None
    config: dict[str, Any] = field(hash=False)
    metrics: dict[str, Any] = field(hash=False)
    checkpoint: str | None
    repository_ids: list[int] = field(hash=False)
