"""Whether a process still runs, for tests that check nothing is left behind."""

from __future__ import annotations

import time


def process_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie. A zombie counts as dead: it has exited and
    only waits for a parent (possibly one whose event loop is gone) to reap it. A process that
    vanishes between opening and reading ``/proc/PID/stat`` raises ``ProcessLookupError`` (an
    ``OSError``), which also means dead."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_dead(pid: int, within: float = 5.0) -> bool:
    """Poll until ``pid`` is no longer running; False if it still runs after ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not process_running(pid):
            return True
        time.sleep(0.05)
    return not process_running(pid)
