"""``database/dynamic_database.py`` and ``database/upstream.py`` form no import circle: each
imports in a fresh interpreter first, and ``upstream`` does not import ``dynamic_database`` at all
(not at module level, not inside a function, not behind ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import lean_dojo_v2.database as database_pkg

DB_DIR = Path(database_pkg.__file__).parent


@pytest.mark.parametrize(
    "first,second",
    [
        ("lean_dojo_v2.database.upstream", "lean_dojo_v2.database.dynamic_database"),
        ("lean_dojo_v2.database.dynamic_database", "lean_dojo_v2.database.upstream"),
    ],
)
def test_each_module_imports_first_in_a_fresh_interpreter(first: str, second: str) -> None:
    code = (
        "import importlib\n"
        f"a = importlib.import_module({first!r})\n"
        f"b = importlib.import_module({second!r})\n"
        "from lean_dojo_v2.database import DynamicDatabase\n"
        "assert DynamicDatabase.import_json and DynamicDatabase.export_json\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def _imported_modules(path: Path) -> set[str]:
    """Every module an ``import``/``from ... import`` anywhere in ``path`` names (relative ones as
    written, e.g. ``.dynamic_database`` -> ``dynamic_database``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.rsplit(".", 1)[-1])
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name.rsplit(".", 1)[-1] for alias in node.names)
    return names


def test_upstream_never_imports_dynamic_database() -> None:
    assert "dynamic_database" not in _imported_modules(DB_DIR / "upstream.py")
    assert "DynamicDatabase" not in _imported_modules(DB_DIR / "upstream.py")


def test_no_module_imported_by_upstream_imports_dynamic_database() -> None:
    # upstream's own database imports (and what they import in turn) stay below dynamic_database.
    seen: set[str] = set()
    todo = ["upstream"]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        for name in _imported_modules(DB_DIR / f"{mod}.py"):
            if (DB_DIR / f"{name}.py").exists() and name != "__init__":
                todo.append(name)
    assert "dynamic_database" not in seen, sorted(seen)
