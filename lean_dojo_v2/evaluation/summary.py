"""Layer 4 (evaluation): the result of an evaluation — :class:`EvalResult` — and the files made
from it: ``summary.json`` and ``putnambench_entry.json``.

``summary.json`` holds the number to put in a table and how it was made: ``benchmark``, ``mode``,
``verifier``, ``model``, ``n``, ``attempted``, ``solved``, ``pass_at`` (``{"1": …, str(n): …}``,
the unbiased estimator, a fraction; None with ``early_stop``), ``solved_at`` (problems with an
accepted proof among their first k samples, for the same ks), ``checked_by`` (how many
problems each verifier accepted), ``budget`` (the totals), ``problems`` (per problem:
``solved``, ``attempts``, ``correct``, ``correct_samples``, ``status``, ``proof``, ``budget``,
``header``, ``formal_statement``) and ``settings``.

``putnambench_entry.json`` is the entry PutnamBench's leaderboard lists (its ``results.json``):
``{MODEL: {"link", "open-data", "num-solved": {"lean-wsolution": N}, "size",
"condensed-compute-budget", "note"}}`` with the solved problems and the budget in the note;
``link``, ``open-data`` and ``size`` (billions of parameters) are for the submitter to fill in.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .attempts import ProblemOutcome
from .budget import Budget
from .passk import ProblemSamples, pass_at_table, solved_within

SUMMARY_FILE = "summary.json"
PUTNAMBENCH_FILE = "putnambench_entry.json"

__all__ = [
    "EvalResult",
    "PUTNAMBENCH_FILE",
    "SUMMARY_FILE",
    "putnambench_entry",
    "write_json",
]


@dataclass
class EvalResult:
    """What :func:`~lean_dojo_v2.evaluation.evaluate` returns (and ``summary.json`` holds).

    ``problems``: every problem evaluated, in the benchmark's order; ``n``: samples per problem
    (1 in tactic mode); ``pass_at``: None with ``early_stop`` (a problem stopped at its first
    success has no n samples to estimate from; ``solved_at`` still counts)."""

    benchmark: str
    mode: str
    verifier: str
    model: str
    n: int
    early_stop: bool
    problems: list[ProblemOutcome]
    out: Path
    settings: dict[str, Any] = field(default_factory=dict)
    statements: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``{problem: (header, formal_statement)}``, for the summary and the report."""

    @property
    def attempted(self) -> int:
        return len(self.problems)

    @property
    def solved(self) -> int:
        return sum(p.solved for p in self.problems)

    @property
    def solved_names(self) -> list[str]:
        return [p.name for p in self.problems if p.solved]

    @property
    def budget(self) -> Budget:
        """The totals over every problem."""
        return Budget.total(p.budget for p in self.problems)

    def _samples(self) -> list[ProblemSamples]:
        return [ProblemSamples(p.name, frozenset(p.correct_samples)) for p in self.problems]

    @property
    def pass_at(self) -> dict[str, float] | None:
        """pass@k for k = 1..n (a fraction of the problems); None with ``early_stop``."""
        if self.early_stop:
            return None
        return {k: round(v, 6) for k, v in pass_at_table(self._samples(), self.n).items()}

    @property
    def solved_at(self) -> dict[str, int]:
        """Problems with an accepted proof among their first k samples, k = 1..n."""
        return solved_within(self._samples(), range(1, self.n + 1))

    @property
    def checked_by(self) -> dict[str, int]:
        return dict(Counter(p.checked_by or "?" for p in self.problems if p.solved))

    def to_dict(self) -> dict[str, Any]:
        """``summary.json`` (see the module docstring)."""
        problems: dict[str, Any] = {}
        for p in self.problems:
            entry: dict[str, Any] = {
                "solved": p.solved,
                "attempts": p.attempts,
                "correct": p.correct,
                "correct_samples": list(p.correct_samples),
                "status": p.status,
                "checked_by": p.checked_by,
                "proof": p.proof,
                "error": p.error,
                "budget": p.budget.to_dict(),
            }
            header, statement = self.statements.get(p.name, ("", ""))
            if statement:
                entry.update(header=header, formal_statement=statement)
            problems[p.name] = entry
        return {
            "benchmark": self.benchmark,
            "mode": self.mode,
            "verifier": self.verifier,
            "model": self.model,
            "n": self.n,
            "early_stop": self.early_stop,
            "attempted": self.attempted,
            "solved": self.solved,
            "solved_problems": self.solved_names,
            "pass_at": self.pass_at,
            "solved_at": self.solved_at,
            "checked_by": self.checked_by,
            "budget": self.budget.to_dict(),
            "out": str(self.out),
            "settings": self.settings,
            "problems": problems,
        }

    def line(self) -> dict[str, Any]:
        """The ``--json`` line: the summary without the per-problem entries."""
        data = self.to_dict()
        data.pop("problems")
        return data


def condensed_budget(result: EvalResult) -> str:
    """PutnamBench's ``condensed-compute-budget``: ``pass@n`` (whole), ``pass@n x rounds``
    (refine), ``pass@1 x samples x expansions`` (tactic search)."""
    s = result.settings
    if result.mode == "tactic":
        return f"pass@1x{s.get('num_samples', '?')}x{s.get('max_expansions', '?')}"
    if result.mode == "refine":
        return f"pass@{result.n}x{int(s.get('refine_rounds', 0)) + 1}"
    return f"pass@{result.n}"


def _putnam_name(name: str) -> str:
    """``putnam_1977_a3`` → ``1977 A3``, as the leaderboard's notes write them."""
    m = re.fullmatch(r"putnam_(\d{4})_([ab])(\d+)", name)
    return f"{m[1]} {m[2].upper()}{m[3]}" if m else name


def putnambench_entry(result: EvalResult) -> dict[str, Any]:
    """The leaderboard entry (see the module docstring)."""
    b = result.budget
    s = result.settings
    sampling = f" w/ T={s['temperature']}" if s.get("temperature") is not None else ""
    spent = [
        f"{b.attempts} proofs checked",
        f"{b.tokens_in + b.tokens_out} tokens ({b.tokens_in} in, {b.tokens_out} out)",
        f"{b.lean_calls} Lean calls",
        f"{b.lean_cpu_seconds:.0f} Lean CPU s",
        f"{b.generator_seconds:.0f} generator s",
    ]
    if b.gpu_seconds:
        spent.append(f"{b.gpu_seconds:.0f} GPU s")
    if b.dollars is not None:
        spent.append(f"cost: ${b.dollars:.2f}")
    solved = ", ".join(_putnam_name(n) for n in result.solved_names) or "none"
    note = (
        f"{condensed_budget(result)}{sampling}; {result.mode} mode, verified by "
        f"{result.verifier}, evaluated with lean-dojo-v2 eval prove; {'; '.join(spent)}; "
        f"solved: {solved}."
    )
    return {
        result.model: {
            "link": "",
            "open-data": "NONE",
            "num-solved": {"lean-wsolution": result.solved},
            "size": 0,
            "condensed-compute-budget": condensed_budget(result),
            "note": note,
        }
    }


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write ``data`` to ``path`` atomically (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
    os.replace(tmp, path)
    return path
