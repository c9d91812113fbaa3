"""Placing modules as files in a built Lake project (LeanDojo paths)."""

from __future__ import annotations

from pathlib import Path

from lean_dojo_v2.lean_dojo.layout import CORE_DIR, ProjectLayout


def touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    root, prefix = tmp_path / "proj", tmp_path / "toolchain"
    touch(root / "Proj/Basic.lean")
    touch(root / ".lake/build/lib/lean/Proj/Basic.olean")
    touch(root / "Proj/Unbuilt.lean")  # not a build target: not traced
    touch(root / "scripts/tool.lean")
    touch(root / "lakefile.lean")
    # A dependency with its sources in srcDir "src", built the old way (lib/ without lean/).
    touch(root / ".lake/packages/dep/src/Dep/Core.lean")
    touch(root / ".lake/packages/dep/.lake/build/lib/Dep/Core.olean")
    touch(root / ".lake/packages/mathlib/Mathlib/Order/Basic.lean")
    touch(root / ".lake/packages/mathlib/.lake/build/lib/lean/Mathlib/Order/Basic.olean")
    touch(prefix / "src/lean/Init/Prelude.lean")
    touch(prefix / "lib/lean/Init/Prelude.olean")
    touch(prefix / "src/lean/Init/NoOlean.lean")
    return root, prefix


def test_files_to_trace(tmp_path: Path):
    root, prefix = make_project(tmp_path)
    layout = ProjectLayout(root, prefix)
    assert [(s.path, s.module) for s in layout.project_files()] == [
        ("Proj/Basic.lean", "Proj.Basic")
    ]
    assert [(s.path, s.module) for s in layout.dependency_files()] == [
        (".lake/packages/dep/src/Dep/Core.lean", "Dep.Core"),
        (".lake/packages/mathlib/Mathlib/Order/Basic.lean", "Mathlib.Order.Basic"),
    ]
    [core] = layout.core_files()
    assert (core.path, core.module) == (f"{CORE_DIR}/Init/Prelude.lean", "Init.Prelude")
    assert core.file == (prefix / "src/lean/Init/Prelude.lean").resolve()
    assert ProjectLayout(root).core_files() == []


def test_resolve_modules(tmp_path: Path):
    root, prefix = make_project(tmp_path)
    layout = ProjectLayout(root, prefix)
    lib = root / ".lake/build/lib/lean"
    assert layout.resolve("Proj.Basic", str(lib / "Proj/Basic.olean")) == "Proj/Basic.lean"
    dep = root / ".lake/packages/dep/.lake/build/lib/Dep/Core.olean"
    assert layout.resolve("Dep.Core", str(dep)) == ".lake/packages/dep/src/Dep/Core.lean"
    ml = root / ".lake/packages/mathlib/.lake/build/lib/lean/Mathlib/Order/Basic.olean"
    assert layout.resolve("Mathlib.Order.Basic", str(ml)) == (
        ".lake/packages/mathlib/Mathlib/Order/Basic.lean"
    )
    # A module of a package whose source is not checked out still gets the conventional path.
    gone = root / ".lake/packages/batteries/.lake/build/lib/lean/Batteries/Data/List.olean"
    assert layout.resolve("Batteries.Data.List", str(gone)) == (
        ".lake/packages/batteries/Batteries/Data/List.lean"
    )
    core = prefix / "lib/lean/Init/Data/Nat/Basic.olean"
    assert (
        layout.resolve("Init.Data.Nat.Basic", str(core)) == f"{CORE_DIR}/Init/Data/Nat/Basic.lean"
    )
    # Without an .olean path: by module name, then Lean's own roots, else unknown.
    assert layout.resolve("Dep.Core") == ".lake/packages/dep/src/Dep/Core.lean"
    assert layout.resolve("Lean.Elab.Command") == f"{CORE_DIR}/Lean/Elab/Command.lean"
    assert layout.resolve("Unknown.Module") is None
