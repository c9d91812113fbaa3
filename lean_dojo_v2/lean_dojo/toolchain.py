"""Finding the ``lean`` and ``lake`` a project needs, for tracing.

The work is done by :mod:`lean_dojo_v2.system.toolchain` (shared with the Lean boundary); this
module adds what tracing needs on top — a project without a ``lean-toolchain`` is a
:class:`NotALeanProjectError` — and keeps the names tracing code has always imported from here.
With elan the project's toolchain must already be installed (nothing is installed for you; the
error says which ``elan toolchain install`` to run); without elan a ``lean``/``lake`` on PATH is
used when it is the version the project asks for.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..system.toolchain import (
    DEFAULT_ORIGIN,
    ELAN_INSTALL_COMMAND,
    TOOLCHAIN_FILE,
    Toolchain,
    elan_home,
    find_elan,
    find_toolchain,
    installed_toolchains,
    lean_version_of,
    normalize_toolchain_name,
    toolchain_dirname,
    toolchain_from_dirname,
)
from ..system.toolchain import print_prefix as _print_prefix
from .errors import NotALeanProjectError

__all__ = [
    "DEFAULT_ORIGIN",
    "ELAN_INSTALL_COMMAND",
    "TOOLCHAIN_FILE",
    "Toolchain",
    "_print_prefix",
    "elan_home",
    "find_elan",
    "installed_toolchains",
    "lean_version_of",
    "normalize_toolchain_name",
    "resolve_toolchain",
    "toolchain_dirname",
    "toolchain_for",
    "toolchain_from_dirname",
]


def resolve_toolchain(toolchain: str) -> Toolchain:
    """The installed toolchain named ``toolchain`` (``leanprover/lean4:v4.9.0``, or the text of a
    ``lean-toolchain`` file). Never installs anything; the errors say what to run."""
    if not normalize_toolchain_name(toolchain):
        raise NotALeanProjectError(
            "an empty toolchain name was given; a lean-toolchain file names one such as "
            "`leanprover/lean4:v4.22.0`"
        )
    return find_toolchain(toolchain)


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
    except (OSError, UnicodeDecodeError) as exc:
        raise NotALeanProjectError(
            f"cannot read {path}: {exc}; check its permissions and that it is UTF-8 text"
        ) from exc
    if not normalize_toolchain_name(text):
        raise NotALeanProjectError(
            f"{path} is empty; write the project's toolchain in it, such as "
            "`leanprover/lean4:v4.22.0`"
        )
    return resolve_toolchain(text)
