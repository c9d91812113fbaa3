"""Two rules for the imports of package code, read from the source like ``test_layers.py``:

- package code imports a name from the module that defines it, never through a compatibility
  module (one whose only job is to keep an upstream or old import path working); only the
  tests of those paths import them;
- no two top-level packages of ``lean_dojo_v2`` import each other, imports inside functions
  counted (``if TYPE_CHECKING:`` blocks are not: they never run). A two-way pair is a circle
  that ``test_layers.py`` does not see while both sides sit in one layer.

The checks are tested on a small package written to ``tmp_path``, so that a walker that finds
nothing cannot pass for a clean package.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from pathlib import Path

from package_imports import import_graph, module_files, top_level, write_package

import lean_dojo_v2

PACKAGE_DIR = Path(lean_dojo_v2.__file__).resolve().parent

_README_PATH = "a path upstream LeanDojo-v2's README documents (tests/test_upstream_imports.py)"

# Every compatibility module of the package, and why it exists. Package code may not import
# them; a module that only re-exports names from elsewhere in the package must be listed here.
COMPATIBILITY_MODULES: dict[str, str] = {
    "lean_dojo_v2.lean_dojo.data_extraction": _README_PATH + ": the package of the five below",
    "lean_dojo_v2.lean_dojo.data_extraction.cache": _README_PATH,
    "lean_dojo_v2.lean_dojo.data_extraction.dataset": _README_PATH + " (generate_benchmark)",
    "lean_dojo_v2.lean_dojo.data_extraction.lean": _README_PATH,
    "lean_dojo_v2.lean_dojo.data_extraction.trace": _README_PATH,
    "lean_dojo_v2.lean_dojo.data_extraction.traced_data": _README_PATH,
    "lean_dojo_v2.lean_agent": _README_PATH + " (`from lean_dojo_v2.lean_agent import "
    "DynamicDatabase`)",
    "lean_dojo_v2.lean_agent.config": "upstream LeanAgent's configs (`from "
    "lean_dojo_v2.lean_agent.config import ProverConfig, TrainingConfig`, examples/lean_agent.py)",
    "lean_dojo_v2.lean_agent.database": _README_PATH,
    "lean_dojo_v2.utils": _README_PATH + ": the package of the three below",
    "lean_dojo_v2.utils.constants": _README_PATH + " (RAID_DIR and friends, read when used)",
    "lean_dojo_v2.utils.filesystem": _README_PATH,
    "lean_dojo_v2.utils.git": _README_PATH,
    "lean_dojo_v2.external_api.python.server": "upstream LeanDojo-v2's server layout: "
    "`uvicorn server:app` run from its folder (docs/api_server.md)",
}


def _defines_nothing(path: Path) -> bool:
    """True for a module whose top level only imports and assigns (no function, no class) and
    that imports from the package: a module of re-exports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in tree.body):
        return False
    return any(
        (isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("lean_dojo_v2")))
        for n in ast.walk(tree)
    )


def reexport_only_modules(package_dir: Path) -> list[str]:
    """The modules (not package ``__init__`` faces, not ``__main__``) that only re-export."""
    return sorted(
        name
        for name, path in module_files(package_dir).items()
        if path.name not in ("__init__.py", "__main__.py") and _defines_nothing(path)
    )


def compatibility_imports(
    graph: Mapping[str, set[str]], compatibility: set[str]
) -> list[tuple[str, str]]:
    """Every ``(module, compatibility module it imports)`` where the importer is package code
    (compatibility modules may import each other: a package and its modules)."""
    return sorted(
        (module, other)
        for module, imported in graph.items()
        if module not in compatibility
        for other in imported & compatibility
    )


def two_way_pairs(graph: Mapping[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """``(package a, package b)`` -> one import each way, for top-level packages that import
    each other."""
    edges: dict[tuple[str, str], str] = {}
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            a, b = top_level(module), top_level(other)
            if a != b:
                edges.setdefault((a, b), f"{module} imports {other}")
    return {
        (a, b): [edges[(a, b)], edges[(b, a)]]
        for (a, b) in sorted(edges)
        if a < b and (b, a) in edges
    }


# -- the package ---------------------------------------------------------------------------------


def test_every_listed_compatibility_module_exists() -> None:
    missing = [m for m in COMPATIBILITY_MODULES if importlib.util.find_spec(m) is None]
    assert not missing, f"no such module, remove it from COMPATIBILITY_MODULES: {missing}"


def test_every_module_of_re_exports_is_a_listed_compatibility_module() -> None:
    unlisted = sorted(set(reexport_only_modules(PACKAGE_DIR)) - set(COMPATIBILITY_MODULES))
    assert not unlisted, (
        f"these modules only re-export names: {unlisted}. Import the names from where they are "
        "defined and remove the module, or, for a documented upstream path, add it to "
        "COMPATIBILITY_MODULES with the reason"
    )


def test_package_code_imports_no_compatibility_module() -> None:
    found = compatibility_imports(import_graph(PACKAGE_DIR), set(COMPATIBILITY_MODULES))
    assert not found, "import from the module that defines the name instead:\n" + "\n".join(
        f"  {module} imports {other}" for module, other in found
    )


def test_no_two_packages_import_each_other() -> None:
    pairs = two_way_pairs(import_graph(PACKAGE_DIR, type_checking=False))
    assert not pairs, "packages that import each other (lazy imports counted):\n" + "\n".join(
        f"  {a} <-> {b}: {'; '.join(how)}" for (a, b), how in pairs.items()
    )


# -- the checks, on a package made for them ------------------------------------------------------


def test_a_lazy_import_makes_a_two_way_pair_and_type_checking_does_not(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def f():\n    from ..high import b\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "from ..low.a import f\n",
            "pkg/side/__init__.py": "",
            "pkg/side/c.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ..low import a\n"
                "else:\n    import pkg.high.b\n"
            ),
            "pkg/low/d.py": "from ..side import c\n",
        },
    )
    graph = import_graph(pkg, type_checking=False)
    assert graph["pkg.side.c"] == {"pkg.high.b"}  # the else branch counts, the block does not
    assert two_way_pairs(graph) == {
        ("high", "low"): ["pkg.high.b imports pkg.low.a", "pkg.low.a imports pkg.high"]
    }
    assert ("low", "side") in two_way_pairs(import_graph(pkg))  # with TYPE_CHECKING counted


def test_a_module_of_re_exports_and_its_importers_are_found(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from .old import thing\n",
            "pkg/real.py": "def thing():\n    return 1\n",
            "pkg/old.py": '"""old path"""\nfrom .real import thing\n__all__ = ["thing"]\n',
            "pkg/user.py": "def g():\n    from pkg.old import thing\n",
            "pkg/constants.py": "LIMIT = 3\n",
        },
    )
    assert reexport_only_modules(pkg) == ["pkg.old"]
    graph = import_graph(pkg)
    assert compatibility_imports(graph, {"pkg.old"}) == [
        ("pkg", "pkg.old"),
        ("pkg.user", "pkg.old"),
    ]
