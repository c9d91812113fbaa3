"""lean_dojo_v2.system.processes: process-tree memory, measured in one place."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from lean_dojo_v2.system.processes import available_memory, kill_tree, tree_rss

MIB = 1024 * 1024

# A parent that starts a child holding 200 MiB, then waits.
_PARENT = (
    "import subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    '\'import sys, time; b = bytearray(200 * 1024 * 1024); b[::4096] = b"x" * len(b[::4096]); '
    'print("ready", flush=True); time.sleep(60)\'])\n'
    "child.wait()\n"
)


def test_tree_rss_counts_the_children():
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"ready\n"
        import psutil

        own = psutil.Process(parent.pid).memory_info().rss
        total = tree_rss(parent.pid)
        assert total is not None and own < 100 * MIB and total > own + 150 * MIB
    finally:
        kill_tree(parent.pid)
        parent.wait(timeout=10)
    time.sleep(0.1)
    assert tree_rss(parent.pid) is None  # gone (reaped): nothing to measure


def test_available_memory_is_positive():
    assert available_memory() > 0


def test_process_memory_is_measured_in_one_place():
    """psutil (process trees, machine memory) is used by system.processes only; tracing's worker
    pool and the Pantograph memory guard both measure through it."""
    package = Path(__import__("lean_dojo_v2").__file__).parent
    users = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "psutil" in p.read_text("utf-8") and p.parent.name != "system"
    )
    assert users == [], users


def test_child_cpu_meter_counts_only_new_time_of_children():
    from lean_dojo_v2.system.processes import ChildCpuMeter

    meter = ChildCpuMeter(rescan_seconds=0.0)
    meter.delta()  # children started earlier (none here) are counted from now on
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    child = subprocess.Popen(
        [sys.executable, "-c", busy + "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        spent = 0.0
        deadline = time.monotonic() + 20
        while spent < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
            spent += meter.delta()
        assert 0.4 <= spent < 5.0
        time.sleep(0.3)  # the child now waits on stdin: it spends (almost) nothing more
        assert meter.delta() < 0.2
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
