"""``trace()``: from a repository to a :class:`TracedRepo`.

check that the project's Lean toolchain is installed (read through git, before any clone) → clone
→ check out → ``lake exe cache get`` (Mathlib dependents) → ``lake build`` → ``ExtractData.lean`` over the built files (bounded,
memory-aware workers, progress bar) → manifest → parse.

Traces are cached under ``<cache_dir>/traces/<owner>-<name>-<commit>[_d]/`` (``_d``: with
dependencies), keyed by (url, commit, build_deps) and guarded by a file lock, so two processes
tracing the same repository do the work once. A finished trace has a manifest whose
``complete`` is true; anything else in the cache is an interrupted run and is started over.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from filelock import FileLock

from ..config import get_settings
from ..data.jsonio import atomic_write, read_json
from ..errors import CommandError, DataFormatError, LeanDojoError
from ..system.commands import describe, run_command
from .errors import BuildError, DestinationExistsError, ExtractionError
from .extract import EXTRACTOR, ExtractJob, run_extractor
from .layout import LeanSource, ProjectLayout
from .repo import LeanGitRepo
from .toolchain import Toolchain, resolve_toolchain, toolchain_for
from .traced_file import SCHEMA_VERSION
from .traced_repo import MANIFEST, TRACE_DIR, TracedRepo, failure_summary, trace_path

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

BUILD_LOG = "build.log"


def _as_repo(repo: LeanGitRepo | str | os.PathLike[str], commit: str | None = None) -> LeanGitRepo:
    if isinstance(repo, LeanGitRepo):
        return repo
    return LeanGitRepo(os.fspath(repo), commit)


def get_traced_repo_path(repo: LeanGitRepo | str, build_deps: bool = False) -> Path:
    """Where the trace of ``repo`` is (or would be) cached: the checkout's root."""
    r = _as_repo(repo)
    entry = get_settings().cache_dir / "traces" / (r.cache_dirname + ("_d" if build_deps else ""))
    return entry / r.name


def is_available_in_cache(repo: LeanGitRepo | str, build_deps: bool = False) -> bool:
    return _complete(get_traced_repo_path(repo, build_deps))


def _complete(root: Path) -> bool:
    try:
        manifest = read_json(root / TRACE_DIR / MANIFEST)
    except (OSError, DataFormatError):
        return False
    return isinstance(manifest, dict) and manifest.get("complete") is True


class TraceOptions(TypedDict, total=False):
    """The keyword options of :func:`trace` a caller passes on (``trace_repository``)."""

    include_core: bool | None
    workers: int | None
    timeout: float
    on_error: str
    progress: bool
    force: bool


def trace(
    repo: LeanGitRepo | str | os.PathLike[str],
    dst_dir: str | os.PathLike[str] | None = None,
    build_deps: bool = False,
    *,
    commit: str | None = None,
    include_core: bool | None = None,
    workers: int | None = None,
    timeout: float = 3600.0,
    on_error: str = "raise",
    progress: bool = True,
    force: bool = False,
) -> TracedRepo:
    """Trace ``repo`` (a :class:`LeanGitRepo`, a URL or a local path; ``commit`` picks the
    commit for the latter two) and return the :class:`TracedRepo`.

    - ``build_deps``: also trace the dependencies (needed for a complete premise corpus);
      ``include_core`` (default: same as ``build_deps``) also traces Lean's own files.
    - ``dst_dir``: copy the traced checkout there as well.
    - ``workers``: extractor processes at once (default: CPUs, bounded by ``NUM_WORKERS``);
      fewer run when memory is short. ``timeout``: seconds per file.
    - ``on_error``: ``"raise"`` (default) raises :class:`ExtractionError` naming the files of the
      repository that failed; ``"warn"`` keeps the rest. Either way the manifest lists them.
    - ``force``: trace again even if the cache has it.
    """
    r = _as_repo(repo, commit)
    root = get_traced_repo_path(r, build_deps)
    entry = root.parent
    entry.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(entry) + ".lock"):
        if force or not _complete(root):
            if entry.exists():
                logger.info("removing the unfinished trace in %s", entry)
                shutil.rmtree(entry)
            # Before cloning anything big: is the project's Lean there? (read through git)
            if r.toolchain:
                resolve_toolchain(r.toolchain)
            # Traced where it stays (extractor outputs hold absolute .olean paths); the manifest,
            # written last, marks it complete, so an interrupted run is simply started over.
            entry.mkdir(parents=True)
            try:
                _trace_checkout(
                    r,
                    root,
                    build_deps=build_deps,
                    include_core=build_deps if include_core is None else include_core,
                    workers=workers,
                    timeout=timeout,
                    progress=progress,
                )
            except BaseException:
                shutil.rmtree(entry, ignore_errors=True)
                raise
        else:
            logger.info("using the cached trace of %s at %s", r, root)
        traced = TracedRepo.load(root, on_error=on_error, progress=progress)
    if dst_dir is not None:
        dst = Path(dst_dir)
        if dst.exists() and any(dst.iterdir()):
            raise DestinationExistsError(
                f"{dst} exists and is not empty; choose an empty or new directory"
            )
        shutil.copytree(root, dst, symlinks=True, dirs_exist_ok=True)
        traced = TracedRepo.load(dst, on_error="warn")
    return traced


