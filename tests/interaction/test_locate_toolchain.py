"""Pantograph discovery on the shared toolchain module (lean_dojo_v2.system): the version probe
within ready_timeout, elan-aware ``lake``, one version comparison, typed subprocess failures."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lean_dojo_v2.interaction import LeanNotFoundError
from lean_dojo_v2.interaction.pantograph import PantographEnv, locate, parse_version
from lean_dojo_v2.system.toolchain import toolchain_dirname

from .conftest import fake_config, fake_wrapper, write_script

NIGHTLY = "leanprover/lean4:nightly-2024-06-01"


def test_version_probe_honours_ready_timeout(tmp_path: Path, sample_proofs):
    # A REPL whose `--version` hangs: the probe used to wait its own 60 s whatever ready_timeout
    # said; it is part of starting up, so ready_timeout bounds it too.
    wrapper = fake_wrapper(tmp_path / "repl", 'if [ "$1" = "--version" ]; then sleep 60; fi')
    t0 = time.monotonic()
    with PantographEnv(fake_config(command=str(wrapper), ready_timeout=2.0)) as env:
        assert env.start(sample_proofs[0]).goals
    assert time.monotonic() - t0 < 15


def test_repl_version_check_accepts_matching_nightly(tmp_path: Path):
    # A nightly Lean reports "4.10.0-nightly-2024-06-01"; its lean-toolchain says
    # "nightly-2024-06-01": the same Lean (tracing always knew; the REPL check refused it).
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text(NIGHTLY + "\n")
    located = locate.Located((str(write_script(tmp_path / "repl", "exit 0")),), "test")
    version = parse_version("0.3.7/v4.10.0-nightly-2024-06-01")
    assert locate.check_versions(version, located, project) == "4.10.0-nightly-2024-06-01"


@pytest.fixture
def no_lean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ELAN_HOME", str(home / ".elan"))
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", "/bin"]))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.21.0\n")
    return {"home": home, "elan": home / ".elan", "project": project}


def _fake_lake(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_script(path, body)


def test_lake_lean_path_finds_the_projects_lake_through_elan(no_lean):
    # elan installed the usual way (~/.elan, not on this process's PATH): the project's own
    # toolchain's lake is used, as tracing always did.
    toolchain_bin = no_lean["elan"] / "toolchains" / toolchain_dirname("leanprover/lean4:v4.21.0")
    _fake_lake(toolchain_bin / "bin" / "lake", 'echo "/from/the/toolchain/$1/$2/$3"')
    _fake_lake(no_lean["elan"] / "bin" / "lake", 'echo "/from/the/proxy"')
    assert locate.lake_lean_path(no_lean["project"]) == "/from/the/toolchain/env/printenv/LEAN_PATH"


def test_lake_lean_path_uses_elans_proxy_when_the_toolchain_is_elsewhere(no_lean):
    _fake_lake(no_lean["elan"] / "bin" / "lake", 'echo "/from/the/proxy"')
    assert locate.lake_lean_path(no_lean["project"]) == "/from/the/proxy"


def test_lake_lean_path_without_lake_says_what_to_do(no_lean):
    with pytest.raises(LeanNotFoundError, match="lean_path=") as info:
        locate.lake_lean_path(no_lean["project"])
    assert "elan" in str(info.value)


def test_lake_lean_path_failure_and_timeout_are_typed(no_lean):
    lake = _fake_lake(no_lean["elan"] / "bin" / "lake", 'echo "error: no lakefile" >&2; exit 1')
    with pytest.raises(LeanNotFoundError, match=r"exit 1\): error: no lakefile"):
        locate.lake_lean_path(no_lean["project"])
    write_script(lake, "sleep 60")
    t0 = time.monotonic()
    with pytest.raises(LeanNotFoundError, match="lake_timeout"):
        locate.lake_lean_path(no_lean["project"], timeout=1.0)
    assert time.monotonic() - t0 < 10
    write_script(lake, r"printf '/a\377'")
    with pytest.raises(LeanNotFoundError, match="not UTF-8"):
        locate.lake_lean_path(no_lean["project"])


def test_version_probe_of_a_missing_binary_is_lean_not_found(tmp_path: Path):
    located = locate.Located((str(tmp_path / "gone" / "repl"),), "test")
    with pytest.raises(LeanNotFoundError, match="cannot run"):
        locate.query_version(located, timeout=5)
