"""``generate_benchmark()``: trace repositories and write them in the LeanDojo Benchmark layout."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import get_settings
from ..data import SplitSpec
from ..data.dataset import default_metadata, write_split_dataset
from .repo import LeanGitRepo
from .traced_repo import TracedRepo
from .tracing import trace

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

RepoSpec = LeanGitRepo | str | os.PathLike[str] | tuple[str, str | None]


@dataclass
class BenchmarkResult:
    """What one repository became: its trace, where the dataset is, and the split sizes."""

    traced_repo: TracedRepo
    path: Path
    total_theorems: int
    splits: dict[str, dict[str, int]]


def _repos(repos: RepoSpec | Iterable[RepoSpec]) -> list[LeanGitRepo]:
    if isinstance(repos, (LeanGitRepo, str, os.PathLike)):
        repos = [repos]
    elif (
        isinstance(repos, tuple)
        and len(repos) == 2
        and all(isinstance(x, str) or x is None for x in repos)
    ):
        repos = [repos]  # one (url, commit) pair
    out = []
    for r in repos:  # type: ignore[union-attr]
        if isinstance(r, LeanGitRepo):
            out.append(r)
        elif isinstance(r, tuple):
            url, commit = r
            out.append(LeanGitRepo(url, commit))
        else:
            out.append(LeanGitRepo(os.fspath(r), None))
    return out


def dataset_dir_name(repo: LeanGitRepo) -> str:
    return f"{repo.name}_{repo.commit}"


def generate_benchmark(
    repos: RepoSpec | Iterable[RepoSpec],
    build_deps: bool = True,
    output_dir: str | os.PathLike[str] | None = None,
    *,
    spec: SplitSpec | None = None,
    on_error: str = "raise",
    **trace_kwargs: Any,
) -> list[BenchmarkResult]:
    """Trace each repository and write ``<output_dir>/<name>_<commit>/`` in the LeanDojo layout
    (``random/`` and ``novel_premises/`` splits, ``corpus.jsonl`` in dependency order,
    ``traced_files.jsonl``, ``metadata.json``).

    ``repos`` is one repository (a :class:`LeanGitRepo`, URL or path, or a ``(url, commit)``
    pair) or a list of them. ``output_dir`` defaults to ``RAID_DIR/data``. Splits follow
    ``spec`` (default :class:`SplitSpec`: hash-stable, sorry theorems never in train).
    """
    out_dir = Path(output_dir) if output_dir is not None else get_settings().data_dir
    results = []
    for repo in _repos(repos):
        traced = trace(repo, build_deps=build_deps, on_error=on_error, **trace_kwargs)
        results.append(write_benchmark(traced, out_dir / dataset_dir_name(repo), spec))
    return results


def write_benchmark(
    traced: TracedRepo, dst: str | os.PathLike[str], spec: SplitSpec | None = None
) -> BenchmarkResult:
    """Write one traced repository to ``dst`` in the LeanDojo layout (atomically: a reader sees
    the old directory or the new one)."""
    dst = Path(dst)
    theorems = list(traced.theorems())
    meta = default_metadata(
        from_repo={"url": traced.url, "commit": traced.commit},
        lean_version=traced.lean_version,
        build_deps=traced.build_deps,
        num_traced_files=len(traced.files),
        failed_files=sorted(traced.failures),
    )
    sizes = write_split_dataset(
        dst,
        theorems,
        spec,
        corpus=traced.premise_files(),
        traced_files=sorted(traced.files),
        metadata=meta,
    )
    logger.info("wrote %d theorems of %s to %s", len(theorems), traced.url, dst)
    return BenchmarkResult(traced, dst, len(theorems), sizes)
