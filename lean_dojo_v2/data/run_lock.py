"""Layer 0 (data): one process at a time per output directory (:func:`lock_output_dir`).

Two runs writing into the same directory mix their files (one resumes from the other's
checkpoint, its config says one thing and its weights another). A run therefore holds an
exclusive lock for as long as it writes: the file ``.<name>.lock`` *next to* the directory (so the
lock survives the directory being replaced or set aside), holding the holder's pid, host and start
time. The lock itself is ``fcntl.flock`` on that file: the kernel drops it when the holder dies,
so a lock left by a killed run (kill -9 included) is taken over without anyone having to guess
whether a pid is still alive. A second run fails at once with :class:`RunLockedError` naming the
holder.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import OutputExistsError
from .jsonio import loads


class RunLockedError(OutputExistsError):
    """Another run (named by pid and host) is writing into the same output directory.

    Wait for it to finish, stop it, or choose another output directory.
    """


def lock_path(dst: str | Path) -> Path:
    """The lock file of output directory ``dst``: ``.<name>.lock`` beside it."""
    dst = Path(dst).absolute()
    return dst.with_name(f".{dst.name}.lock")


def _holder(path: Path) -> str:
    try:
        info = loads(path.read_text("utf-8"))
        return f"pid {info['pid']} on {info['host']} (since {info.get('since', '?')})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextmanager
def lock_output_dir(dst: str | Path) -> Iterator[Path]:
    """Hold the exclusive lock of output directory ``dst`` for the ``with`` block (released on
    exit, exceptions included); :class:`RunLockedError` at once if another process holds it.
    Yields the lock file."""
    import fcntl

    path = lock_path(dst)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunLockedError(
                f"output directory {dst} is in use by another run: {_holder(path)}; wait for it "
                f"to finish or choose another output directory (lock file {path})"
            ) from None
        # The holder before us may have removed the file between our open and our flock: then
        # we locked a file nobody else sees, and must lock the one now at ``path`` instead.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        yield path
    finally:
        # Unlink while still holding the lock, so no one locks a file about to disappear.
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)


__all__ = ["RunLockedError", "lock_output_dir", "lock_path"]
