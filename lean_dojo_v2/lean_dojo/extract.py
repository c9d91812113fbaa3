"""Running ``ExtractData.lean`` over many files: bounded, memory-aware, with a progress bar.

Each file is one ``lake env lean --run ExtractData.lean FILE MODULE OUT`` process (a Lean process
imports the file's dependencies, which for Mathlib takes gigabytes). At most ``workers`` run at
once, and a new one starts only while the machine has room for another process as large as the
largest seen so far (:mod:`lean_dojo_v2.system.processes`), so tracing degrades to fewer workers instead of swapping or being
killed. Every file ends with a status — ok, failed (with the end of Lean's stderr) or timeout —
nothing is skipped silently.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..system.commands import start_command, stop
from ..system.processes import available_memory, tree_rss

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

EXTRACTOR = Path(__file__).with_name("ExtractData.lean")
MIB = 1024 * 1024


@dataclass(frozen=True)
class ExtractJob:
    path: str  # LeanDojo path (what the status is keyed by)
    module: str
    source: Path
    output: Path


@dataclass
class _Running:
    job: ExtractJob
    proc: subprocess.Popen[bytes]
    started: float
    stderr: IO[bytes]
    peak_rss: int = 0


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    stop(proc)  # the process and everything it started (its own process group)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def default_workers() -> int:
    from ..config import get_settings

    return max(1, min(get_settings().num_workers, os.cpu_count() or 1))


def run_extractor(
    jobs: Sequence[ExtractJob],
    command: Callable[[ExtractJob], list[str]],
    cwd: Path,
    *,
    workers: int | None = None,
    timeout: float = 3600.0,
    memory_reserve_mib: float = 1024.0,
    progress: bool = True,
    env: dict[str, str] | None = None,
    poll: float = 0.1,
) -> dict[str, dict[str, Any]]:
    """Run ``command(job)`` for every job; returns a status per job path:
    ``{"status", "seconds", "peak_rss_mib", "error"?}``.

    ``memory_reserve_mib`` is the room kept free for the rest of the machine: while another
    process runs, a new one starts only when available memory exceeds the reserve plus the
    largest process seen so far. (One process always runs, so tracing always progresses.)"""
    workers = workers or default_workers()
    pending = list(jobs)
    pending.reverse()  # pop() from the end keeps the given order
    running: list[_Running] = []
    statuses: dict[str, dict[str, Any]] = {}
    largest = 0
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="trace files", unit="file")
    waited_for_memory = False
    try:
        while pending or running:
            # Start what fits.
            while pending and len(running) < workers:
                if running:
                    available = available_memory()
                    if available < largest + memory_reserve_mib * MIB:
                        if not waited_for_memory:
                            logger.info(
                                "waiting for memory: %.0f MiB available, a Lean process needs up "
                                "to %.0f MiB; running %d instead of %d at once",
                                available / MIB,
                                largest / MIB,
                                len(running),
                                workers,
                            )
                            waited_for_memory = True
                        break
                job = pending.pop()
                job.output.parent.mkdir(parents=True, exist_ok=True)
                job.output.unlink(missing_ok=True)
                err = tempfile.TemporaryFile()
                try:
                    proc = start_command(
                        command(job), cwd=cwd, stdout=err, stderr=subprocess.STDOUT, env=env
                    )
                except BaseException:
                    err.close()
                    raise
                running.append(_Running(job, proc, time.monotonic(), err))
            # Watch the running ones.
            time.sleep(poll)
            still: list[_Running] = []
            for r in running:
                rss = tree_rss(r.proc.pid) or 0
                r.peak_rss = max(r.peak_rss, rss)
                largest = max(largest, r.peak_rss)
                code = r.proc.poll()
                elapsed = time.monotonic() - r.started
                if code is None and elapsed > timeout:
                    _kill_tree(r.proc)
                    statuses[r.job.path] = _status(r, "timeout", f"no result after {timeout:.0f} s")
                elif code is None:
                    still.append(r)
                    continue
                elif code == 0 and r.job.output.is_file():
                    statuses[r.job.path] = _status(r, "ok")
                else:
                    r.stderr.seek(0)
                    tail = r.stderr.read()[-4000:].decode("utf-8", "replace").strip()
                    why = tail or f"exit status {code}"
                    if code == 0:
                        why = f"exited 0 without writing {r.job.output}. {tail}".strip()
                    statuses[r.job.path] = _status(r, "failed", why)
                r.stderr.close()
                if bar is not None:
                    bar.update(1)
            running = still
    finally:
        for r in running:
            _kill_tree(r.proc)
            r.stderr.close()
        if bar is not None:
            bar.close()
    return statuses


def _status(r: _Running, status: str, error: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": status,
        "module": r.job.module,
        "seconds": round(time.monotonic() - r.started, 3),
        "peak_rss_mib": round(r.peak_rss / MIB, 1),
    }
    if error:
        out["error"] = error
    return out
