"""The one way this library replaces an output directory without losing anything.

A command that writes a directory (a split dataset, a database export, later checkpoints) stages it
in a temporary sibling and swaps it in at the end, so a crash never leaves a half-written output.
What it may replace is narrow: a path that is absent, an empty directory, or a directory this
library wrote (it carries :data:`MARKER`, or a ``metadata.json`` written by us). Anything else is
the user's and is refused with :class:`~lean_dojo_v2.errors.OutputExistsError` unless the caller
passes ``force=True``. An output never equals or contains one of the command's own inputs, not
even with ``force``.

Staging directories are named ``.<name>.ldv2-<pid>-<random>.tmp``; one left behind by a killed run
(its process is gone) is removed the next time the same output is written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import OutputExistsError

MARKER = ".lean_dojo_v2_output"
"""File written into every directory this library produces; its presence means "ours"."""

_METADATA = "metadata.json"
_OUR_METADATA_KEYS = ("lean_dojo_v2_version",)
_STAGING = re.compile(r"^\.(?P<name>.+)\.ldv2-(?P<pid>\d+)-[A-Za-z0-9_]+\.(tmp|old)$")


def is_ours(path: str | Path) -> bool:
    """Whether ``path`` is a directory this library wrote (marker file or our ``metadata.json``)."""
    path = Path(path)
    if (path / MARKER).is_file():
        return True
    try:
        meta = json.loads((path / _METADATA).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and any(k in meta for k in _OUR_METADATA_KEYS)


def _is_empty_dir(path: Path) -> bool:
    try:
        return next(path.iterdir(), None) is None
    except OSError:
        return False


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def check_output_dir(
    dst: str | Path, *, force: bool = False, sources: Iterable[str | Path] = ()
) -> Path:
    """Raise :class:`OutputExistsError` unless ``dst`` may be (re)written; returns it resolved.

    ``sources`` are the command's inputs: ``dst`` may neither equal, contain nor lie inside one.
    """
    dst = Path(dst)
    if not dst.name or dst.name in (".", ".."):
        raise OutputExistsError(f"{str(dst)!r} cannot be an output directory; name a new directory")
    real = dst.resolve()
    for src in sources:
        src_real = Path(src).resolve()
        if _overlaps(real, src_real):
            raise OutputExistsError(
                f"output {dst} overlaps the input {src}; write to a directory outside the input"
            )
    if not dst.exists() and not dst.is_symlink():
        return real
    if not dst.is_dir():
        raise OutputExistsError(f"output {dst} exists and is not a directory; choose another path")
    if force or _is_empty_dir(dst) or is_ours(dst):
        return real
    raise OutputExistsError(
        f"output directory {dst} holds files this library did not write; choose a new path, "
        "or pass --force (force=True) to replace it"
    )


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_staging(dst: str | Path) -> list[Path]:
    """Remove staging directories of ``dst`` left by runs whose process is gone; returns them."""
    dst = Path(dst)
    removed: list[Path] = []
    try:
        entries = list(dst.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _STAGING.match(entry.name)
        if m is None or m["name"] != dst.name or _pid_alive(int(m["pid"])):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def mark_ours(path: str | Path) -> None:
    """Write :data:`MARKER` into directory ``path``."""
    (Path(path) / MARKER).write_text(
        "Written by lean-dojo-v2; this directory may be replaced by lean-dojo-v2 commands.\n",
        "utf-8",
    )


@contextmanager
def staged_output_dir(
    dst: str | Path, *, force: bool = False, sources: Iterable[str | Path] = ()
) -> Iterator[Path]:
    """Yield an empty staging directory; on normal exit it replaces ``dst`` (marked as ours).

    The check of :func:`check_output_dir` runs before anything is written and again just before
    the swap (the user may have put files there meanwhile). On an exception the staging directory
    is removed and ``dst`` is untouched.
    """
    from .jsonio import fix_mode

    dst = Path(dst)
    sources = list(sources)
    check_output_dir(dst, force=force, sources=sources)
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(dst)
    stage = Path(
        tempfile.mkdtemp(prefix=f".{dst.name}.ldv2-{os.getpid()}-", suffix=".tmp", dir=dst.parent)
    )
    try:
        yield stage
        mark_ours(stage)
        fix_mode(stage, directory=True)
        check_output_dir(dst, force=force, sources=sources)
        _swap(stage, dst)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def set_aside(dst: str | Path) -> Path | None:
    """Move directory ``dst`` out of the way (to a staging sibling ``.<name>.ldv2-<pid>-*.old``)
    so a new output can be built in its place; returns where it went (None if ``dst`` is absent).

    The caller then either :func:`put_back` the old one (the new output came to nothing) or
    removes it (the new output has something to put there). One left behind by a killed process
    is removed by :func:`remove_stale_staging`, like a staging directory.
    """
    dst = Path(dst)
    if not dst.exists() and not dst.is_symlink():
        return None
    remove_stale_staging(dst)
    old = Path(
        tempfile.mkdtemp(prefix=f".{dst.name}.ldv2-{os.getpid()}-", suffix=".old", dir=dst.parent)
    )
    old.rmdir()  # only the unique name is wanted: rename() needs the target absent
    dst.rename(old)
    return old


def put_back(old: Path, dst: str | Path) -> None:
    """Undo :func:`set_aside`: whatever was built at ``dst`` since is removed."""
    dst = Path(dst)
    if dst.is_dir() and not dst.is_symlink():
        shutil.rmtree(dst)
    elif dst.exists() or dst.is_symlink():
        dst.unlink()
    old.rename(dst)


def _swap(new: Path, dst: Path) -> None:
    if not dst.exists() and not dst.is_symlink():
        new.rename(dst)
        return
    old = new.with_name(new.name[: -len(".tmp")] + ".old")
    dst.rename(old)
    try:
        new.rename(dst)
    except BaseException:
        old.rename(dst)
        raise
    shutil.rmtree(old, ignore_errors=True)
