"""Layer 4 (evaluation): ``attempts.jsonl``, written as the evaluation goes, and read back to
resume it.

Each problem, when its search ends, gets its lines in one write: one line per attempt (the
attempt's fields with ``problem`` and ``mode``; in tactic mode the search tree too), then one
line that closes the problem::

    {"problem": "mathd_algebra_10", "mode": "whole", "index": 0, "round": 0, "proof": "...", "ok": true, ...}
    {"problem": "mathd_algebra_10", "done": true, "status": "proved", "budget": {...}, ...}

A killed run leaves finished problems closed and at most one half-written group at the end.
:meth:`AttemptLog.resume` keeps the closed problems (they are not proved again), drops every
line of a problem that was not closed or whose search ended in an error (it is proved again
from its first sample, so nothing is counted twice) and rewrites the file with only what it
keeps, atomically. A line of a problem the evaluation does not hold is refused (the summary
counts only the benchmark's problems, the report would show it): the file is left as it is.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.jsonio import loads
from ..errors import DataFormatError
from .budget import Budget

if TYPE_CHECKING:
    from ..prover.result import SearchResult

log = logging.getLogger(__name__)

ATTEMPTS_FILE = "attempts.jsonl"

__all__ = [
    "ATTEMPTS_FILE",
    "AttemptLog",
    "Kept",
    "ProblemOutcome",
    "attempt_records",
    "read_attempt_lines",
]


@dataclass
class ProblemOutcome:
    """One finished problem: ``correct_samples``, the sample numbers a verifier accepted (a
    sample of refine mode counts once, whichever round was accepted); ``attempts``, every
    proof checked (samples times rounds); ``status`` the search's (``proved``, ``failed``,
    ``timeout``, ``error``); ``proof`` the first accepted proof; ``checked_by`` what accepted it
    (``lean``, ``recorded``, ``replay``)."""

    name: str
    status: str
    attempts: int
    correct_samples: list[int] = field(default_factory=list)
    proof: str | None = None
    checked_by: str | None = None
    error: str | None = None
    budget: Budget = field(default_factory=Budget)
    to_solve: dict[str, float] | None = None
    """What the attempts up to and including the first accepted one cost (``attempts``,
    ``tokens``, ``lean_calls``), in sample and round order; None when unsolved. The plot of
    solved against budget is made from it."""

    @property
    def solved(self) -> bool:
        return bool(self.correct_samples)

    @property
    def correct(self) -> int:
        return len(self.correct_samples)

    def to_record(self) -> dict[str, Any]:
        """The line that closes the problem in ``attempts.jsonl``."""
        return {
            "problem": self.name,
            "done": True,
            "status": self.status,
            "solved": self.solved,
            "attempts": self.attempts,
            "correct": self.correct,
            "correct_samples": list(self.correct_samples),
            "proof": self.proof,
            "checked_by": self.checked_by,
            "error": self.error,
            "budget": self.budget.to_dict(),
            "to_solve": self.to_solve,
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> ProblemOutcome:
        samples = data.get("correct_samples") or []
        budget = data.get("budget")
        to_solve = data.get("to_solve")
        return cls(
            name=str(data["problem"]),
            status=str(data.get("status") or "failed"),
            attempts=int(data.get("attempts") or 0),
            correct_samples=sorted({int(i) for i in samples}),
            proof=data.get("proof"),
            checked_by=data.get("checked_by"),
            error=data.get("error"),
            budget=Budget.from_dict(budget if isinstance(budget, Mapping) else {}),
            to_solve=dict(to_solve) if isinstance(to_solve, Mapping) else None,
        )


def attempt_records(result: SearchResult) -> list[dict[str, Any]]:
    """The attempts of a search as plain dicts (``Attempt.to_dict()``), sample and round order.

    A search that reports no attempts (a user's own search; one that failed before trying a
    proof) counts as one attempt: its proof when it proved the theorem, else nothing accepted.
    A tactic-mode search tree (``result.tree``) goes into the last attempt."""
    records = [a.to_dict() for a in result.attempts]
    if not records:
        stats = result.stats or {}
        records.append(
            {
                "index": 0,
                "round": 0,
                "proof": result.proof_text or "",
                "ok": result.proved,
                "checked_by": result.checked_by or result.backend,
                "messages": [result.error] if result.error else list(stats.get("rejections", [])),
                "tokens_in": 0,
                "tokens_out": 0,
                "generator_seconds": float(stats.get("generator_seconds") or 0.0),
                "lean_calls": int(stats.get("tactic_calls") or 0)
                + int(stats.get("verify_calls") or 0),
                "lean_seconds": float(stats.get("env_seconds") or 0.0)
                + float(stats.get("verify_seconds") or 0.0),
                "cached": False,
            }
        )
    if result.tree and records and "tree" not in records[-1]:
        records[-1]["tree"] = [node.to_dict() for node in result.tree]
    return records


@dataclass
class Kept:
    """What resuming keeps of ``attempts.jsonl``: the closed problems by name, and their lines."""

    finished: dict[str, ProblemOutcome] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


class AttemptLog:
    """``attempts.jsonl`` of one output directory (see the module docstring)."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / ATTEMPTS_FILE

    def resume(self, known: Collection[str] | None = None) -> dict[str, ProblemOutcome]:
        """The problems closed in the file, by name; the file rewritten with only their lines
        (:meth:`read`, then :meth:`keep`)."""
        kept = self.read(known)
        self.keep(kept)
        return kept.finished

    def read(self, known: Collection[str] | None = None) -> Kept:
        """What a resumption keeps of the file, nothing written: the problems closed in it and
        their lines. A problem whose search ended in an ``error`` (the generator's server went
        away, Lean crashed: nothing about the problem itself) is not kept: it is proved again,
        like a problem the kill interrupted. ``known``: the evaluation's problems; a line of
        another is a :class:`DataFormatError` (the summary would count it nowhere)."""
        kept = Kept()
        if not self.path.is_file():
            return kept
        pending: dict[str, list[str]] = {}
        errors = 0
        for number, line, record in read_attempt_lines(self.path):
            name = str(record.get("problem"))
            if known is not None and name not in known:
                raise DataFormatError(
                    f"line {number} is of problem {name!r}, which is not in this evaluation's "
                    "benchmark (the file was edited, or holds another evaluation's lines); "
                    "take those lines out, or start again with --force",
                    file=self.path,
                )
            if record.get("done") is not True:
                if name not in kept.finished:
                    pending.setdefault(name, []).append(line)
                continue
            try:
                outcome = ProblemOutcome.from_record(record)
            except (KeyError, TypeError, ValueError) as exc:
                raise DataFormatError(
                    f"line {number} does not close a problem as eval prove writes it ({exc}); "
                    "start again with --force",
                    file=self.path,
                ) from None
            lines = pending.pop(name, [])
            if outcome.status == "error":
                errors += 1
                continue
            kept.finished[name] = outcome
            kept.lines.extend([*lines, line])
        if pending or errors:
            log.info(
                "%s: %d problem(s) were not finished and %d ended in an error; they are proved "
                "again",
                self.path,
                len(pending),
                errors,
            )
        return kept

    def keep(self, kept: Kept) -> None:
        """Rewrite the file with ``kept``'s lines alone, atomically."""
        if not self.path.is_file():
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in kept.lines)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def write_problem(
        self, outcome: ProblemOutcome, attempts: Iterable[Mapping[str, Any]], mode: str
    ) -> None:
        """Append a problem's attempt lines and its closing line in one write, synced to disk
        (a run killed after this keeps the problem)."""
        lines = [
            json.dumps(
                {"problem": outcome.name, "mode": mode, **a}, ensure_ascii=False, default=str
            )
            for a in attempts
        ]
        lines.append(json.dumps(outcome.to_record(), ensure_ascii=False, default=str))
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
            f.flush()
            os.fsync(f.fileno())


def read_attempt_lines(path: Path) -> Iterable[tuple[int, str, dict[str, Any]]]:
    """``(line number, line, record)`` of each JSON object line; a half line at the very end (a
    run killed while writing) is dropped, a broken line elsewhere is an error."""
    try:
        lines = path.read_text("utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(
            f"cannot read it ({exc}); start again with --force", file=path
        ) from exc
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except DataFormatError as exc:
            if i == last:
                log.info("%s: the last line was cut off (a killed run); dropped", path)
                break
            raise DataFormatError(
                f"line {i + 1} is not JSON ({exc}); start again with --force", file=path
            ) from None
        if isinstance(record, dict) and "problem" in record:
            yield i + 1, line, record
