"""The examples run as users would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_data_tour_runs(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "data_tour.py"),
            str(ROOT / "lean_dojo_v2" / "resources" / "leandojo_b4_sample"),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "'theorems': 100" in proc.stdout
    assert (tmp_path / "out" / "random" / "train.json").is_file()


def test_trace_example_explains_bad_input(tmp_path):
    """Without Lean the example can still be run on bad input: it says what is wrong."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trace_repo.py"), str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LEAN_DOJO_V2_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 1, proc.stderr
    assert "error:" in proc.stdout and "missing" in proc.stdout
