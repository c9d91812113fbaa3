"""Every package ``__init__`` has the one shape, and ``lean_dojo_v2`` itself is the public face.

The shape (``lean_dojo_v2/database/__init__.py`` reads as an example): the names a package offers
are imported on first use through :func:`lean_dojo_v2._lazy.reexport`, so importing a package
loads none of its modules; an ``if TYPE_CHECKING:`` block imports the same names, so editors and
type checkers see them; ``__all__`` is a literal list. Checked here, for every package:

- importing it loads no other module of the package (beyond the lazy helper, the errors module
  and its parent packages);
- every public name it offers (``dir()``) is visible to a type checker: imported under
  ``TYPE_CHECKING``, defined in the ``__init__`` itself, or a submodule;
- every name imported under ``TYPE_CHECKING`` is, at run time, the very object imported there;
- ``__all__``, where there is one, is a literal list of names it offers.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import lean_dojo_v2

PACKAGE_DIR = Path(lean_dojo_v2.__file__).resolve().parent

# The names ``from lean_dojo_v2 import ...`` offers, and the package each is the object of.
FACE = {
    "HFAgent": "lean_dojo_v2.agent",
    "LeanAgent": "lean_dojo_v2.agent",
    "ExternalAgent": "lean_dojo_v2.agent",
    "SFTTrainer": "lean_dojo_v2.trainer",
    "GRPOTrainer": "lean_dojo_v2.trainer",
    "RetrievalTrainer": "lean_dojo_v2.trainer",
    "ProgressTrainer": "lean_dojo_v2.trainer",
    "DynamicDatabase": "lean_dojo_v2.database",
    "BestFirstSearch": "lean_dojo_v2.prover",
    "HFProver": "lean_dojo_v2.prover",
    "RetrievalProver": "lean_dojo_v2.prover",
    "ExternalProver": "lean_dojo_v2.prover",
    "ReplayEnv": "lean_dojo_v2.interaction",
    "PantographEnv": "lean_dojo_v2.interaction",
    "LeanGitRepo": "lean_dojo_v2.lean_dojo",
    "trace": "lean_dojo_v2.lean_dojo",
}


def package_inits() -> dict[str, Path]:
    """Dotted package name -> its ``__init__.py``, for every package of ``lean_dojo_v2``."""
    root = PACKAGE_DIR.parent
    return {
        ".".join(path.parent.relative_to(root).parts): path
        for path in sorted(PACKAGE_DIR.rglob("__init__.py"))
    }


PACKAGES = package_inits()


def _absolute(package: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` in ``package``'s ``__init__`` names."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: package.count(".") + 2 - node.level]
    return ".".join(base + ([node.module] if node.module else []))


def type_checking_names(package: str, path: Path) -> dict[str, tuple[str, str]]:
    """Name -> (module, attribute) for every ``from module import attribute [as name]`` under an
    ``if TYPE_CHECKING:`` block of the package's ``__init__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    module = _absolute(package, stmt)
                    for alias in stmt.names:
                        found[alias.asname or alias.name] = (module, alias.name)
    return found


def defined_names(path: Path) -> set[str]:
    """Names the ``__init__`` itself binds at its top level when it runs (definitions,
    assignments, and imports outside ``TYPE_CHECKING`` blocks; not names inside functions)."""
    names: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (
                    node.body,
                    node.orelse,
                    node.finalbody,
                    *(h.body for h in node.handlers),
                ):
                    visit(block)
            else:
                names.update(
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                )

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return names


def _expected(module: str, attribute: str) -> object:
    """What ``from module import attribute`` gives: the submodule, else the attribute."""
    imported = importlib.import_module(module)
    if hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{attribute}"):
        return importlib.import_module(f"{module}.{attribute}")
    return getattr(imported, attribute)


def _is_submodule(package: str, name: str) -> bool:
    return importlib.util.find_spec(f"{package}.{name}") is not None


# -- every package -------------------------------------------------------------------------------

