"""Write a LeanProgress JSONL dataset built from real traced proofs.

    python -m lean_dojo_v2.lean_progress.create_sample_dataset --output PATH [--data DIR|FILE] [--force]

Without ``--data`` it reads the LeanDojo Benchmark 4 sample bundled with the package
(:func:`lean_dojo_v2.data.sample_dataset_path`: 100 real mathlib theorems, 158 traced tactics);
``--data`` takes any LeanDojo-layout dataset directory or split file. One row per traced tactic,
labelled by the rule of :mod:`lean_dojo_v2.lean_progress.labels`. An existing ``PATH`` is never
overwritten unless ``--force`` is given.

``SAMPLE_DATA`` (upstream's name) is the list of rows :func:`main` writes by default, built from
the bundled sample on first access (a lazy module attribute: importing reads no file).

The module itself is callable as :func:`create_sample_dataset`: ``from lean_dojo_v2.lean_progress
import create_sample_dataset`` gives this module, which upstream's code uses as a module
(``.main()``, ``.parse_args``, ``.SAMPLE_DATA``) and ours as the function (``create_sample_dataset(
output)``).
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import EmptyDatasetError, LeanDojoError

DEFAULT_OUTPUT = "raid/data/sample_leanprogress_dataset.jsonl"


def create_sample_dataset(
    output: str | Path, data: str | Path | None = None, *, force: bool = False
) -> dict[str, object]:
    """Write the LeanProgress JSONL of ``data`` (default: the bundled sample) to ``output``;
    returns a summary (path, rows, theorems, label histogram)."""
    from ..data import load_theorems, sample_dataset_path
    from ..data.progress_jsonl import write_progress_jsonl
    from .dataset import progress_examples

    source = Path(data) if data is not None else sample_dataset_path()
    theorems = load_theorems(source)
    examples = list(progress_examples(theorems))
    if not examples:
        raise EmptyDatasetError(
            f"{source} has {len(theorems)} theorems but no traced tactics (term-mode proofs only); "
            "give a dataset traced from tactic proofs"
        )
    rows = write_progress_jsonl(output, examples, force=force)
    histogram = Counter(ex.steps_remaining for ex in examples)
    return {
        "output": str(Path(output)),
        "source": str(source),
        "rows": rows,
        "theorems": len({ex.group for ex in examples}),
        "steps_remaining": {str(k): histogram[k] for k in sorted(histogram)},
    }


@functools.cache
def _sample_rows() -> tuple[dict[str, Any], ...]:
    from ..data import load_theorems, sample_dataset_path
    from .dataset import progress_examples

    return tuple(ex.to_dict() for ex in progress_examples(load_theorems(sample_dataset_path())))


def sample_data() -> list[dict[str, Any]]:
    """The rows :func:`main` writes without ``--data`` (a fresh copy each call)."""
    return [dict(row) for row in _sample_rows()]


def __getattr__(name: str) -> list[dict[str, Any]]:
    if name == "SAMPLE_DATA":
        return sample_data()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lean_dojo_v2.lean_progress.create_sample_dataset",
        description="Write a LeanProgress JSONL file (goal, prefix, tactic, steps_remaining) from "
        "real traced proofs: the bundled LeanDojo Benchmark 4 sample, or --data.",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path(DEFAULT_OUTPUT),
        help=f"the JSONL file to write (default: {DEFAULT_OUTPUT})",
    )
    parser.add_argument(
        "--data",
        metavar="DIR|FILE",
        help="a LeanDojo dataset directory or split file (default: the bundled sample)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    # Upstream's main() calls parse_args() with no argument, and its tests replace parse_args
    # with a function of none that returns only ``output``: keep both working.
    args = parse_args() if argv is None else parse_args(argv)
    data, force = getattr(args, "data", None), getattr(args, "force", False)
    try:
        summary = create_sample_dataset(args.output, data, force=force)
    except LeanDojoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"Wrote {summary['rows']} LeanProgress examples from {summary['theorems']} theorems to "
        f"{Path(args.output).resolve()}"
    )
    return 0


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`create_sample_dataset` (see the module docstring)."""

    def __call__(
        self, output: str | Path, data: str | Path | None = None, *, force: bool = False
    ) -> dict[str, object]:
        return create_sample_dataset(output, data, force=force)


# Only this module object changes class (no I/O): the package exports the module under the
# function's name, and both upstream's module use and our function use keep working.
sys.modules[__name__].__class__ = _CallableModule


if __name__ == "__main__":
    sys.exit(main())
