"""Finding the ``lean`` and ``lake`` a project needs.

With elan (the Lean version manager) the project's toolchain must already be installed: we point at
the binaries in ``$ELAN_HOME/toolchains/<toolchain>/bin`` and never install anything ourselves, so
the error says which ``elan toolchain install`` command to run. Without elan, a ``lean``/``lake``
on PATH is used when it is the version the project asks for.

Nothing runs at import; the only programs started are ``elan toolchain list``,
``lean --version`` and ``lean --print-prefix``.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import NotALeanProjectError, ToolchainNotFoundError, ToolchainNotInstalledError

logger = logging.getLogger("lean_dojo_v2.lean_dojo.toolchain")

ELAN_INSTALL_COMMAND = "curl https://elan.lean-lang.org/elan-init.sh -sSf | sh"
TOOLCHAIN_FILE = "lean-toolchain"
DEFAULT_ORIGIN = "leanprover/lean4"
_COMMAND_TIMEOUT_S = 60.0
_VERSION_RE = re.compile(r"\bversion\s+v?([0-9A-Za-z][0-9A-Za-z.+\-]*)")


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
        return _print_prefix(str(self.lean))

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


@functools.lru_cache(maxsize=32)
def _print_prefix(lean: str) -> Path:
    try:
        proc = subprocess.run(
            [lean, "--print-prefix"],
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainNotFoundError(
            f"could not run {lean} --print-prefix ({exc}); reinstall the toolchain "
            "(elan toolchain uninstall <name> && elan toolchain install <name>)"
        ) from exc
    text = proc.stdout.strip()
    if proc.returncode != 0 or not text:
        raise ToolchainNotFoundError(
            f"{lean} --print-prefix failed (exit {proc.returncode}): {proc.stderr.strip()}; "
            "reinstall the toolchain (elan toolchain uninstall <name> && elan toolchain install "
            "<name>)"
        )
    return Path(text.splitlines()[-1].strip())


# ----------------------------------------------------------------------------------------------
# Names
# ----------------------------------------------------------------------------------------------


def normalize_toolchain_name(toolchain: str) -> str:
    """The first line of a ``lean-toolchain`` text, with elan's default origin added to a bare
    version (``v4.9.0`` → ``leanprover/lean4:v4.9.0``)."""
    lines = [line.strip() for line in toolchain.strip().splitlines() if line.strip()]
    name = lines[0] if lines else ""
    if name and ":" not in name and "/" not in name:
        name = f"{DEFAULT_ORIGIN}:{name}"
    return name


def toolchain_dirname(name: str) -> str:
    """elan's directory name for a toolchain: ``leanprover/lean4:v4.9.0`` →
    ``leanprover--lean4---v4.9.0``."""
    return name.replace("/", "--").replace(":", "---")


def toolchain_from_dirname(dirname: str) -> str:
    """The inverse of :func:`toolchain_dirname`."""
    return dirname.replace("---", ":").replace("--", "/")


# ----------------------------------------------------------------------------------------------
# elan
# ----------------------------------------------------------------------------------------------


def elan_home() -> Path:
    """``$ELAN_HOME``, else ``~/.elan`` (elan's own rule)."""
    value = os.environ.get("ELAN_HOME")
    return Path(value).expanduser() if value else Path.home() / ".elan"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_elan() -> Path | None:
    """elan on PATH, else ``$ELAN_HOME/bin/elan``, else ``~/.elan/bin/elan``."""
    found = shutil.which("elan")
    if found:
        return Path(found)
    candidates = [elan_home() / "bin" / "elan", Path.home() / ".elan" / "bin" / "elan"]
    for candidate in candidates:
        if _executable(candidate):
            return candidate
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
        proc = subprocess.run(
            [str(elan), "toolchain", "list"],
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("elan toolchain list failed: %s", exc)
        return []
    if proc.returncode != 0:
        logger.debug("elan toolchain list failed (exit %d): %s", proc.returncode, proc.stderr)
        return []
    names = []
    for line in proc.stdout.splitlines():
        # Lines look like "leanprover/lean4:v4.9.0 (default)"; "no installed toolchains" and
        # other prose have spaces inside the first words or no toolchain shape at all.
        words = line.split()
        if not words or line.lower().startswith(("no ", "info", "warning", "error")):
            continue
        word = words[0]
        if ":" in word or "/" in word or re.match(r"^v?\d", word) or word in ("stable", "nightly"):
            names.append(normalize_toolchain_name(word))
    return names


# ----------------------------------------------------------------------------------------------
# Resolution
# ----------------------------------------------------------------------------------------------


def lean_version_of(lean: Path) -> str | None:
    """The version ``lean --version`` reports (``Lean (version 4.9.0, ...)`` → ``4.9.0``)."""
    try:
        proc = subprocess.run(
            [str(lean), "--version"],
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("%s --version failed: %s", lean, exc)
        return None
    m = _VERSION_RE.search(proc.stdout)
    return m.group(1).rstrip(",") if m else None


def _same_version(found: str, wanted: str) -> bool:
    if found == wanted:
        return True
    # A nightly toolchain ("nightly-2024-06-01") reports "4.10.0-nightly-2024-06-01".
    return wanted.startswith("nightly-") and found.endswith("-" + wanted)


def _install_hint(name: str) -> str:
    return f"elan toolchain install {name}"


def resolve_toolchain(toolchain: str) -> Toolchain:
    """The installed toolchain named ``toolchain`` (``leanprover/lean4:v4.9.0``, or the text of a
    ``lean-toolchain`` file). Never installs anything; the errors say what to run."""
    name = normalize_toolchain_name(toolchain)
    if not name:
        raise NotALeanProjectError(
            "an empty toolchain name was given; a lean-toolchain file names one such as "
            "`leanprover/lean4:v4.22.0`"
        )
    # Imported here: the interaction package pulls in asyncio and networkx, which finding a
    # toolchain does not need.
    from ..interaction.pantograph.locate import normalize_lean_version

    version = normalize_lean_version(name) or name
    elan = find_elan()
    if elan is not None:
        return _from_elan(name, version, elan)
    return _from_path(name, version)


def _from_elan(name: str, version: str, elan: Path) -> Toolchain:
    directory = elan_home() / "toolchains" / toolchain_dirname(name)
    lean, lake = directory / "bin" / "lean", directory / "bin" / "lake"
    if _executable(lean) and _executable(lake):
        return Toolchain(name=name, version=version, lean=lean, lake=lake, elan=elan)
    if _executable(lean):
        raise ToolchainNotInstalledError(
            f"toolchain {name} at {directory} has lean but no lake; reinstall it: "
            f"elan toolchain uninstall {name} && {_install_hint(name)}"
        )
    installed = installed_toolchains()
    listing = ", ".join(installed) if installed else "none"
    raise ToolchainNotInstalledError(
        f"the project needs Lean toolchain {name}, which elan ({elan}) has not installed "
        f"(installed: {listing}). Install it with:\n    {_install_hint(name)}"
    )


def _from_path(name: str, version: str) -> Toolchain:
    lean_text, lake_text = shutil.which("lean"), shutil.which("lake")
    if lean_text is None:
        raise ToolchainNotFoundError(
            "no Lean toolchain found: neither elan nor lean is on PATH. Install elan, the Lean "
            f"version manager:\n    {ELAN_INSTALL_COMMAND}\nthen the toolchain this project "
            f"needs:\n    {_install_hint(name)}"
        )
    lean = Path(lean_text)
    found = lean_version_of(lean)
    if found is None:
        raise ToolchainNotFoundError(
            f"{lean} is on PATH but `lean --version` did not report a version; the project needs "
            f"{name}. Install elan ({ELAN_INSTALL_COMMAND}) and run: {_install_hint(name)}"
        )
    if not _same_version(found, version):
        raise ToolchainNotInstalledError(
            f"the lean on PATH ({lean}) is version {found}, but the project needs {name} "
            f"(version {version}). Put Lean {version} first on PATH, or install elan "
            f"({ELAN_INSTALL_COMMAND}) and run: {_install_hint(name)}"
        )
    if lake_text is None:
        raise ToolchainNotFoundError(
            f"lean {found} is on PATH ({lean}) but lake is not; install the full toolchain with "
            f"elan ({ELAN_INSTALL_COMMAND}) and run: {_install_hint(name)}"
        )
    return Toolchain(name=name, version=version, lean=lean, lake=Path(lake_text), elan=None)


def toolchain_for(project_dir: str | os.PathLike[str]) -> Toolchain:
    """The toolchain named by ``project_dir/lean-toolchain``, resolved with
    :func:`resolve_toolchain`."""
    path = Path(project_dir) / TOOLCHAIN_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotALeanProjectError(
            f"{path} does not exist. Lean 4 projects need a {TOOLCHAIN_FILE} file at the root "
            f"naming their toolchain, such as `leanprover/lean4:v4.22.0`; create it (echo "
            f"leanprover/lean4:v4.22.0 > {path}) or pass the project's root directory."
        ) from None
    except OSError as exc:
        raise NotALeanProjectError(f"cannot read {path}: {exc}; check its permissions") from exc
    if not normalize_toolchain_name(text):
        raise NotALeanProjectError(
            f"{path} is empty; write the project's toolchain in it, such as "
            "`leanprover/lean4:v4.22.0`"
        )
    return resolve_toolchain(text)
