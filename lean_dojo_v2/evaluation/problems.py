"""Layer 4 (evaluation): what an evaluation proves — :class:`Problem` (one statement) and
:class:`Benchmark` (problems with their origin and licence). :mod:`.benchmarks` loads them.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction.standalone import standalone_theorem
from .errors import UnknownProblemError

__all__ = ["Benchmark", "Problem"]


@dataclass(frozen=True)
class Problem:
    """One statement to prove.

    ``name``: unique within its benchmark. ``header``: what comes before the statement
    (``import``, ``set_option``, ``open`` lines, definitions it uses); ``""`` for a LeanDojo
    dataset's theorem, whose context is its file. ``formal_statement``: the declaration up to
    and including ``:= by``, no proof, no comments. ``informal_statement``: the problem in
    words, where the benchmark gives it. ``split``: the benchmark's split. ``goal``: the initial
    goal as Lean printed it, where the benchmark records it. ``theorem``: a LeanDojo dataset's
    own theorem (None for a standalone statement)."""

    name: str
    header: str
    formal_statement: str
    informal_statement: str | None = None
    split: str | None = None
    goal: str | None = None
    # not compared: a problem is its name and text (a Theorem is mutable, so unhashable)
    theorem: Theorem | None = field(default=None, compare=False)

    def to_theorem(self) -> Theorem:
        """The theorem the pipeline proves: the dataset's own, or the standalone statement that
        environments start and verify from ``header`` + ``formal_statement``."""
        if self.theorem is not None:
            return self.theorem
        return standalone_theorem(
            self.name,
            self.header,
            self.formal_statement,
            goal=self.goal,
            informal=self.informal_statement,
        )


@dataclass(frozen=True)
class Benchmark:
    """Problems with where they come from: ``source`` (origin, commit, file; or the path
    given), ``licence``, ``lean_version`` (the Lean the statements were written for, where
    known) and ``data`` (a LeanDojo dataset's directory, for the replay verifier)."""

    name: str
    problems: tuple[Problem, ...]
    source: str
    licence: str
    lean_version: str | None = None
    data: str | None = None

    def __len__(self) -> int:
        return len(self.problems)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.problems]

    def problem(self, name: str) -> Problem:
        """The problem called ``name``; :class:`UnknownProblemError` names the closest."""
        for p in self.problems:
            if p.name == name:
                return p
        raise UnknownProblemError(_unknown_problem(name, self))

    def select(self, problems: Sequence[str] | None = None, limit: int | None = None) -> Benchmark:
        """The problems named (in the order given, each once), then the first ``limit``."""
        chosen = self.problems
        if problems:
            by_name = {p.name: p for p in self.problems}
            missing = [n for n in problems if n not in by_name]
            if missing:
                raise UnknownProblemError(_unknown_problem(missing[0], self))
            chosen = tuple(by_name[n] for n in dict.fromkeys(problems))
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ConfigError(f"limit must be a whole number >= 1, got {limit!r}")
            chosen = chosen[:limit]
        return replace(self, problems=chosen)


def _unknown_problem(name: str, benchmark: Benchmark) -> str:
    close = difflib.get_close_matches(name, benchmark.names, n=3, cutoff=0.6)
    hint = f"closest: {', '.join(close)}" if close else f"e.g. {benchmark.names[0]}"
    return f"{name!r} is not a problem of {benchmark.name} ({len(benchmark)} problems; {hint})"
