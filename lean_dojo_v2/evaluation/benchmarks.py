"""Layer 4 (evaluation): the problems an evaluation proves, loaded by name.

::

    from lean_dojo_v2.evaluation import load_benchmark

    bench = load_benchmark("minif2f-test")              # 244 problems, with their headers
    bench = load_benchmark("putnambench", problems=["putnam_1962_a1"])
    bench = load_benchmark("my_problems.jsonl")          # {name, header, formal_statement[, …]}
    bench = load_benchmark("leandojo", data=Path("raid/data/mathlib"), split="test")

Bundled (``lean_dojo_v2/resources/benchmarks/``, each folder with its ``SOURCE`` and licence):
``minif2f-test`` and ``minif2f-valid`` (244 + 244) and ``proofnet-test`` and ``proofnet-valid``
(186 + 185) as DeepSeek-Prover-V1.5 released them (MIT), ``putnambench`` (672, Apache-2.0; read
by :mod:`.putnambench`, comments taken out). A user's JSONL and any split of a LeanDojo dataset
load the same way. A :class:`Problem` becomes the :class:`~lean_dojo_v2.data.model.Theorem` the
proving pipeline proves with :meth:`Problem.to_theorem`: a standalone statement
(:mod:`lean_dojo_v2.interaction.standalone`) or, for a LeanDojo dataset, its own theorem.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..data.jsonio import loads
from ..errors import ConfigError, DataFormatError
from .errors import UnknownBenchmarkError
from .problems import Benchmark, Problem
from .putnambench import load_putnambench
from .statements import check_statement

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "Problem",
    "bundled_benchmarks_dir",
    "informal_text",
    "load_benchmark",
    "load_jsonl",
]

BENCHMARKS: tuple[str, ...] = (
    "minif2f-test",
    "minif2f-valid",
    "proofnet-test",
    "proofnet-valid",
    "putnambench",
)
LEANDOJO = "leandojo"
"""The name that loads a split of a LeanDojo dataset (with ``data=DIR``)."""

_DEEPSEEK = {
    "minif2f": (
        "miniF2F as DeepSeek-Prover-V1.5 released it (github.com/deepseek-ai/DeepSeek-Prover-V1.5 "
        "@ 2c4ba91, datasets/minif2f.jsonl)"
    ),
    "proofnet": (
        "ProofNet as DeepSeek-Prover-V1.5 released it (github.com/deepseek-ai/DeepSeek-Prover-V1.5 "
        "@ 2c4ba91, datasets/proofnet.jsonl)"
    ),
}
DEEPSEEK_LEAN = "leanprover/lean4:v4.9.0"
"""The Lean DeepSeek-Prover-V1.5's statements were written for (its README: "Lean 4 version
4.9")."""


def bundled_benchmarks_dir() -> Path:
    """Where the bundled benchmarks lie (read-only package data)."""
    return Path(__file__).resolve().parent.parent / "resources" / "benchmarks"


def load_benchmark(
    name_or_path: str | Path,
    *,
    data: Path | None = None,
    split: str | None = None,
    problems: Sequence[str] | None = None,
    limit: int | None = None,
) -> Benchmark:
    """A benchmark by name (:data:`BENCHMARKS`), a user's JSONL file of
    ``{name, header, formal_statement[, informal_statement]}`` lines, or (``"leandojo"`` with
    ``data=DIR``) the theorems of a LeanDojo dataset's ``split`` (``test``, ``val``, ``train``,
    ``all``; ``novel_premises/test`` for the other strategy; default ``test``). ``problems``
    keeps those named, ``limit`` the first so many. Errors: :class:`UnknownBenchmarkError`,
    :class:`UnknownProblemError`, :class:`~.errors.StatementError`,
    :class:`~lean_dojo_v2.errors.DataFormatError` (a bad JSONL line)."""
    if data is not None or str(name_or_path) == LEANDOJO:
        if data is None:
            raise ConfigError(
                "the leandojo benchmark is a LeanDojo dataset's split: give data=DIR (--data DIR)"
            )
        bench = _leandojo(Path(data), split or "test")
    else:
        key = str(name_or_path).strip().lower().replace("_", "-")
        if key in BENCHMARKS:
            bench = _bundled(key)
        else:
            path = Path(name_or_path).expanduser()
            if not path.is_file():
                raise UnknownBenchmarkError(_unknown_benchmark(str(name_or_path), path))
            bench = load_jsonl(path)
        if split is not None:
            bench = replace(
                bench,
                problems=tuple(p for p in bench.problems if p.split == split),
                name=f"{bench.name}:{split}",
            )
    return bench.select(problems, limit)


def _unknown_benchmark(name: str, path: Path) -> str:
    close = difflib.get_close_matches(name.lower(), BENCHMARKS, n=1, cutoff=0.6)
    known = ", ".join(BENCHMARKS)
    if close:
        return f"unknown benchmark {name!r} (did you mean {close[0]}?); bundled: {known}"
    if path.suffix == ".jsonl" or "/" in name:
        return f"no benchmark file at {path}: give a JSONL file of problems or one of {known}"
    return (
        f"unknown benchmark {name!r}: choose one of {known}, a JSONL file of problems "
        "({name, header, formal_statement}), or a LeanDojo dataset (--data DIR --split test)"
    )