_LOADS = r"""
import importlib, json, sys
out = {}
for package in PACKAGES:
    for name in [m for m in sys.modules if m == "lean_dojo_v2" or m.startswith("lean_dojo_v2.")]:
        del sys.modules[name]
    importlib.import_module(package)
    parents = {".".join(package.split(".")[:i]) for i in range(1, package.count(".") + 2)}
    allowed = parents | {"lean_dojo_v2._lazy", "lean_dojo_v2.errors"}
    out[package] = sorted(m for m in sys.modules if m.startswith("lean_dojo_v2") and m not in allowed)
print(json.dumps(out))
"""


def test_importing_a_package_loads_none_of_its_modules() -> None:
    code = _LOADS.replace("PACKAGES", repr(sorted(PACKAGES)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {p: mods for p, mods in json.loads(proc.stdout).items() if mods}
    assert not loaded, (
        "these package __init__ modules import their modules when imported; resolve the names "
        f"on first use with lean_dojo_v2._lazy.reexport instead: {loaded}"
    )


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_name_a_package_offers_is_seen_by_type_checkers(package: str) -> None:
    path = PACKAGES[package]
    module = importlib.import_module(package)
    seen = set(type_checking_names(package, path)) | defined_names(path)
    unseen = sorted(
        name
        for name in dir(module)
        if not name.startswith("_") and name not in seen and not _is_submodule(package, name)
    )
    assert not unseen, (
        f"{package} offers {unseen} only at run time: import them under `if TYPE_CHECKING:` in "
        f"{path.relative_to(PACKAGE_DIR.parent)}"
    )


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_type_checking_names_are_the_run_time_objects(package: str) -> None:
    module = importlib.import_module(package)
    differ = [
        f"{name} (TYPE_CHECKING: {source}.{attribute})"
        for name, (source, attribute) in type_checking_names(package, PACKAGES[package]).items()
        if getattr(module, name, None) is not _expected(source, attribute)
    ]
    assert not differ, f"{package}: names whose run-time object is another: {differ}"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_all_is_a_literal_list_of_offered_names(package: str) -> None:
    tree = ast.parse(PACKAGES[package].read_text(encoding="utf-8"))
    assigned = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]
    if not assigned:
        return
    assert len(assigned) == 1 and isinstance(assigned[0], ast.List), (
        f"{package}: write __all__ as one literal list (linters and type checkers read it)"
    )
    names = ast.literal_eval(assigned[0])
    module = importlib.import_module(package)
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not offer: {missing}"


# -- the top-level face --------------------------------------------------------------------------


def test_the_top_level_names_are_the_objects_of_their_packages() -> None:
    namespace: dict[str, object] = {}
    exec(f"from lean_dojo_v2 import {', '.join(FACE)}", namespace)  # what a user writes
    for name, package in FACE.items():
        assert namespace[name] is getattr(importlib.import_module(package), name), name
    assert set(FACE) <= set(lean_dojo_v2.__all__) <= set(dir(lean_dojo_v2))
    assert lean_dojo_v2.__version__ == importlib.import_module("lean_dojo_v2.version").__version__


def test_a_name_the_face_does_not_offer_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchTrainer'"):
        lean_dojo_v2.NoSuchTrainer  # noqa: B018


# -- the checks, on a package made for them ------------------------------------------------------


def test_type_checking_names_and_defined_names_are_read_from_the_source(tmp_path: Path) -> None:
    path = tmp_path / "__init__.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .._lazy import reexport\n"
        "if TYPE_CHECKING:\n"
        "    from .a import A, b as B\n"
        "    from . import sub\n"
        "    from ..version import v as v\n"
        "X = 1\n"
        "def f():\n    pass\n",
        encoding="utf-8",
    )
    assert type_checking_names("pkg.inner", path) == {
        "A": ("pkg.inner.a", "A"),
        "B": ("pkg.inner.a", "b"),
        "sub": ("pkg.inner", "sub"),
        "v": ("pkg.version", "v"),
    }
    assert defined_names(path) == {"TYPE_CHECKING", "reexport", "X", "f"}