def _run_logged(cmd: Sequence[str], cwd: Path, log: Path, what: str) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        fh.write(f"$ {describe(cmd)}\n".encode())
        fh.flush()
        try:
            return run_command(cmd, cwd=cwd, output=fh, check=False).returncode
        except CommandError as exc:
            raise BuildError(f"cannot run {what}: {exc}") from exc


def _log_tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


def _uses_mathlib(repo: LeanGitRepo) -> bool:
    if repo.name in ("mathlib4", "mathlib"):
        return True
    try:
        deps = repo.get_dependencies()
    except LeanDojoError:  # a broken manifest shows up later, in lake build
        return False
    return "mathlib" in deps


def build(root: Path, toolchain: Toolchain, *, cache_get: bool) -> None:
    """``lake exe cache get`` (when asked; a failure only warns) then ``lake build``;
    :class:`BuildError` with the end of the log when the build fails."""
    log = root / TRACE_DIR / BUILD_LOG
    if cache_get:
        code = _run_logged(toolchain.lake_cmd("exe", "cache", "get"), root, log, "lake")
        if code != 0:
            logger.warning(
                "`lake exe cache get` failed in %s (exit %d); building without the Mathlib "
                "cache, which takes much longer. Log: %s",
                root,
                code,
                log,
            )
    started = time.monotonic()
    logger.info("lake build in %s (log: %s)", root, log)
    code = _run_logged(toolchain.lake_cmd("build"), root, log, "lake")
    if code != 0:
        raise BuildError(
            f"`lake build` failed in {root} (exit {code}). The project must build with its own "
            f"toolchain ({toolchain.name}) before it can be traced. End of the log ({log}):\n"
            + _log_tail(log)
        )
    logger.info("lake build finished in %.0f s", time.monotonic() - started)


def _trace_checkout(
    repo: LeanGitRepo,
    root: Path,
    *,
    build_deps: bool,
    include_core: bool,
    workers: int | None,
    timeout: float,
    progress: bool,
) -> None:
    started = _dt.datetime.now(_dt.UTC)
    repo.clone_and_checkout(root)
    toolchain = toolchain_for(root)
    build(root, toolchain, cache_get=_uses_mathlib(repo))
    prefix = toolchain.prefix() if include_core else None
    layout = ProjectLayout(root, prefix)
    sources: list[LeanSource] = layout.project_files()
    if not sources:
        raise ExtractionError(
            f"{repo} built, but none of its .lean files has a .olean under .lake/build: is it a "
            "Lake project whose libraries are default targets? (`lake build` built nothing to "
            "trace)"
        )
    if build_deps:
        sources += layout.dependency_files()
    if include_core:
        sources += layout.core_files()
    script = root / TRACE_DIR / EXTRACTOR.name
    script.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EXTRACTOR, script)
    jobs = [ExtractJob(s.path, s.module, s.file, trace_path(root, s.path)) for s in sources]

    def command(job: ExtractJob) -> list[str]:
        return toolchain.lake_cmd(
            "env",
            "lean",
            "--run",
            str(script),
            str(job.source),
            job.module,
            str(job.output),
            *layout.option_args(job.path, job.module),  # the package's leanOptions
        )

    logger.info("tracing %d files of %s", len(jobs), repo)
    # One file first: if the extractor itself does not compile with this Lean, every file would
    # fail the same way, so say that once instead.
    statuses = run_extractor(jobs[:1], command, root, workers=1, timeout=timeout, progress=False)
    probe = statuses[jobs[0].path]
    if probe["status"] == "failed" and _extractor_broken(probe.get("error", "")):
        raise ExtractionError(
            f"ExtractData.lean does not run with {toolchain.name} (it targets Lean v4.19 – "
            "v4.29); the error Lean gave for it:\n"
            + _extractor_errors(probe.get("error", ""))
            + "\nPlease report this with your Lean version; nothing else was traced.",
            {jobs[0].path: probe.get("error", "")},
        )
    statuses.update(
        run_extractor(jobs[1:], command, root, workers=workers, timeout=timeout, progress=progress)
    )
    physical = {s.path: s.file for s in sources}
    for path, status in statuses.items():
        if not (root / path).is_file():
            status["source"] = str(physical[path])
    failed = {p: s.get("error", s["status"]) for p, s in statuses.items() if s["status"] != "ok"}
    if failed:
        logger.warning(
            "%d of %d files failed to trace:\n%s", len(failed), len(jobs), failure_summary(failed)
        )
    manifest: dict[str, Any] = {
        "complete": True,
        "schema_version": SCHEMA_VERSION,
        "url": repo.url,
        "commit": repo.commit,
        "lean_version": toolchain.version,
        "toolchain": toolchain.name,
        "build_deps": build_deps,
        "include_core": include_core,
        "core_prefix": str(prefix) if prefix is not None else None,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "num_files": len(jobs),
        "num_failed": len(failed),
        "files": {p: statuses[p] for p in sorted(statuses)},
    }
    with atomic_write(root / TRACE_DIR / MANIFEST) as fh:
        fh.write(_dumps(manifest))


def _extractor_errors(output: str) -> str:
    """Lean's complaints about the extractor script itself (``…/ExtractData.lean:l:c: error``)."""
    lines = [line for line in output.splitlines() if f"{EXTRACTOR.name}:" in line]
    return "\n".join(lines[:20])


def _extractor_broken(output: str) -> bool:
    return any("error" in line for line in _extractor_errors(output).splitlines())


def _dumps(value: object) -> str:
    import json

    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"
