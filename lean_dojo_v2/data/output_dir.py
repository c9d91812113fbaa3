"""The one way this library replaces an output directory without losing anything.

A command that writes a directory (a split dataset, a database export, later checkpoints) stages it
in a temporary sibling and swaps it in at the end, so a crash never leaves a half-written output.
What it may replace is narrow: a path that is absent, an empty directory, or a directory this
library wrote (it carries :data:`MARKER`, or a ``metadata.json`` written by us). Anything else is
the user's and is refused with :class:`~lean_dojo_v2.errors.OutputExistsError` unless the caller
passes ``force=True``. An output never equals or contains one of the command's own inputs, not
even with ``force``.

What a killed process (``kill -9``: no clean-up runs) leaves beside an output is settled the next
time the same output is written (:func:`recover_left_behind`), and nothing finished is lost:

- ``.<name>.ldv2-<pid>-<random>.tmp``, a staging directory being built: half-written, removed;
- ``.<name>.ldv2-<pid>-<random>.old``, an earlier output set aside (:func:`set_aside`) until the
  new one had something to put in its place: put back, unless the caller says the output there
  now supersedes it (a training run with a checkpoint: what a normal exit would have decided);
- ``.<name>.ldv2-<pid>-<random>.del``, the output a swap was replacing: put back when the swap
  did not happen, removed when it did.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LeanDojoError, OutputExistsError
from .jsonio import loads

log = logging.getLogger(__name__)

MARKER = ".lean_dojo_v2_output"
"""File written into every directory this library produces; its presence means "ours"."""

_METADATA = "metadata.json"
_OUR_METADATA_KEYS = ("lean_dojo_v2_version",)
_STAGING = re.compile(r"^\.(?P<name>.+)\.ldv2-(?P<pid>\d+)-[A-Za-z0-9_]+\.(?P<kind>tmp|old|del)$")


def is_ours(path: str | Path) -> bool:
    """Whether ``path`` is a directory this library wrote (marker file or our ``metadata.json``)."""
    path = Path(path)
    if (path / MARKER).is_file():
        return True
    try:
        meta = loads((path / _METADATA).read_text("utf-8"))
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


def _left_behind(dst: Path) -> list[tuple[Path, str]]:
    """``(path, kind)`` of what dead processes left beside ``dst``, newest first."""
    try:
        entries = list(dst.parent.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        m = _STAGING.match(entry.name)
        if m is None or m["name"] != dst.name or _pid_alive(int(m["pid"])):
            continue
        try:
            # rename() sets ctime, so the newest ctime is the latest set aside.
            when = entry.lstat().st_ctime
        except OSError:
            continue
        found.append((when, entry, m["kind"]))
    found.sort(key=lambda f: f[0], reverse=True)
    return [(entry, kind) for _, entry, kind in found]


def _absent_or_empty(path: Path) -> bool:
    return (not path.exists() and not path.is_symlink()) or (
        path.is_dir() and not path.is_symlink() and _is_empty_dir(path)
    )


def recover_left_behind(
    dst: str | Path, *, superseded: Callable[[Path], bool] | None = None
) -> Path | None:
    """Settle what processes that died while writing ``dst`` left beside it; returns the
    set-aside output put back in ``dst``, if any. Hold ``dst``'s lock
    (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`) or be its only writer.

    - A staging directory (``.tmp``) is removed: it was never finished, and nothing reuses it.
    - A set-aside output (``.old``) is put back in ``dst`` when ``dst`` is absent or empty, or
      when ``superseded(dst)`` is false for a ``dst`` this library wrote (what the dead process
      had begun there is dropped). It is removed only when ``superseded(dst)`` is true. Without
      ``superseded``, one that cannot go back is left where it is, with a warning: never deleted.
    - The replaced output of an interrupted swap (``.del``) is put back when ``dst`` is absent,
      else removed (the swap happened; only its clean-up was cut short).
    """
    dst = Path(dst)
    restored = None
    for entry, kind in _left_behind(dst):
        if kind == "tmp":
            shutil.rmtree(entry, ignore_errors=True)
            log.info("removed %s, left half-written by a process that is gone", entry)
            continue
        if kind == "del":
            if _absent_or_empty(dst):
                put_back(entry, dst)
                restored = dst
                log.warning("put back %s: its replacement was cut short", dst)
            else:
                shutil.rmtree(entry, ignore_errors=True)
            continue
        if _absent_or_empty(dst) or (
            superseded is not None and is_ours(dst) and not superseded(dst)
        ):
            put_back(entry, dst)
            restored = dst
            log.warning(
                "put back the earlier contents of %s, set aside by a run that was killed "
                "before it had anything to replace them with (%s)",
                dst,
                entry.name,
            )
        elif superseded is not None and is_ours(dst):
            shutil.rmtree(entry, ignore_errors=True)
            log.info("removed %s: the run in %s replaced it", entry, dst)
        else:
            log.warning(
                "%s holds the earlier contents of %s, set aside by a process that was killed; "
                "they are kept: move them back yourself if you want them (mv %s %s)",
                entry,
                dst,
                entry,
                dst,
            )
    return restored


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
    # What a killed writer left goes back first, so that the check sees the real output.
    recover_left_behind(dst)
    check_output_dir(dst, force=force, sources=sources)
    dst.parent.mkdir(parents=True, exist_ok=True)
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
    is settled by :func:`recover_left_behind` (call it with ``superseded`` first: here it only
    puts one back where ``dst`` is gone).
    """
    dst = Path(dst)
    recover_left_behind(dst)
    if not dst.exists() and not dst.is_symlink():
        return None
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
    old = new.with_name(new.name[: -len(".tmp")] + ".del")
    dst.rename(old)
    try:
        new.rename(dst)
    except BaseException:
        old.rename(dst)
        raise
    shutil.rmtree(old, ignore_errors=True)


# -------------------------------------------------------------------------- a full disk


class DiskFullError(LeanDojoError, OSError):
    """Writing an output failed because its disk (or the user's quota there) is full.

    The message names the output and the filesystem with its free space. Free some space there
    (or write to another disk) and run the command again."""


# How the writers an output goes through say "disk full" when they do not raise an OSError with
# ENOSPC: safetensors' Rust I/O error, SQLite, libc's messages in other wrappers.
_FULL_WORDS = (
    "no space left on device",
    "os error 28",
    "database or disk is full",
    "disk quota exceeded",
    "os error 122",
)
# torch.save reports a failed write of its zip container with no reason at all. A full disk is
# by far the usual one; the message says how much room there is now, so a reader can tell.
_WRITE_FAILED_WORDS = ("unexpected pos", "file write failed", "basic_ios::clear")
# Below this much room (or 1 % of the disk, if less) a reasonless write failure is a full disk.
_NEARLY_FULL = 64 << 20


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)


def _mount_point(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def disk_full_error(
    exc: BaseException, where: str | Path, *, then: str = "run the command again"
) -> DiskFullError | None:
    """A :class:`DiskFullError` for ``exc`` when it (or an exception it came from) says the disk
    holding ``where`` is full, else None. ``then`` ends the message: what to do once there is
    room again."""
    where = Path(where)
    mount = _mount_point(where)
    try:
        usage = shutil.disk_usage(mount)
        free: int | None = usage.free
        total = usage.total
    except OSError:
        free, total = None, 0
    full: BaseException | None = None
    file = None
    guessed = False
    for e in _chain(exc):
        text = str(e).lower()
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            full, file, guessed = e, e.filename, False
        elif any(w in text for w in _FULL_WORDS):
            if full is None or guessed:
                full, guessed = e, False
        elif any(w in text for w in _WRITE_FAILED_WORDS) and full is None:
            full, guessed = e, True
    if full is None:
        return None
    room = f"{_size(free)} free" if free is not None else "free space unknown"
    room += f" on the filesystem mounted at {mount}"
    what = f"writing {file}" if file else f"writing under {where}"
    head = "the disk is full"
    if guessed:
        nearly_full = free is not None and free < min(_NEARLY_FULL, total // 100 or _NEARLY_FULL)
        if not nearly_full:
            head = "the disk is probably full"
        room = f"the writer gave no reason: {str(full).strip()!r}; {room}"
    return DiskFullError(
        f"{head}: {what} failed ({room}); free some space there, or write to another disk, "
        f"and {then}"
    )
