"""Who imports whom inside a package, read from the source (``ast``), for the import tests
(``test_layers.py``, ``test_import_rules.py``).

Read from the source, not from a running interpreter, so that an import inside a function counts
as much as one at module level: a lazy import only hides a dependency until the day its function
runs. Imports under ``if TYPE_CHECKING:`` count too unless asked otherwise (they never run, but a
type checker follows them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package (a package is named
    by its ``__init__.py``)."""
    root = package_dir.parent
    files = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _imported_names(module: str, is_package: bool, node: ast.AST) -> Iterator[str]:
    """The dotted names one import statement may load: the module itself and, for
    ``from X import a``, ``X.a`` (which is a module when ``a`` is a submodule)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        yield target
        for alias in node.names:
            yield f"{target}.{alias.name}"


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def import_nodes(tree: ast.AST, *, type_checking: bool = True) -> Iterator[ast.AST]:
    """Every node of ``tree``, inside functions and classes too; with ``type_checking=False``
    the bodies of ``if TYPE_CHECKING:`` blocks are left out (their ``else`` is kept)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not type_checking and _is_type_checking_block(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        stack.extend(ast.iter_child_nodes(node))


def import_graph(package_dir: Path, *, type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source (module level, inside
    functions, and under ``if TYPE_CHECKING:`` unless ``type_checking=False``).

    Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; that implied edge is left
    out, as Python loads a parent package before its modules and a package ``__init__`` that
    imports its own modules is no circle. For the same reason a module's import of its own
    parent package (``from . import submodule``, ``from .. import name``) is left out: that
    package was loaded before the module itself."""
    files = module_files(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in import_nodes(tree, type_checking=type_checking):
            for name in _imported_names(module, is_package, node):
                if name in files and name != module and not module.startswith(name + "."):
                    graph[module].add(name)
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle as ``[a, b, ..., a]``, or None (depth-first search, white/grey/black)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def top_level(module: str) -> str:
    """The top-level package (or module) of ``lean_dojo_v2`` that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def write_package(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path under ``root`` -> text) and return ``root / "pkg"``: a small package
    for testing the walker and the checks built on it."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"
