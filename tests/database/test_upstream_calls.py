"""Upstream LeanDojo-v2's database calls as its example ``examples/data_generation/trace_github.py`` writes
them: ``DynamicDatabase()`` with no arguments (a file under ``RAID_DIR``, created when the
database is opened, never at import) and ``trace_repository(url=..., commit=...,
build_deps=False)``, which on a machine without Lean is one typed error naming what is missing,
raised before anything is cloned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.database.adding import require_lean
from lean_dojo_v2.errors import LeanNotFoundError

URL = "https://github.com/durant42040/lean4-example"
COMMIT = "3e23ab0bfdcfdbd5b11ab53c2cd8b5d16492e9c2"


@pytest.fixture()
def raid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from lean_dojo_v2.config import reset_settings

    raid_dir = tmp_path / "deep" / "raid"
    monkeypatch.setenv("RAID_DIR", str(raid_dir))
    reset_settings()
    yield raid_dir
    reset_settings()


@pytest.fixture()
def no_lean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with git but no lean, and an empty HOME / ELAN_HOME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink("/usr/bin/git", bin_dir / "git")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))


def test_importing_the_database_creates_nothing(tmp_path: Path):
    raid_dir = tmp_path / "raid"
    env = dict(os.environ, RAID_DIR=str(raid_dir))
    code = "import lean_dojo_v2.database, lean_dojo_v2.database.dynamic_database"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert not raid_dir.exists() and list(tmp_path.iterdir()) == []


def test_dynamic_database_without_arguments_opens_under_raid_dir(raid: Path):
    assert not raid.exists()
    with DynamicDatabase() as db:
        assert db.path == raid / "dynamic_database.sqlite"
        assert db.repositories() == []
    assert db.path.is_file()


def test_trace_repository_without_lean_is_one_clear_error(raid: Path, no_lean: None):
    with DynamicDatabase() as db:
        with pytest.raises(LeanNotFoundError) as info:
            db.trace_repository(url=URL, commit=COMMIT, build_deps=False)
        assert db.repositories() == []
    message = str(info.value)
    assert "needs Lean" in message and "elan" in message and "\n" not in message
    assert info.value.__cause__ is None and info.value.__context__ is None
    # Raised before cloning: nothing was written under RAID_DIR but the database.
    assert sorted(p.name for p in raid.iterdir() if not p.name.startswith("dynamic_database")) == []


def test_any_lean_passes_the_check(tmp_path: Path, no_lean: None, monkeypatch):
    elan = tmp_path / "elan" / "bin" / "elan"
    elan.parent.mkdir(parents=True)
    elan.write_text("#!/bin/sh\n")
    elan.chmod(0o755)
    require_lean()  # elan in $ELAN_HOME/bin
    elan.unlink()
    with pytest.raises(LeanNotFoundError):
        require_lean()
    lean = tmp_path / "bin" / "lean"
    lean.write_text("#!/bin/sh\n")
    lean.chmod(0o755)
    require_lean()  # lean on PATH
