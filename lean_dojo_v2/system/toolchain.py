"""Lean toolchains: the ``lean-toolchain`` file, version names, and finding ``elan``, ``lean`` and
``lake``.

One module for tracing and for the Lean boundary alike. With elan (the Lean version manager) a
project's toolchain must already be installed: we use the binaries in
``$ELAN_HOME/toolchains/<toolchain>/bin`` and never install anything, so the errors say which
``elan toolchain install`` command to run. Without elan, a ``lean``/``lake`` on PATH is used when it
is the version the project asks for. elan itself is found on PATH, in ``$ELAN_HOME/bin`` or in
``~/.elan/bin`` (where its installer puts it, often not on the PATH of an IDE or a job).

Nothing runs at import; the only programs started are ``elan toolchain list``,
``lean --version`` and ``lean --print-prefix``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommandError, LeanNotFoundError, ToolchainNotInstalledError
from .commands import run_command

logger = logging.getLogger("lean_dojo_v2.system")

ELAN_INSTALL_COMMAND = "curl https://elan.lean-lang.org/elan-init.sh -sSf | sh"
TOOLCHAIN_FILE = "lean-toolchain"
DEFAULT_ORIGIN = "leanprover/lean4"
COMMAND_TIMEOUT_S = 60.0
_VERSION_RE = re.compile(r"\bversion\s+v?([0-9A-Za-z][0-9A-Za-z.+\-]*)")

# ----------------------------------------------------------------------------------------------
# Names and versions
# ----------------------------------------------------------------------------------------------


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def normalize_toolchain_name(toolchain: str) -> str:
    """The first non-blank line of a ``lean-toolchain`` text, with elan's default origin added to
    a bare version (``v4.9.0`` → ``leanprover/lean4:v4.9.0``); ``""`` when there is none."""
    name = _first_line(toolchain)
    if name and ":" not in name and "/" not in name:
        name = f"{DEFAULT_ORIGIN}:{name}"
    return name


def lean_version(text: str | None) -> str | None:
    """The Lean version a toolchain name or ``lean-toolchain`` text stands for:
    ``leanprover/lean4:v4.29.1`` / ``v4.29.1`` / ``4.29.1`` → ``4.29.1``;
    ``leanprover/lean4:nightly-2024-06-01`` → ``nightly-2024-06-01``; None when empty."""
    value = _first_line(text)
    if ":" in value:
        value = value.rsplit(":", 1)[1].strip()
    if value.startswith("v"):
        value = value[1:]
    return value or None


def same_lean_version(a: str, b: str) -> bool:
    """Whether two versions (as :func:`lean_version` gives them, or as ``lean --version``
    reports them) name the same Lean. A nightly named by its toolchain (``nightly-2024-06-01``)
    matches the version such a Lean reports (``4.10.0-nightly-2024-06-01``)."""
    a, b = a.strip().removeprefix("v"), b.strip().removeprefix("v")
    if a == b:
        return True
    for short, full in ((a, b), (b, a)):
        if short.startswith("nightly-") and full.endswith("-" + short):
            return True
    return False


def toolchain_dirname(name: str) -> str:
    """elan's directory name for a toolchain: ``leanprover/lean4:v4.9.0`` →
    ``leanprover--lean4---v4.9.0``."""
    return name.replace("/", "--").replace(":", "---")


def toolchain_from_dirname(dirname: str) -> str:
    """The inverse of :func:`toolchain_dirname`."""
    return dirname.replace("---", ":").replace("--", "/")


def read_toolchain_file(directory: str | os.PathLike[str] | None) -> str | None:
    """The toolchain named by ``directory/lean-toolchain`` (normalised with
    :func:`normalize_toolchain_name`); None when the file is absent, unreadable or empty."""
    if directory is None:
        return None
    try:
        text = (Path(directory) / TOOLCHAIN_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return normalize_toolchain_name(text) or None


# ----------------------------------------------------------------------------------------------
# Finding programs
# ----------------------------------------------------------------------------------------------


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def elan_home() -> Path:
    """``$ELAN_HOME``, else ``~/.elan`` (elan's own rule)."""
    value = os.environ.get("ELAN_HOME")
    return Path(value).expanduser() if value else Path.home() / ".elan"


def _elan_bin_dirs() -> list[Path]:
    dirs = [elan_home() / "bin", Path.home() / ".elan" / "bin"]
    return list(dict.fromkeys(dirs))


def find_elan() -> Path | None:
    """elan on PATH, else ``$ELAN_HOME/bin/elan``, else ``~/.elan/bin/elan``."""
    found = shutil.which("elan")
    if found:
        return Path(found)
    for directory in _elan_bin_dirs():
        if is_executable(directory / "elan"):
            return directory / "elan"
    return None


def elan_toolchain_bin(name: str) -> Path:
    """Where elan keeps the binaries of toolchain ``name`` (whether installed or not)."""
    return elan_home() / "toolchains" / toolchain_dirname(normalize_toolchain_name(name)) / "bin"


def find_program(program: str, toolchain: str | None = None) -> Path | None:
    """``program`` (``lean``, ``lake``, ``elan``, ``repl``…), elan-aware: the binary of
    ``toolchain`` when elan has it installed, else the one on PATH, else elan's proxy in
    ``$ELAN_HOME/bin`` or ``~/.elan/bin``; None when there is none."""
    if toolchain:
        candidate = elan_toolchain_bin(toolchain) / program
        if is_executable(candidate):
            return candidate
    found = shutil.which(program)
    if found:
        return Path(found)
    for directory in _elan_bin_dirs():
        if is_executable(directory / program):
            return directory / program
    return None


def installed_toolchains() -> list[str]:
    """Names of the toolchains elan has installed (sorted): the directories of
    ``$ELAN_HOME/toolchains``, plus what ``elan toolchain list`` reports when elan is there."""
    names: set[str] = set()
    directory = elan_home() / "toolchains"
    try:
        entries = list(directory.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        names.add(toolchain_from_dirname(entry.name))
    elan = find_elan()
    if elan is not None:
        names.update(_elan_toolchain_list(elan))
    return sorted(names)


def _elan_toolchain_list(elan: Path) -> list[str]:
    try:
        listing = run_command([elan, "toolchain", "list"], timeout=COMMAND_TIMEOUT_S).text()
    except CommandError as exc:  # the list is only advice in an error message
        logger.debug("elan toolchain list failed: %s", exc)
        return []
    names = []
    for line in listing.splitlines():
        # Lines look like "leanprover/lean4:v4.9.0 (default)"; "no installed toolchains" and
        # other prose have spaces inside the first words or no toolchain shape at all.
        words = line.split()
        if not words or line.lower().startswith(("no ", "info", "warning", "error")):
            continue
        word = words[0]
        if ":" in word or "/" in word or re.match(r"^v?\d", word) or word in ("stable", "nightly"):
            names.append(normalize_toolchain_name(word))
    return names


def lean_version_of(lean: Path) -> str | None:
    """The version ``lean --version`` reports (``Lean (version 4.9.0, ...)`` → ``4.9.0``); None
    when it cannot be run or reports none."""
    try:
        text = run_command([lean, "--version"], timeout=COMMAND_TIMEOUT_S, check=False).text()
    except CommandError as exc:
        logger.debug("%s --version failed: %s", lean, exc)
        return None
    m = _VERSION_RE.search(text)
    return m.group(1).rstrip(",") if m else None


_REINSTALL = (
    "reinstall the toolchain (elan toolchain uninstall <name> && elan toolchain install <name>)"
)


@functools.lru_cache(maxsize=32)
def print_prefix(lean: str) -> Path:
    """Lean's installation prefix (``lean --print-prefix``); :class:`LeanNotFoundError` when that
    fails."""
    try:
        result = run_command([lean, "--print-prefix"], timeout=COMMAND_TIMEOUT_S, check=False)
        text = result.text().strip()
    except CommandError as exc:
        raise LeanNotFoundError(
            f"could not run {lean} --print-prefix ({exc}); {_REINSTALL}"
        ) from exc
    if result.returncode != 0 or not text:
        raise LeanNotFoundError(
            f"{lean} --print-prefix failed (exit {result.returncode}): "
            f"{result.stderr_tail()}; {_REINSTALL}"
        )
    return Path(text.splitlines()[-1].strip())


# ----------------------------------------------------------------------------------------------
# Resolution
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Toolchain:
    """A usable Lean toolchain: its name (``leanprover/lean4:v4.9.0``), version (``4.9.0``) and
    the ``lean``/``lake`` binaries; ``elan`` is set when elan manages it."""

    name: str
    version: str
    lean: Path
    lake: Path
    elan: Path | None = None

    @property
    def bin_dir(self) -> Path:
        return self.lean.parent

    def prefix(self) -> Path:
        """Lean's installation prefix (``lean --print-prefix``), e.g. for ``lib/lean``."""
        return print_prefix(str(self.lean))

    def lean_cmd(self, *args: str) -> list[str]:
        return [str(self.lean), *args]

    def lake_cmd(self, *args: str) -> list[str]:
        return [str(self.lake), *args]

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with this toolchain first on PATH, so
        that ``lake`` and whatever it starts use this ``lean`` rather than another one."""
        env = dict(os.environ if base is None else base)
        path = env.get("PATH", "")
        env["PATH"] = str(self.bin_dir) + (os.pathsep + path if path else "")
        if self.elan is not None:
            # elan's proxies (e.g. a `lean` reached through ~/.elan/bin) then agree with us too.
            env["ELAN_TOOLCHAIN"] = self.name
        return env


def install_hint(name: str) -> str:
    return f"elan toolchain install {name}"


def find_toolchain(toolchain: str) -> Toolchain:
    """The installed toolchain named ``toolchain`` (``leanprover/lean4:v4.9.0``, a bare version,
    or the text of a ``lean-toolchain`` file). Never installs anything; the errors
    (:class:`LeanNotFoundError`, :class:`ToolchainNotInstalledError`) say what to run."""
    name = normalize_toolchain_name(toolchain)
    if not name:
        raise ValueError("an empty toolchain name was given")
    version = lean_version(name) or name
    elan = find_elan()
    if elan is not None:
        return _from_elan(name, version, elan)
    return _from_path(name, version)


def _from_elan(name: str, version: str, elan: Path) -> Toolchain:
    directory = elan_toolchain_bin(name).parent
    lean, lake = directory / "bin" / "lean", directory / "bin" / "lake"
    if is_executable(lean) and is_executable(lake):
        return Toolchain(name=name, version=version, lean=lean, lake=lake, elan=elan)
    if is_executable(lean):
        raise ToolchainNotInstalledError(
            f"toolchain {name} at {directory} has lean but no lake; reinstall it: "
            f"elan toolchain uninstall {name} && {install_hint(name)}"
        )
    installed = installed_toolchains()
    listing = ", ".join(installed) if installed else "none"
    raise ToolchainNotInstalledError(
        f"the project needs Lean toolchain {name}, which elan ({elan}) has not installed "
        f"(installed: {listing}). Install it with:\n    {install_hint(name)}"
    )


def _from_path(name: str, version: str) -> Toolchain:
    lean_text, lake_text = shutil.which("lean"), shutil.which("lake")
    if lean_text is None:
        raise LeanNotFoundError(
            "no Lean toolchain found: neither elan nor lean is on PATH. Install elan, the Lean "
            f"version manager:\n    {ELAN_INSTALL_COMMAND}\nthen the toolchain this project "
            f"needs:\n    {install_hint(name)}"
        )
    lean = Path(lean_text)
    found = lean_version_of(lean)
    if found is None:
        raise LeanNotFoundError(
            f"{lean} is on PATH but `lean --version` did not report a version; the project needs "
            f"{name}. Install elan ({ELAN_INSTALL_COMMAND}) and run: {install_hint(name)}"
        )
    if not same_lean_version(found, version):
        raise ToolchainNotInstalledError(
            f"the lean on PATH ({lean}) is version {found}, but the project needs {name} "
            f"(version {version}). Put Lean {version} first on PATH, or install elan "
            f"({ELAN_INSTALL_COMMAND}) and run: {install_hint(name)}"
        )
    if lake_text is None:
        raise LeanNotFoundError(
            f"lean {found} is on PATH ({lean}) but lake is not; install the full toolchain with "
            f"elan ({ELAN_INSTALL_COMMAND}) and run: {install_hint(name)}"
        )
    return Toolchain(name=name, version=version, lean=lean, lake=Path(lake_text), elan=None)
