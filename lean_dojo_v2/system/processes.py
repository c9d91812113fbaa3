"""Process trees: how much memory and CPU time one uses, how to stop one. ``psutil`` is
imported on use."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil


def tree_rss(pid: int) -> int | None:
    """Resident memory (bytes) of process ``pid`` and all its descendants; None when it cannot
    be measured (the process is gone). Children that exit while being counted are skipped."""
    import psutil

    try:
        root = psutil.Process(pid)
        children = root.children(recursive=True)
        total = root.memory_info().rss
    except psutil.Error:
        return None
    for child in children:
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return total


def available_memory() -> int:
    """Memory (bytes) the machine can give new processes without swapping."""
    import psutil

    return int(psutil.virtual_memory().available)


def busy_cores(sample_seconds: float = 0.5) -> float:
    """How many of the machine's cores are busy now, measured over ``sample_seconds`` (every
    process's use, this one's included)."""
    import os

    import psutil

    return psutil.cpu_percent(interval=sample_seconds) / 100 * (os.cpu_count() or 1)


def kill_tree(pid: int) -> None:
    """SIGKILL process ``pid`` and all its descendants (children first); processes already gone
    are ignored."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


class ChildCpuMeter:
    """CPU seconds (user + system) this process's descendants spent since the last reading.

    Listing descendants reads every process of the machine (psutil's parent map): it is done at
    most once every ``rescan_seconds``; reading the CPU time of the ones known is cheap. A child
    that ends between two readings takes its last slice with it."""

    def __init__(self, rescan_seconds: float = 1.0) -> None:
        self.rescan_seconds = rescan_seconds
        self._lock = threading.Lock()
        self._seen: dict[int, float] = {}
        self._children: list[psutil.Process] = []
        self._scanned = -math.inf

    def delta(self) -> float:
        import psutil

        with self._lock:
            now = time.monotonic()
            if now - self._scanned >= self.rescan_seconds:
                self._scanned = now
                try:
                    self._children = psutil.Process().children(recursive=True)
                except psutil.Error:
                    self._children = []
            total = 0.0
            for child in self._children:
                try:
                    times = child.cpu_times()
                except psutil.Error:
                    continue
                cpu = times.user + times.system
                # a pid seen before counts only its new time
                total += max(0.0, cpu - self._seen.get(child.pid, 0.0))
                self._seen[child.pid] = cpu
            return total
