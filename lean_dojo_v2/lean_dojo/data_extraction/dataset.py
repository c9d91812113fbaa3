"""Upstream path ``lean_dojo_v2.lean_dojo.data_extraction.dataset``: benchmark generation.

Re-exports :func:`~lean_dojo_v2.lean_dojo.generate_benchmark` (the same object), which takes the
form the upstream README documents::

    generate_benchmark(repos=[(url, commit)], build_deps=True, output_dir="raid/data")

and writes ``<output_dir>/<name>_<commit>/`` in the LeanDojo layout, returning one
``BenchmarkResult`` per repository (``traced_repo``, ``path``, ``total_theorems``, ``splits``).
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_SPLITS = "splits are lean_dojo_v2.data.split_theorems / split_random / split_novel_premises"
_EXPORT = "lean_dojo_v2.lean_dojo.benchmark.write_benchmark writes a traced repository"

_EXPORTS = {"generate_benchmark": "lean_dojo_v2.lean_dojo"}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "split_data": _SPLITS,
        "split_randomly": _SPLITS,
        "split_by_premise": _SPLITS,
        "export_data": _EXPORT,
        "export_proofs": _EXPORT,
        "export_premises": _EXPORT,
        "export_metadata": _EXPORT,
        "setup_lean_environment": "trace() finds the project's toolchain through elan or PATH",
    },
)
