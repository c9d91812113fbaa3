"""``disk_full_error``: each writer an output goes through says "disk full" its own way; each is
recognised, named in one line with the filesystem and its free space, and nothing else is taken
for a full disk. The messages are the ones these writers gave on a real full tmpfs (the quickstart
test ``test_disk_full_during_training_is_one_line_and_a_rerun_recovers`` fills one for real)."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from lean_dojo_v2.data.output_dir import DiskFullError, disk_full_error
from lean_dojo_v2.errors import LeanDojoError


def _raised(make):
    try:
        make()
    except Exception as exc:  # noqa: BLE001 - whatever the writer raises is the input here
        return exc
    raise AssertionError("nothing raised")


def _enospc(path: Path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def test_an_oserror_with_enospc_names_the_file_and_the_filesystem(tmp_path):
    full = disk_full_error(_enospc(tmp_path / "out" / "a.json"), tmp_path / "out")
    assert isinstance(full, DiskFullError)
    assert isinstance(full, LeanDojoError) and isinstance(full, OSError)
    text = str(full)
    assert (
        text.startswith("the disk is full: writing ") and str(tmp_path / "out" / "a.json") in text
    )
    assert "free on the filesystem mounted at /" in text and "\n" not in text
    assert text.endswith("and run the command again")


def test_a_quota_is_a_full_disk_too(tmp_path):
    exc = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(tmp_path / "x"))
    assert disk_full_error(exc, tmp_path) is not None


@pytest.mark.parametrize(
    "make",
    [
        # safetensors (the adapter's weights): a Rust I/O error, not an OSError.
        lambda: _safetensor_error(
            "Error while serializing: I/O error: No space left on device (os error 28)"
        ),
        # SQLite, directly and as the database layer words it.
        lambda: sqlite3.OperationalError("database or disk is full"),
        lambda: LeanDojoError(
            "cannot read or write database /x/q.sqlite: database or disk is full; check the disk"
        ),
    ],
    ids=["safetensors", "sqlite", "database"],
)
def test_writers_that_say_it_in_words(tmp_path, make):
    full = disk_full_error(make(), tmp_path, then="run the quickstart again")
    assert full is not None and f"writing under {tmp_path} failed" in str(full)
    assert str(full).endswith("run the quickstart again")


def _safetensor_error(message: str) -> Exception:
    from safetensors import SafetensorError

    return SafetensorError(message)


def test_the_cause_of_a_wrapped_error_is_found(tmp_path):
    def wrapped():
        try:
            raise _enospc(tmp_path / "ckpt" / "optimizer.pt")
        except OSError as exc:
            raise RuntimeError("saving the checkpoint failed") from exc

    full = disk_full_error(_raised(wrapped), tmp_path)
    assert full is not None and "optimizer.pt" in str(full)


def test_torch_save_without_a_reason_is_taken_for_a_full_disk_and_says_so(tmp_path):
    # torch.save's zip writer says only this when a write fails (what a full tmpfs gave). With
    # next to no room left (under 64 MiB, or 1 % of the disk when that is less) that is certain;
    # with room, the message says "probably" and quotes the writer.
    import shutil

    exc = RuntimeError(
        "[enforce fail at inline_container.cc:672] . unexpected pos 195264 vs 195156"
    )
    full = disk_full_error(exc, tmp_path)
    assert full is not None and "unexpected pos 195264" in str(full)
    usage = shutil.disk_usage(tmp_path)
    nearly_full = usage.free < min(64 << 20, usage.total // 100)
    head = "the disk is full:" if nearly_full else "the disk is probably full:"
    assert str(full).startswith(head)


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("bad value"),
        OSError(errno.EACCES, "Permission denied", "/x"),
        FileNotFoundError(errno.ENOENT, "No such file or directory", "/x"),
        RuntimeError("CUDA out of memory"),
    ],
)
def test_other_errors_are_left_alone(tmp_path, exc):
    assert disk_full_error(exc, tmp_path) is None
