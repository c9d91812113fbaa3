"""Helpers for tests that launch the fake Pantograph REPL.

``fake_command()`` is the argv prefix to run it directly; ``write_fake_binary()`` makes a
``pantograph-repl`` executable (a ``/bin/sh`` wrapper) laid out the way PyPantograph ships the real
one: the binary with a ``lean-toolchain`` file beside it.
"""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path

FAKE_REPL: Path = Path(__file__).resolve().parent / "fake_repl.py"
BINARY_NAME = "pantograph-repl"
DEFAULT_TOOLCHAIN = "leanprover/lean4:v4.29.1"


def fake_command() -> list[str]:
    """``[python, fake_repl.py]``: append core options and module names like the real binary's."""
    return [sys.executable, str(FAKE_REPL)]


def write_fake_binary(
    directory: Path,
    lean_toolchain: str | None = DEFAULT_TOOLCHAIN,
    env: dict[str, str] | None = None,
) -> Path:
    """Write ``directory/pantograph-repl`` that ``exec``s the fake with this interpreter.

    ``env`` is exported by the wrapper (e.g. ``{"FAKE_PANTOGRAPH_VERSION": "0.3.4"}``); a
    ``lean-toolchain`` file holding ``lean_toolchain`` is written beside it unless that is None.
    Returns the script's path.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["#!/bin/sh"]
    for key, value in (env or {}).items():
        if not key.isidentifier():
            raise ValueError(f"not a valid environment variable name: {key!r}")
        lines.append(f"{key}={shlex.quote(value)}")
        lines.append(f"export {key}")
    lines.append(f'exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE_REPL))} "$@"')
    script = directory / BINARY_NAME
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    mode = script.stat().st_mode
    script.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IRUSR)
    if lean_toolchain is not None:
        (directory / "lean-toolchain").write_text(lean_toolchain + "\n", encoding="utf-8")
    return script


__all__ = ["BINARY_NAME", "FAKE_REPL", "fake_command", "write_fake_binary"]
