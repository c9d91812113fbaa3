"""Layer 4 (evaluation): PutnamBench's Lean files as problems.

Each file is a header (``import Mathlib``, ``open …``, for 346 problems ``abbrev
putnam_…_solution : T := sorry``, sometimes definitions) and one theorem with a doc comment (the
problem in words) and ``:= sorry``. Some files write the expected answer in a comment after the
``abbrev``; a model must never see it, so every comment is taken out
(:func:`~.statements.remove_comments`) before anything becomes part of a problem. The doc
comment becomes ``informal_statement``; nothing else of a comment survives.

A problem with an ``abbrev …_solution := sorry`` in its header asks for the answer too: a proof
that leaves the answer ``sorry`` depends on ``sorryAx``, which the Lean verifier's axiom check
refuses.
"""

from __future__ import annotations

from pathlib import Path

from ..data.jsonio import loads
from ..data.lean_lexer import iter_commands
from ..errors import DataFormatError
from .problems import Benchmark, Problem
from .statements import check_statement, remove_comments

__all__ = ["load_putnambench", "putnam_problem"]

SOURCE = (
    "PutnamBench's Lean 4 formalizations (github.com/trishullab/PutnamBench @ 3c9b926, lean4/src)"
)


def putnam_problem(name: str, text: str) -> Problem:
    """The problem of one PutnamBench ``.lean`` file (its whole text)."""
    commands = [c for c in iter_commands(text) if c.keyword in ("theorem", "lemma")]
    if not commands:
        raise DataFormatError(f"PutnamBench file {name} declares no theorem")
    theorem = commands[-1]
    docs = [t.text for t in theorem.code if t.kind == "doc" and t.start < theorem.keyword_start]
    informal = docs[-1].removeprefix("/--").removesuffix("-/").strip() if docs else None
    header = remove_comments(text[: theorem.start]).rstrip("\n")
    statement = check_statement(
        text[theorem.keyword_start : theorem.end], f"PutnamBench problem {name}"
    )
    return Problem(
        name=name,
        header=header + "\n\n" if header else "",
        formal_statement=statement,
        informal_statement=informal or None,
        split="test",
    )


def load_putnambench(directory: Path) -> Benchmark:
    """The bundled PutnamBench (``putnambench.jsonl``: one ``{"name", "lean"}`` line per
    file, the file's text unchanged; ``lean-toolchain`` beside it)."""
    rows = [
        loads(line)
        for line in (directory / "putnambench.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    problems = tuple(putnam_problem(row["name"], row["lean"]) for row in rows)
    toolchain = (directory / "lean-toolchain").read_text("utf-8").strip()
    return Benchmark("putnambench", problems, SOURCE, "Apache-2.0", toolchain or None)
