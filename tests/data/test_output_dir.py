"""``data/output_dir.py``: what a writer killed with SIGKILL leaves beside its output is settled by
the next write without losing a finished output (a staging directory is removed, a set-aside or a
replaced output is put back). Each leftover is made by a real child process that kills itself at
that point of the real code."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lean_dojo_v2.data.output_dir import (
    MARKER,
    mark_ours,
    recover_left_behind,
    set_aside,
    staged_output_dir,
)
from lean_dojo_v2.errors import OutputExistsError

REPO_ROOT = Path(__file__).resolve().parents[2]

# The child runs the real code on ``dst`` and kills itself with SIGKILL where ``where`` says.
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from lean_dojo_v2.data import output_dir

    dst, where = Path(sys.argv[1]), sys.argv[2]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "staging":  # while the new output is being built
        with output_dir.staged_output_dir(dst) as stage:
            (stage / "half").write_text("half")
            die()
    elif where == "swap":  # between the two renames of the swap
        real_rename = Path.rename

        def rename(self, target):
            out = real_rename(self, target)
            if self == dst:  # the old output moved out of the way, the new one not yet in
                die()
            return out

        Path.rename = rename
        with output_dir.staged_output_dir(dst) as stage:
            (stage / "new").write_text("new")
    elif where == "set_aside":  # the old output set aside, the new one not yet made
        output_dir.set_aside(dst)
        die()
    elif where == "set_aside_new":  # ... and the new one begun
        output_dir.set_aside(dst)
        dst.mkdir()
        output_dir.mark_ours(dst)
        (dst / "begun").write_text("begun")
        die()
    """
)


def _kill_at(dst: Path, where: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(dst), where],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]


def _output(dst: Path, text: str = "finished") -> Path:
    dst.mkdir(parents=True)
    (dst / "result.txt").write_text(text)
    mark_ours(dst)
    return dst


def _beside(dst: Path) -> list[str]:
    return sorted(p.name for p in dst.parent.iterdir() if p.name.startswith(f".{dst.name}.ldv2-"))


class Failed(Exception):
    pass


def _failed_write(dst: Path) -> None:
    with pytest.raises(Failed), staged_output_dir(dst) as stage:
        (stage / "x").write_text("x")
        raise Failed


def test_a_swap_killed_between_its_renames_loses_nothing(tmp_path):
    dst = _output(tmp_path / "out")
    _kill_at(dst, "swap")
    assert not dst.exists() and len(_beside(dst)) == 2  # the old output, the new one
    _failed_write(dst)  # the next write fails: the output before the killed one is back
    assert (dst / "result.txt").read_text() == "finished"
    assert _beside(dst) == []


def test_a_swap_killed_between_its_renames_then_a_write_replaces_it(tmp_path):
    dst = _output(tmp_path / "out")
    _kill_at(dst, "swap")
    with staged_output_dir(dst) as stage:
        (stage / "result.txt").write_text("newer")
    assert (dst / "result.txt").read_text() == "newer"
    assert _beside(dst) == []


def test_a_half_built_staging_directory_is_removed_and_the_output_untouched(tmp_path):
    dst = _output(tmp_path / "out")
    _kill_at(dst, "staging")
    assert [n.endswith(".tmp") for n in _beside(dst)] == [True]
    _failed_write(dst)
    assert (dst / "result.txt").read_text() == "finished"
    assert _beside(dst) == []


@pytest.mark.parametrize("where", ["set_aside", "set_aside_new"])
def test_a_set_aside_output_is_put_back_by_the_next_write(tmp_path, where):
    dst = _output(tmp_path / "out")
    _kill_at(dst, where)
    assert [n.endswith(".old") for n in _beside(dst)] == [True]
    if where == "set_aside":
        assert not dst.exists()
        assert recover_left_behind(dst) == dst  # the output was gone: always put back
    else:
        # What the killed process began is there: only the caller knows if it supersedes.
        recover_left_behind(dst, superseded=lambda d: False)
    assert (dst / "result.txt").read_text() == "finished"
    assert not (dst / "begun").exists() and _beside(dst) == []


def test_a_set_aside_superseded_by_what_the_killed_process_made_is_removed(tmp_path):
    dst = _output(tmp_path / "out")
    _kill_at(dst, "set_aside_new")
    assert recover_left_behind(dst, superseded=lambda d: (d / "begun").is_file()) is None
    assert (dst / "begun").is_file() and _beside(dst) == []


def test_without_the_callers_word_a_set_aside_is_kept_and_named(tmp_path, caplog):
    dst = _output(tmp_path / "out")
    _kill_at(dst, "set_aside_new")
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.data.output_dir"):
        recover_left_behind(dst)  # no ``superseded``: neither output may be dropped
    (kept,) = _beside(dst)
    assert (tmp_path / kept / "result.txt").read_text() == "finished"
    assert (dst / "begun").is_file()
    assert kept in caplog.text and "move them back" in caplog.text


def test_a_set_aside_of_a_foreign_directory_is_put_back_and_still_refused(tmp_path):
    # With --force a run may set aside a directory of the user's; killed, the next run without
    # --force finds the user's files back in place and refuses them as before.
    dst = tmp_path / "mine"
    dst.mkdir()
    (dst / "notes.txt").write_text("mine")
    _kill_at(dst, "set_aside")
    with pytest.raises(OutputExistsError, match="did not write"):
        with staged_output_dir(dst) as stage:
            (stage / "x").write_text("x")
    assert (dst / "notes.txt").read_text() == "mine" and not (dst / MARKER).exists()
    assert _beside(dst) == []


def test_a_live_process_set_aside_is_left_alone(tmp_path):
    dst = _output(tmp_path / "out")
    old = set_aside(dst)  # this process is alive: its set-aside is its own business
    assert old is not None and not dst.exists()
    recover_left_behind(dst, superseded=lambda d: True)
    assert old.is_dir() and not dst.exists()
