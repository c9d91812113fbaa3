"""``bound_heap_retention``: glibc's malloc thresholds fixed once per process, unless the user
chose (environment variables) or turned it off. Each case runs in a fresh interpreter: the
setting is process-wide and one-way."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = "from lean_dojo_v2.system.memory import bound_heap_retention as b; print(b(), b())"


def run(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "LEAN_DOJO_V2_"))}
    out = subprocess.run([sys.executable, "-c", CODE], env={**base, **env}, capture_output=True,
                         text=True, check=True)  # fmt: skip
    return out.stdout.strip()


def test_thresholds_are_fixed_once_unless_the_user_chose() -> None:
    on_glibc = "True True" if sys.platform.startswith("linux") else "False False"
    assert run() == on_glibc
    assert run(LEAN_DOJO_V2_MALLOC_TUNING="0") == "False False"
    assert run(MALLOC_MMAP_THRESHOLD_="65536") == "False False"
    assert run(MALLOC_TRIM_THRESHOLD_="65536") == "False False"
