"""lean_dojo_v2.system.toolchain: one module that reads ``lean-toolchain``, compares Lean versions
and finds elan/lean/lake, below both tracing and the Pantograph client."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import lean_dojo_v2
from lean_dojo_v2.system import toolchain as st

NAME = "leanprover/lean4:v4.9.0"


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    home, elan_home, bin_dir = tmp_path / "home", tmp_path / "elan", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ELAN_HOME", str(elan_home))
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]))
    st.print_prefix.cache_clear()
    return {"home": home, "elan_home": elan_home, "bin": bin_dir, "tmp": tmp_path}


@pytest.mark.parametrize(
    ("text", "name", "version"),
    [
        ("leanprover/lean4:v4.29.1\n", "leanprover/lean4:v4.29.1", "4.29.1"),
        ("\n  v4.21.0  \n\n", "leanprover/lean4:v4.21.0", "4.21.0"),
        ("4.9.0", "leanprover/lean4:4.9.0", "4.9.0"),
        ("leanprover/lean4:v4.10.0-rc2", "leanprover/lean4:v4.10.0-rc2", "4.10.0-rc2"),
        (
            "leanprover/lean4-nightly:nightly-2024-06-01",
            "leanprover/lean4-nightly:nightly-2024-06-01",
            "nightly-2024-06-01",
        ),
        ("", "", None),
        ("\n \n", "", None),
    ],
)
def test_one_reading_of_a_toolchain_name(text, name, version):
    assert st.normalize_toolchain_name(text) == name
    assert st.lean_version(text) == version


def test_same_lean_version():
    assert st.same_lean_version("4.9.0", "v4.9.0")
    assert st.same_lean_version("4.10.0-nightly-2024-06-01", "nightly-2024-06-01")
    assert st.same_lean_version("nightly-2024-06-01", "4.10.0-nightly-2024-06-01")
    assert not st.same_lean_version("4.9.0", "4.9.1")
    assert not st.same_lean_version("4.10.0-rc2", "4.10.0")
    assert not st.same_lean_version("4.10.0-nightly-2024-06-02", "nightly-2024-06-01")


def test_read_toolchain_file(tmp_path: Path):
    assert st.read_toolchain_file(tmp_path) is None and st.read_toolchain_file(None) is None
    (tmp_path / "lean-toolchain").write_bytes(b"\xff\xfe")
    assert st.read_toolchain_file(tmp_path) is None  # not text: unknown, not a traceback
    (tmp_path / "lean-toolchain").write_text("v4.9.0\n")
    assert st.read_toolchain_file(tmp_path) == NAME


def test_find_program_knows_elan(env):
    assert st.find_program("lake") is None
    # elan's proxies in ~/.elan/bin, where its installer puts them, even when not on PATH.
    proxy = script(env["home"] / ".elan" / "bin" / "lake", "exit 0")
    assert st.find_program("lake") == proxy
    # The toolchain's own binary when elan has it installed.
    own = script(env["elan_home"] / "toolchains" / st.toolchain_dirname(NAME) / "bin" / "lake", "")
    assert st.find_program("lake", NAME) == own
    assert st.find_program("lake", "leanprover/lean4:v4.8.0") == proxy  # not installed
    on_path = script(env["bin"] / "lake", "exit 0")
    assert st.find_program("lake") == on_path


def test_find_toolchain_through_elan(env):
    bin_dir = env["elan_home"] / "toolchains" / st.toolchain_dirname(NAME) / "bin"
    script(bin_dir / "lean", 'echo "Lean (version 4.9.0, Release)"')
    script(bin_dir / "lake", "exit 0")
    script(env["elan_home"] / "bin" / "elan", "exit 0")
    found = st.find_toolchain("v4.9.0\n")
    assert (found.name, found.version, found.lean) == (NAME, "4.9.0", bin_dir / "lean")


def _imports(path: Path) -> set[str]:
    """Absolute names of the lean_dojo_v2 modules ``path`` imports (at any depth)."""
    tree = ast.parse(path.read_text("utf-8"))
    package = ".".join(path.relative_to(Path(lean_dojo_v2.__file__).parents[1]).parent.parts)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                names.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("lean_dojo_v2")}


def test_layer_one_packages_do_not_import_each_other():
    """Tracing and the Lean boundary share the system layer and never import each other
    (lean_dojo.toolchain used to reach into interaction.pantograph.locate for a normaliser)."""
    root = Path(lean_dojo_v2.__file__).parent
    sideways = []
    for pkg, other in (("lean_dojo", "interaction"), ("interaction", "lean_dojo")):
        for path in (root / pkg).rglob("*.py"):
            bad = {n for n in _imports(path) if n.startswith(f"lean_dojo_v2.{other}")}
            sideways += [f"{path.relative_to(root)} imports {n}" for n in sorted(bad)]
    assert not sideways, sideways


def test_system_is_layer_zero():
    root = Path(lean_dojo_v2.__file__).parent
    allowed = ("lean_dojo_v2.system", "lean_dojo_v2.errors", "lean_dojo_v2.config")
    upward = [
        f"{path.name} imports {n}"
        for path in (root / "system").glob("*.py")
        for n in _imports(path)
        if not n.startswith(allowed)
    ]
    assert not upward, upward


def test_importing_system_runs_nothing_and_stays_light():
    code = (
        "import sys; import lean_dojo_v2.system.toolchain, lean_dojo_v2.system.commands, "
        "lean_dojo_v2.system.processes; "
        "print(sorted(m for m in ('psutil', 'asyncio', 'lean_dojo_v2.interaction', "
        "'lean_dojo_v2.lean_dojo') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
