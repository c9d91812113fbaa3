"""The package's import arrows point down and never go round in a circle.

Read from the source (``ast``, :mod:`package_imports`), not from a running interpreter, so that an
import inside a function or under ``if TYPE_CHECKING:`` counts as much as one at module level: a
lazy import only hides a circle until the day both functions run. Two checks:

- no import circle among ``lean_dojo_v2`` modules;
- no module imports a package of a higher layer (the table below, the one of
  ``docs/architecture.md``, which a third test keeps in step with it).

The walker is tested on a small package written to ``tmp_path``, so that a walker that finds
nothing cannot pass for a clean package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from package_imports import find_cycle, import_graph, module_files, top_level, write_package

import lean_dojo_v2

PACKAGE_DIR = Path(lean_dojo_v2.__file__).resolve().parent
ARCHITECTURE = PACKAGE_DIR.parent / "docs" / "architecture.md"

# The layer of each top-level package or module of ``lean_dojo_v2`` (docs/architecture.md): a
# module imports only from its own layer or below. A new package must be given a layer here.
LAYERS: dict[str, int] = {
    "_lazy": 0,  # the lazy re-export helper of every package __init__
    "config": 0,
    "data": 0,
    "errors": 0,
    "system": 0,
    "utils": 0,
    "version": 0,  # the package version, read by every writer of metadata
    "interaction": 1,
    "lean_dojo": 1,
    "database": 2,
    "models": 2,
    "v1": 2,  # LeanDojo v1's Dojo API over interaction/ and the data model
    "lean_progress": 3,
    "prover": 3,
    "trainer": 3,
    "agent": 4,
    "evaluation": 4,  # eval prove: benchmarks, modes, budgets, results, the report
    "external_api": 4,
    "lean_agent": 4,
    "__init__": 5,  # lean_dojo_v2 itself: the top-level face over every layer
    "cli": 5,
    "quickstart": 5,  # lean-dojo-v2 quickstart: the whole loop, wired from layers 0-3
    "__main__": 5,  # python -m lean_dojo_v2: the command line
}


# -- the import graph ----------------------------------------------------------------------------


def upward_imports(
    graph: Mapping[str, set[str]], layers: Mapping[str, int]
) -> list[tuple[str, int, str, int]]:
    """Every ``(module, its layer, imported module, its layer)`` where the import goes up."""
    found = []
    for module, imported in sorted(graph.items()):
        own = layers[top_level(module)]
        for other in sorted(imported):
            theirs = layers[top_level(other)]
            if theirs > own:
                found.append((module, own, other, theirs))
    return found


# -- the package ---------------------------------------------------------------------------------


def test_every_top_level_package_has_a_layer() -> None:
    missing = sorted({top_level(m) for m in module_files(PACKAGE_DIR)} - set(LAYERS))
    assert not missing, f"give these a layer in LAYERS (and docs/architecture.md): {missing}"


def test_no_import_circle() -> None:
    cycle = find_cycle(import_graph(PACKAGE_DIR))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_package_imports_a_higher_layer() -> None:
    upward = upward_imports(import_graph(PACKAGE_DIR), LAYERS)
    assert not upward, "imports of a higher layer:\n" + "\n".join(
        f"  {a} (layer {la}) imports {b} (layer {lb})" for a, la, b, lb in upward
    )


def documented_layers() -> dict[str, int]:
    """Package -> layer, read from the layer table of docs/architecture.md (its rows name the
    package as `lean_dojo_v2/x/`, `lean_dojo_v2/x.py` or a bare `x.py` beside one)."""
    found: dict[str, int] = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        row = re.match(r"^\|\s*(\d+)\s*\|([^|]*)\|", line)
        if not row:
            continue
        for token in re.findall(r"`([^`]+)`", row[2]):
            name = token.removeprefix("lean_dojo_v2/").split("/")[0].removesuffix(".py")
            found[name] = int(row[1])
    return found


def test_layer_table_matches_the_architecture_doc() -> None:
    documented = documented_layers()
    assert len(documented) >= 10, f"no layer table found in {ARCHITECTURE}"
    differ = {
        p: (documented[p], LAYERS.get(p)) for p in documented if documented[p] != LAYERS.get(p)
    }
    assert not differ, f"package: (layer in the doc, layer in LAYERS) disagree: {differ}"


# -- the walker, on a package made for it --------------------------------------------------------


def test_walker_finds_a_circle_through_imports_inside_functions(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from .low import thing\n",
            "pkg/low/__init__.py": "",
            "pkg/low/thing.py": "def f():\n    from ..high import runner\n",
            "pkg/high/__init__.py": "",
            "pkg/high/runner.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    import pkg.low.other\n"
                "def g():\n    from pkg.low import thing\n"
            ),
            "pkg/low/other.py": "x = 1\n",
        },
    )
    graph = import_graph(pkg)
    # relative, absolute, inside a function, under TYPE_CHECKING, `from pkg import submodule`
    assert graph["pkg"] == {"pkg.low", "pkg.low.thing"}
    assert graph["pkg.low.thing"] == {"pkg.high", "pkg.high.runner"}
    assert graph["pkg.high.runner"] == {"pkg.low", "pkg.low.thing", "pkg.low.other"}
    assert find_cycle(graph) == ["pkg.low.thing", "pkg.high.runner", "pkg.low.thing"]
    del graph["pkg.high.runner"]
    assert find_cycle(graph) is None


def test_walker_reports_an_import_of_a_higher_layer(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/data/__init__.py": "def f():\n    from ..prover.search import go\n",
            "pkg/prover/__init__.py": "",
            "pkg/prover/search.py": "from ..data import f\n",
        },
    )
    upward = upward_imports(import_graph(pkg), {"__init__": 0, "data": 0, "prover": 3})
    assert upward == [("pkg.data", 0, "pkg.prover.search", 3)]


@pytest.mark.parametrize(
    ("module", "package"),
    [
        ("lean_dojo_v2", "__init__"),
        ("lean_dojo_v2.cli", "cli"),
        ("lean_dojo_v2.prover.x", "prover"),
    ],
)
def test_top_level(module: str, package: str) -> None:
    assert top_level(module) == package
