"""Process trees: how much memory one uses, how to stop one. ``psutil`` is imported on use."""

from __future__ import annotations

import contextlib


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
