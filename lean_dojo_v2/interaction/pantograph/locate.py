"""Finding the Pantograph ``repl`` binary, its version, and the ``LEAN_PATH`` of a Lean project.

Nothing here runs at import. Discovery order (first hit wins):

1. an explicit command or path (``PantographConfig.command``);
2. the environment variable ``LEAN_DOJO_V2_PANTOGRAPH`` (a path, or a command line);
3. an installed PyPantograph's ``pantograph-repl`` (found with ``importlib.util.find_spec`` without
   importing the package; PyPI's unrelated ``pantograph`` canvas library has no such file and is
   ignored);
4. a Pantograph checkout built with ``lake build repl``: ``$LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT``
   ``/.lake/build/bin/repl``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import CommandError, CommandNotFoundError, CommandTimeoutError, LeanNotFoundError
from ...system.commands import run_command
from ...system.toolchain import (
    find_program,
    is_executable,
    lean_version,
    read_toolchain_file,
    same_lean_version,
)
from ..types import VersionMismatchError

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")

ENV_BINARY = "LEAN_DOJO_V2_PANTOGRAPH"
ENV_CHECKOUT = "LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT"
PYPANTOGRAPH_BINARY = "pantograph-repl"
CHECKOUT_BINARY = (".lake", "build", "bin", "repl")

INSTALL_HINT = (
    "Install Lean with elan (https://github.com/leanprover/elan: `curl https://elan.lean-lang.org/"
    "elan-init.sh -sSf | sh`), then build Pantograph (https://github.com/leanprover/Pantograph) for "
    "the same Lean version as your project (`lake build repl` in a checkout whose lean-toolchain "
    "matches). Point lean-dojo-v2 at it with PantographConfig(command=...), the environment "
    f"variable {ENV_BINARY}=/path/to/repl, or {ENV_CHECKOUT}=/path/to/Pantograph (uses "
    "<checkout>/.lake/build/bin/repl); an installed PyPantograph's pantograph-repl is found "
    "automatically."
)


@dataclass(frozen=True)
class Located:
    """A REPL command line and where it was found (``source`` is for messages)."""

    command: tuple[str, ...]
    source: str

    @property
    def binary(self) -> Path | None:
        """The file that holds the program: the last element that is an existing file (for
        ``python fake_repl.py`` that is the script), else the first."""
        for part in reversed(self.command):
            p = Path(part)
            if p.is_file():
                return p
        return None


def _as_command(value: str | os.PathLike[str] | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if Path(text).expanduser().exists():
            return (str(Path(text).expanduser()),)
        words = shlex.split(text)
        return tuple(words) if words else (text,)
    parts = tuple(os.fspath(p) for p in value)
    if not parts:
        raise LeanNotFoundError("an empty Pantograph command was given. " + INSTALL_HINT)
    return parts


def pypantograph_binary() -> Path | None:
    """``pantograph-repl`` inside an installed PyPantograph, found without importing it."""
    try:
        spec = importlib.util.find_spec("pantograph")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [str(Path(spec.origin).parent)]
    for d in dirs:
        candidate = Path(d) / PYPANTOGRAPH_BINARY
        if candidate.is_file():
            return candidate
    # PyPI's "pantograph" (a 2013 canvas library) has no pantograph-repl: not ours.
    return None


def checkout_binary(checkout: str | os.PathLike[str]) -> Path:
    return Path(checkout).expanduser().joinpath(*CHECKOUT_BINARY)


def locate_repl(command: str | os.PathLike[str] | Sequence[str] | None = None) -> Located:
    """The REPL command line, by the discovery order of this module; :class:`LeanNotFoundError`
    (saying what to install and how to point the library at it) when none is found."""
    tried: list[str] = []
    if command is not None:
        cmd = _as_command(command)
        _check_runnable(cmd, "the explicit command")
        return Located(cmd, "argument")
    env_value = os.environ.get(ENV_BINARY)
    if env_value:
        cmd = _as_command(env_value)
        _check_runnable(cmd, f"${ENV_BINARY}")
        return Located(cmd, ENV_BINARY)
    tried.append(f"${ENV_BINARY} (unset)")
    pyp = pypantograph_binary()
    if pyp is not None:
        return Located((str(pyp),), "PyPantograph")
    tried.append(f"PyPantograph's {PYPANTOGRAPH_BINARY} (not installed)")
    checkout = os.environ.get(ENV_CHECKOUT)
    if checkout:
        binary = checkout_binary(checkout)
        if binary.is_file():
            return Located((str(binary),), ENV_CHECKOUT)
        raise LeanNotFoundError(
            f"${ENV_CHECKOUT}={checkout} has no built REPL at {binary}; run `lake build repl` "
            "in that checkout. " + INSTALL_HINT
        )
    tried.append(f"${ENV_CHECKOUT} (unset)")
    raise LeanNotFoundError(
        "no Pantograph REPL binary found (tried: " + "; ".join(tried) + "). " + INSTALL_HINT
    )


def _check_runnable(cmd: tuple[str, ...], what: str) -> None:
    exe = cmd[0]
    if os.sep in exe or (os.altsep and os.altsep in exe):
        path = Path(exe)
        if not path.is_file():
            raise LeanNotFoundError(f"{what} names {exe}, which does not exist. " + INSTALL_HINT)
        if not is_executable(path):
            raise LeanNotFoundError(f"{what} names {exe}, which is not executable. " + INSTALL_HINT)
    elif shutil.which(exe) is None:
        raise LeanNotFoundError(f"{what} names {exe!r}, which is not on PATH. " + INSTALL_HINT)


# ----------------------------------------------------------------------------------- versions

# A pre-release part may hold hyphens itself: ``4.10.0-nightly-2024-06-01``.
_SEMVER = re.compile(r"(\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?)")
_LEAN_PART = re.compile(r"/\s*v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?)")


@dataclass(frozen=True)
class ReplVersion:
    """``repl --version`` parsed loosely: ``0.3.4``, ``0.3.7/v4.21.0``."""

    raw: str
    pantograph: str | None
    lean: str | None

    @property
    def pantograph_tuple(self) -> tuple[int, ...] | None:
        if self.pantograph is None:
            return None
        return tuple(int(x) for x in self.pantograph.split("-")[0].split("."))


def parse_version(text: str) -> ReplVersion:
    raw = text.strip()
    lean_m = _LEAN_PART.search(raw)
    head = raw[: lean_m.start()] if lean_m else raw
    pm = _SEMVER.search(head)
    return ReplVersion(raw, pm.group(1) if pm else None, lean_m.group(1) if lean_m else None)


def normalize_lean_version(text: str | None) -> str | None:
    """``leanprover/lean4:v4.29.1`` / ``v4.29.1`` / ``4.29.1`` → ``4.29.1``; None when unknown
    (:func:`lean_dojo_v2.system.toolchain.lean_version`)."""
    return lean_version(text)


def read_toolchain(directory: str | os.PathLike[str] | None) -> str | None:
    """The Lean version named by ``directory/lean-toolchain``, normalised; None when absent."""
    return lean_version(read_toolchain_file(directory))


def binary_toolchain(located: Located) -> str | None:
    """Lean version from a ``lean-toolchain`` beside the binary (PyPantograph ships one), or at the
    root of a lake checkout (``<checkout>/.lake/build/bin/repl``)."""
    binary = located.binary
    if binary is None:
        return None
    here = binary.resolve().parent
    found = read_toolchain(here)
    if found is not None:
        return found
    if here.parts[-3:] == CHECKOUT_BINARY[:3]:
        return read_toolchain(here.parent.parent.parent)
    return None


def query_version(
    located: Located, timeout: float = 60.0, env: dict[str, str] | None = None
) -> ReplVersion:
    """Run ``<repl> --version`` for at most ``timeout`` s; a failure gives an empty version
    (unknown), never an error, except a binary that cannot be run at all
    (:class:`LeanNotFoundError`)."""
    what = " ".join(located.command)
    try:
        result = run_command([*located.command, "--version"], env=env, timeout=timeout, check=False)
    except CommandNotFoundError as exc:
        raise LeanNotFoundError(f"cannot run {located.command[0]}: {exc}. " + INSTALL_HINT) from exc
    except CommandError as exc:
        logger.warning("`%s --version` failed: %s", what, exc)
        return ReplVersion("", None, None)
    out = result.stdout.decode("utf-8", "replace").strip()
    if result.returncode != 0 or not out:
        logger.warning(
            "`%s --version` exited %s: %s", what, result.returncode, result.stderr_tail()[-500:]
        )
        return ReplVersion(out, None, None)
    return parse_version(out.splitlines()[0])


def _tag(version: str) -> str:
    """``4.9.0`` → ``v4.9.0`` (a release's tag); ``nightly-2024-06-01`` stays as it is."""
    return f"v{version}" if version[:1].isdigit() else version


def check_versions(
    version: ReplVersion, located: Located, project_dir: str | os.PathLike[str] | None
) -> str | None:
    """The Lean version of the binary; :class:`VersionMismatchError` when it differs from the
    project's ``lean-toolchain``; a warning when either side is unknown."""
    binary_lean = version.lean or binary_toolchain(located)
    project_lean = read_toolchain(project_dir)
    if binary_lean is not None and project_lean is not None:
        if not same_lean_version(binary_lean, project_lean):
            raise VersionMismatchError(
                f"the Pantograph REPL {' '.join(located.command)} (version {version.raw or '?'}) "
                f"was built for Lean {_tag(binary_lean)}, but the project {project_dir} uses Lean "
                f"{_tag(project_lean)} (its lean-toolchain). The REPL must be built with exactly "
                "the Lean version that built the project's .olean files: build Pantograph at a "
                f"version whose lean-toolchain is leanprover/lean4:{_tag(project_lean)} and "
                f"point {ENV_BINARY} (or PantographConfig.command) at it."
            )
    elif binary_lean is None and project_lean is None:
        logger.warning(
            "Lean version unknown for both the Pantograph REPL (%s) and the project (%s); "
            "proceeding without a version check",
            " ".join(located.command),
            project_dir,
        )
    elif binary_lean is None:
        logger.warning(
            "Lean version of the Pantograph REPL %s is unknown (no /vX in `--version`, no "
            "lean-toolchain beside it); the project uses v%s; proceeding",
            " ".join(located.command),
            project_lean,
        )
    elif project_dir is not None:
        logger.warning(
            "project %s has no lean-toolchain; cannot check it against the REPL's Lean v%s",
            project_dir,
            binary_lean,
        )
    return binary_lean


# ---------------------------------------------------------------------------------- LEAN_PATH


def lake_lean_path(project_dir: str | os.PathLike[str], timeout: float = 300.0) -> str:
    """``lake env printenv LEAN_PATH`` in ``project_dir``, decoded and stripped. ``lake`` is the
    one of the project's toolchain when elan has it installed, else the one on PATH, else elan's
    proxy in ``~/.elan/bin`` (:func:`lean_dojo_v2.system.toolchain.find_program`)."""
    toolchain = read_toolchain_file(project_dir)
    lake = find_program("lake", toolchain)
    if lake is None:
        raise LeanNotFoundError(
            f"`lake` is not on PATH (nor in elan's ~/.elan/bin), so the LEAN_PATH of {project_dir} "
            "cannot be computed. Pass PantographConfig(lean_path=...) or " + INSTALL_HINT
        )
    env = dict(os.environ)
    # The toolchain's own lake finds its own lean first on PATH.
    env["PATH"] = str(lake.parent) + os.pathsep + env.get("PATH", "")
    what = f"`lake env printenv LEAN_PATH` in {project_dir}"
    try:
        result = run_command(
            [lake, "env", "printenv", "LEAN_PATH"], cwd=project_dir, env=env, timeout=timeout
        )
        return result.text().strip()
    except CommandTimeoutError as exc:
        raise LeanNotFoundError(
            f"{what} took longer than {timeout:.0f} s; raise PantographConfig.lake_timeout if "
            "lake is merely slow, or pass PantographConfig(lean_path=...)"
        ) from exc
    except CommandError as exc:
        status = f" (exit {exc.returncode})" if exc.returncode is not None else ""
        why = exc.stderr.decode("utf-8", "replace").strip()[-2000:] or str(exc)
        raise LeanNotFoundError(
            f"{what} failed{status}: {why}. Check that the project builds (`lake build`) with "
            "its own toolchain, or pass PantographConfig(lean_path=...)"
        ) from exc


# ------------------------------------------------------------------------------------ modules


def module_name(file_path: str | os.PathLike[str]) -> str:
    """``Mathlib/Foo/Bar.lean`` → ``Mathlib.Foo.Bar``; a dependency path
    ``.lake/packages/<pkg>/Foo/Bar.lean`` → ``Foo.Bar``; core files
    (``.lake/packages/lean4/src/lean/Init/Core.lean``) → ``Init.Core``."""
    parts = list(Path(os.fspath(file_path)).with_suffix("").parts)
    if len(parts) >= 3 and parts[0] == ".lake" and parts[1] == "packages":
        parts = parts[3:]
        if len(parts) >= 2 and parts[:2] == ["src", "lean"]:
            parts = parts[2:]
    elif parts and parts[0] in ("lake-packages",) and len(parts) >= 2:
        parts = parts[2:]
    return ".".join(p for p in parts if p not in ("", "."))