@functools.cache
def _bundled(name: str) -> Benchmark:
    root = bundled_benchmarks_dir()
    if name == "putnambench":
        return load_putnambench(root / "putnambench")
    family, _, split = name.partition("-")
    path = root / "deepseek_prover_v15" / f"{family}.jsonl"
    problems = _numbered([p for p in _read_problems(path, unique=False) if p.split == split])
    return Benchmark(name, problems, _DEEPSEEK[family], "MIT", DEEPSEEK_LEAN)


def _numbered(problems: list[Problem]) -> tuple[Problem, ...]:
    """Problems with unique names: ProofNet's release names exercises of different textbooks
    alike (``exercise_3_3`` twice); the second is ``exercise_3_3#2``, and so on, in file order."""
    seen: dict[str, int] = {}
    out = []
    for p in problems:
        k = seen[p.name] = seen.get(p.name, 0) + 1
        out.append(p if k == 1 else replace(p, name=f"{p.name}#{k}"))
    return tuple(out)


def informal_text(prefix: str | None) -> str | None:
    """DeepSeek-Prover's ``informal_prefix`` (``/-- … -/``) as plain text; None when empty."""
    if not prefix:
        return None
    text = prefix.strip()
    if text.startswith("/-"):
        text = text.removeprefix("/--").removeprefix("/-")
        text = text.removesuffix("-/")
    return text.strip() or None


def _read_problems(path: Path, *, unique: bool = True) -> list[Problem]:
    """The problems of a JSONL file, each line checked (see :func:`load_jsonl`); ``unique``:
    a name used twice is an error."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"cannot read it: {exc}", file=path) from None
    problems: list[Problem] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = loads(line, record=number)
        except DataFormatError as exc:
            raise DataFormatError(f"line {number} is not JSON ({exc.reason})", file=path) from None
        problem = _problem(row, path, number)
        if unique and problem.name in seen:
            raise DataFormatError(
                f"line {number}: a second problem named {problem.name!r}; names must be unique",
                file=path,
            )
        seen.add(problem.name)
        problems.append(problem)
    return problems


def _field(row: Mapping[str, object], key: str, path: Path, number: int) -> str | None:
    value = row.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DataFormatError(
        f"line {number}: expected a string, got {type(value).__name__}", file=path, field=key
    )


def _problem(row: object, path: Path, number: int) -> Problem:
    if not isinstance(row, dict):
        raise DataFormatError(f"line {number} is not a JSON object", file=path)
    fields = {k: _field(row, k, path, number) for k in (
        "name", "header", "formal_statement", "informal_statement", "informal_prefix", "split",
        "goal",
    )}  # fmt: skip
    for key in ("name", "header", "formal_statement"):
        if fields[key] is None:
            raise DataFormatError(
                f"line {number} has no {key!r}: each line is {{name, header, formal_statement"
                "[, informal_statement]}",
                file=path,
                field=key,
            )
    name = fields["name"] or ""
    if not name.strip():
        raise DataFormatError(f"line {number}: the name is empty", file=path, field="name")
    statement = check_statement(
        fields["formal_statement"] or "", f"problem {name!r} ({path.name} line {number})"
    )
    return Problem(
        name=name,
        header=fields["header"] or "",
        formal_statement=statement,
        informal_statement=fields["informal_statement"] or informal_text(fields["informal_prefix"]),
        split=fields["split"],
        goal=fields["goal"],
    )


def load_jsonl(path: str | Path) -> Benchmark:
    """A user's benchmark: one JSON object a line, ``{name, header, formal_statement[,
    informal_statement]}`` (DeepSeek-Prover's ``informal_prefix``, ``split`` and ``goal`` are
    read too; other keys are ignored). Names must be unique; every statement is checked."""
    path = Path(path).expanduser()
    problems = tuple(_read_problems(path))
    if not problems:
        raise DataFormatError("no problems in it (one JSON object a line)", file=path)
    return Benchmark(path.stem, problems, str(path.resolve()), "as its author licenses it")


def _leandojo(data: Path, split: str) -> Benchmark:
    """The theorems of one split of a LeanDojo dataset, as ``prove --data DIR --split`` reads
    them (strategy ``random`` unless ``split`` says ``novel_premises/…``)."""
    from ..data.dataset import DatasetDir
    from ..errors import DatasetNotFoundError

    if not data.is_dir():
        raise DatasetNotFoundError(
            f"no dataset directory at {data}; pass a LeanDojo-layout dataset (random/, "
            "novel_premises/, corpus.jsonl)"
        )
    strategy, _, part = split.rpartition("/")
    strategy = strategy or "random"
    d = DatasetDir(data)
    theorems = list(d.all_theorems(strategy)) if part == "all" else d.theorems(strategy, part)
    if not theorems:
        raise ConfigError(f"{data} ({strategy}/{part}) holds no theorem; choose another split")
    counts: dict[str, int] = {}
    for t in theorems:
        counts[t.full_name] = counts.get(t.full_name, 0) + 1
    problems = tuple(
        Problem(
            # a name two files declare is told apart by its file
            name=t.full_name if counts[t.full_name] == 1 else f"{t.full_name}@{t.file_path}",
            header="",
            formal_statement=t.theorem_statement or "",
            split=part,
            theorem=t,
        )
        for t in theorems
    )
    return Benchmark(
        f"{data.name}:{strategy}/{part}",
        problems,
        str(data.resolve()),
        "that of the traced repository",
        data=str(data.resolve()),
    )
