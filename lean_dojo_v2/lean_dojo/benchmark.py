"""``generate_benchmark()``: trace repositories and write them in the LeanDojo Benchmark layout."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import get_settings
from ..data import SplitSpec
from ..data.dataset import default_metadata, write_split_dataset
from ..errors import ConfigError
from .repo import LeanGitRepo
from .traced_repo import TracedRepo
from .tracing import trace

if TYPE_CHECKING:
    from typing_extensions import TypeIs

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

RepoSpec = LeanGitRepo | str | os.PathLike[str] | tuple[str, str | None]

# The call to show when arguments are wrong (upstream 1.0.9 was generate_benchmark(repo, dst_dir,
# build_deps), with dst_dir the dataset directory itself).
_RIGHT_CALL = (
    "Call generate_benchmark(repos, build_deps=True, output_dir=PARENT), e.g. "
    "generate_benchmark([(url, commit)], build_deps=True, output_dir='raid/data'), which writes "
    "raid/data/<name>_<commit>/ (upstream's generate_benchmark(repo, dst_dir, build_deps) is "
    "generate_benchmark(repo, build_deps=build_deps, output_dir=<parent of dst_dir>))"
)


@dataclass
class BenchmarkResult:
    """What one repository became: its trace, where the dataset is, and the split sizes."""

    traced_repo: TracedRepo
    path: Path
    total_theorems: int
    splits: dict[str, dict[str, int]]


_ONE_REPO = (LeanGitRepo, str, os.PathLike)


def _is_pair(x: object) -> TypeIs[tuple[str, str | None]]:
    """``(url, commit)`` with a commit of None for the default branch."""
    return (
        isinstance(x, tuple)
        and len(x) == 2
        and isinstance(x[0], str)
        and (isinstance(x[1], str) or x[1] is None)
    )


def _check_arguments(
    repos: object, build_deps: object, output_dir: object, spec: object, on_error: object
) -> None:
    """Refuse wrong-typed arguments before anything is traced, showing the right call."""
    problems = []
    if not isinstance(build_deps, bool):
        problems.append(f"build_deps must be True or False, not {build_deps!r}")
    if output_dir is not None and (
        isinstance(output_dir, bool) or not isinstance(output_dir, (str, os.PathLike))
    ):
        problems.append(f"output_dir must be a directory path or None, not {output_dir!r}")
    if spec is not None and not isinstance(spec, SplitSpec):
        problems.append(f"spec must be a lean_dojo_v2.data.SplitSpec or None, not {spec!r}")
    if on_error not in ("raise", "warn"):
        problems.append(f"on_error must be 'raise' or 'warn', not {on_error!r}")
    if not isinstance(repos, _ONE_REPO) and not _is_pair(repos):
        if not isinstance(repos, list):
            problems.append(
                "repos must be a repository (LeanGitRepo, URL, path or (url, commit)) or a list "
                f"of them, not {repos!r}"
            )
        else:
            bad = [r for r in repos if not isinstance(r, _ONE_REPO) and not _is_pair(r)]
            if bad:
                problems.append(
                    "each repository must be a LeanGitRepo, a URL, a path or a (url, commit) "
                    f"pair, not {bad[0]!r}"
                )
    if problems:
        raise ConfigError(f"generate_benchmark: {'; '.join(problems)}. {_RIGHT_CALL}.")


def _repos(repos: RepoSpec | Iterable[RepoSpec]) -> list[LeanGitRepo]:
    items = [repos] if isinstance(repos, _ONE_REPO) or _is_pair(repos) else repos
    out = []
    for r in items:
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
    ``spec`` (default :class:`SplitSpec`: hash-stable, sorry theorems never in train). Other
    keyword arguments go to :func:`trace` (``workers``, ``timeout``, ``force``, ...).

    A wrong-typed argument (such as upstream's positional ``generate_benchmark(repo, dst_dir,
    build_deps)``, which would put the path into ``build_deps``) or ``dst_dir=`` raises
    :class:`~lean_dojo_v2.errors.ConfigError` showing the right call, before anything is traced.
    """
    if not isinstance(repos, _ONE_REPO) and not _is_pair(repos) and isinstance(repos, Iterable):
        repos = list(repos)  # read a generator once
    _check_arguments(repos, build_deps, output_dir, spec, on_error)
    if "dst_dir" in trace_kwargs:
        raise ConfigError(
            f"generate_benchmark takes no dst_dir (got {trace_kwargs['dst_dir']!r}): "
            f"{_RIGHT_CALL}. To copy the traced checkout somewhere, call trace(repo, dst_dir=...)."
        )
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
