"""Finding lean/lake with fake elan, lean and lake scripts and a fake ELAN_HOME."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lean_dojo_v2.lean_dojo import toolchain as tc
from lean_dojo_v2.lean_dojo.errors import (
    NotALeanProjectError,
    ToolchainNotFoundError,
    ToolchainNotInstalledError,
)
from lean_dojo_v2.lean_dojo.toolchain import (
    Toolchain,
    find_elan,
    installed_toolchains,
    resolve_toolchain,
    toolchain_dirname,
    toolchain_for,
    toolchain_from_dirname,
)

NAME = "leanprover/lean4:v4.9.0"
INSTALL = "elan toolchain install leanprover/lean4:v4.9.0"
ELAN_INIT = "curl https://elan.lean-lang.org/elan-init.sh -sSf | sh"


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_lean(path: Path, version: str, prefix: str = "/opt/lean") -> Path:
    return script(
        path,
        'case "$1" in\n'
        f'  --version) echo "Lean (version {version}, x86_64-unknown-linux-gnu, commit '
        '8f9843a4a5fe, Release)";;\n'
        f'  --print-prefix) echo "{prefix}";;\n'
        "  *) exit 1;;\n"
        "esac",
    )


def install_toolchain(home: Path, name: str, version: str) -> Path:
    bin_dir = home / "toolchains" / toolchain_dirname(name) / "bin"
    fake_lean(bin_dir / "lean", version, prefix=str(bin_dir.parent))
    script(bin_dir / "lake", 'echo "Lake version 5.0.0"')
    return bin_dir


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """An empty HOME and ELAN_HOME, and a PATH with only the system directories and ``bin``."""
    home = tmp_path / "home"
    home.mkdir()
    elan_home = tmp_path / "elan"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ELAN_HOME", str(elan_home))
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]))
    monkeypatch.delenv("ELAN_TOOLCHAIN", raising=False)
    tc._print_prefix.cache_clear()
    return {"home": home, "elan_home": elan_home, "bin": bin_dir, "tmp": tmp_path}


def fake_elan(path: Path, listing: str = "") -> Path:
    return script(path, f'if [ "$1 $2" = "toolchain list" ]; then printf "{listing}"; fi')


@pytest.mark.parametrize(
    ("name", "dirname"),
    [
        ("leanprover/lean4:v4.9.0", "leanprover--lean4---v4.9.0"),
        ("leanprover/lean4:v4.10.0-rc2", "leanprover--lean4---v4.10.0-rc2"),
        (
            "leanprover/lean4-nightly:nightly-2024-06-01",
            "leanprover--lean4-nightly---nightly-2024-06-01",
        ),
    ],
)
def test_name_encoding_round_trip(name, dirname):
    assert toolchain_dirname(name) == dirname
    assert toolchain_from_dirname(dirname) == name


def test_nothing_installed(env):
    assert find_elan() is None
    with pytest.raises(ToolchainNotFoundError) as info:
        resolve_toolchain(NAME)
    assert not isinstance(info.value, ToolchainNotInstalledError)
    assert ELAN_INIT in str(info.value) and INSTALL in str(info.value)


def test_elan_without_the_toolchain(env):
    elan = fake_elan(env["bin"] / "elan", "leanprover/lean4:v4.8.0 (default)\\n")
    install_toolchain(env["elan_home"], "leanprover/lean4:v4.8.0", "4.8.0")
    assert find_elan() == elan
    assert installed_toolchains() == ["leanprover/lean4:v4.8.0"]
    with pytest.raises(ToolchainNotInstalledError) as info:
        resolve_toolchain(NAME)
    message = str(info.value)
    assert INSTALL in message and "leanprover/lean4:v4.8.0" in message
    # A lean of the right version elsewhere on PATH does not stand in for elan's toolchain.
    fake_lean(env["bin"] / "lean", "4.9.0")
    with pytest.raises(ToolchainNotInstalledError, match="elan toolchain install"):
        resolve_toolchain(NAME)


def test_elan_with_the_toolchain(env):
    elan = script(env["elan_home"] / "bin" / "elan", "exit 3")  # elan failing is tolerated
    bin_dir = install_toolchain(env["elan_home"], NAME, "4.9.0")
    (env["elan_home"] / "toolchains" / ".tmp-download").mkdir()
    assert find_elan() == elan
    assert installed_toolchains() == [NAME]
    found = resolve_toolchain(NAME + "\n")
    assert found == Toolchain(
        name=NAME, version="4.9.0", lean=bin_dir / "lean", lake=bin_dir / "lake", elan=elan
    )
    assert found.lean_cmd("--run", "x.lean") == [str(bin_dir / "lean"), "--run", "x.lean"]
    assert found.lake_cmd("build") == [str(bin_dir / "lake"), "build"]
    assert found.prefix() == bin_dir.parent
    run_env = found.env({"PATH": "/usr/bin"})
    assert run_env["PATH"] == f"{bin_dir}{os.pathsep}/usr/bin"
    assert run_env["ELAN_TOOLCHAIN"] == NAME
    # A bare version means elan's default origin.
    assert resolve_toolchain("v4.9.0").name == NAME


def test_elan_in_home_and_toolchain_list(env, monkeypatch):
    monkeypatch.delenv("ELAN_HOME")
    listing = "leanprover/lean4:v4.9.0 (default)\\nleanprover/lean4:v4.7.0\\nstable\\n"
    elan = fake_elan(env["home"] / ".elan" / "bin" / "elan", listing)
    install_toolchain(env["home"] / ".elan", "leanprover/lean4:v4.10.0", "4.10.0")
    assert find_elan() == elan
    assert installed_toolchains() == [
        "leanprover/lean4:stable",
        "leanprover/lean4:v4.10.0",
        "leanprover/lean4:v4.7.0",
        "leanprover/lean4:v4.9.0",
    ]
    assert resolve_toolchain("leanprover/lean4:v4.10.0").lean.parent.parent.name == (
        "leanprover--lean4---v4.10.0"
    )


def test_lean_on_path_with_the_right_version(env):
    lean = fake_lean(env["bin"] / "lean", "4.9.0")
    lake = script(env["bin"] / "lake", "exit 0")
    found = resolve_toolchain(NAME)
    assert found == Toolchain(name=NAME, version="4.9.0", lean=lean, lake=lake, elan=None)
    assert "ELAN_TOOLCHAIN" not in found.env({})
    assert found.prefix() == Path("/opt/lean")


def test_lean_on_path_with_the_wrong_version(env):
    fake_lean(env["bin"] / "lean", "4.12.0")
    script(env["bin"] / "lake", "exit 0")
    with pytest.raises(ToolchainNotInstalledError) as info:
        resolve_toolchain(NAME)
    message = str(info.value)
    assert "4.12.0" in message and NAME in message and INSTALL in message


def test_lean_on_path_without_lake(env):
    fake_lean(env["bin"] / "lean", "4.9.0")
    with pytest.raises(ToolchainNotFoundError, match="lake is not"):
        resolve_toolchain(NAME)


def test_nightly_on_path(env):
    fake_lean(env["bin"] / "lean", "4.10.0-nightly-2024-06-01")
    script(env["bin"] / "lake", "exit 0")
    found = resolve_toolchain("leanprover/lean4:nightly-2024-06-01")
    assert found.version == "nightly-2024-06-01"


def test_toolchain_for(env):
    project = env["tmp"] / "proj"
    project.mkdir()
    with pytest.raises(NotALeanProjectError, match="lean-toolchain"):
        toolchain_for(project)
    (project / "lean-toolchain").write_text("\n")
    with pytest.raises(NotALeanProjectError, match="empty"):
        toolchain_for(project)
    (project / "lean-toolchain").write_text(NAME + "\n")
    with pytest.raises(ToolchainNotFoundError, match="elan toolchain install"):
        toolchain_for(project)
    install_toolchain(env["elan_home"], NAME, "4.9.0")
    fake_elan(env["bin"] / "elan")
    assert toolchain_for(project).name == NAME


# ------------------------------------------------------------------ one toolchain module, one error


def test_no_lean_is_one_error_class():
    """Tracing's ToolchainNotFoundError and the Lean boundary's LeanNotFoundError were two
    classes for one condition; now one (the old names are aliases) and catchable together."""
    from lean_dojo_v2 import errors
    from lean_dojo_v2.interaction import LeanNotFoundError
    from lean_dojo_v2.lean_dojo import DestinationExistsError, TracingError

    assert LeanNotFoundError is ToolchainNotFoundError is errors.LeanNotFoundError
    assert ToolchainNotInstalledError is errors.ToolchainNotInstalledError
    assert issubclass(ToolchainNotInstalledError, LeanNotFoundError)
    assert issubclass(DestinationExistsError, errors.OutputExistsError)
    assert issubclass(DestinationExistsError, TracingError)
    assert issubclass(DestinationExistsError, FileExistsError)


def test_no_lean_is_still_caught_as_interaction_or_tracing_error():
    """Merging the two "no Lean" classes must not break callers that catch the family of the layer
    they use (``except InteractionError`` around a PantographEnv, ``except TracingError`` around
    trace())."""
    from lean_dojo_v2.interaction import InteractionError, LeanNotFoundError
    from lean_dojo_v2.lean_dojo import TracingError

    for family in (InteractionError, TracingError):
        try:
            raise LeanNotFoundError("no lean")
        except family:
            pass
    assert issubclass(ToolchainNotInstalledError, InteractionError)


def test_resolving_a_toolchain_does_not_load_the_interaction_layer(tmp_path):
    """lean_dojo.toolchain used to import interaction.pantograph.locate (asyncio, the client)
    just to normalise a version; both now share lean_dojo_v2.system.toolchain."""
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    fake_lean(bin_dir / "lean", "4.9.0")
    script(bin_dir / "lake", "exit 0")
    code = (
        "import sys\n"
        "from lean_dojo_v2.lean_dojo.toolchain import resolve_toolchain\n"
        f"print(resolve_toolchain({NAME!r}).version)\n"
        "print(sorted(m for m in sys.modules if m.startswith('lean_dojo_v2.interaction')))\n"
    )
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "ELAN_HOME": str(tmp_path / "elan"),
        "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split("\n")[:2] == ["4.9.0", "[]"]


def test_undecodable_elan_output_is_not_a_traceback(env):
    # elan printing bytes that are not UTF-8 (a broken terminal encoding, a different program
    # named elan) used to escape as UnicodeDecodeError; the listing is only advice, so it is
    # dropped and the error about the missing toolchain still comes through.
    script(env["bin"] / "elan", r"printf '\377\376 broken\n'")
    install_toolchain(env["elan_home"], "leanprover/lean4:v4.8.0", "4.8.0")
    assert installed_toolchains() == ["leanprover/lean4:v4.8.0"]
    with pytest.raises(ToolchainNotInstalledError, match="elan toolchain install"):
        resolve_toolchain(NAME)


def test_undecodable_lean_prefix_is_a_typed_error(env):
    bin_dir = install_toolchain(env["elan_home"], NAME, "4.9.0")
    script(
        bin_dir / "lean",
        'case "$1" in --version) echo "Lean (version 4.9.0)";; *) printf "/opt/\\377";; esac',
    )
    fake_elan(env["bin"] / "elan")
    found = resolve_toolchain(NAME)
    with pytest.raises(ToolchainNotFoundError, match="reinstall the toolchain"):
        found.prefix()


def test_lean_version_probe_that_hangs_is_stopped(env, monkeypatch):
    from lean_dojo_v2.system import toolchain as st

    monkeypatch.setattr(st, "COMMAND_TIMEOUT_S", 1.0)
    script(env["bin"] / "lean", "sleep 30")
    script(env["bin"] / "lake", "exit 0")
    import time

    t0 = time.monotonic()
    with pytest.raises(ToolchainNotFoundError, match="did not report a version"):
        resolve_toolchain(NAME)
    assert time.monotonic() - t0 < 10
