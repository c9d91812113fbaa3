"""The suite is self-contained: it reads real data from ``tests/data/real`` only, never skips for a
missing input (only Lean- or GPU-marked tests may skip), and every bundled source names its licence.

``../shared/data`` (beside a project checkout, or ``LEAN_DOJO_V2_SHARED_DATA``) may add coverage
through the ``fullest_data`` / ``full_shared_data`` fixtures of ``tests/conftest.py``, but the tests
collected and run are the same without it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
REAL = TESTS / "data" / "real"
ALLOWED_MARKS = {"lean", "gpu", "browser"}
LICENCES = ("CC BY 2.0", "Apache-2.0", "MIT")

# Every path under shared/data that a test or fixture reads (keep in step when adding one).
READ_BY_TESTS = [
    "leandojo_b4/random_test_records_1_100.json",
    "minictx/derived/minif2f_test_traced_tactics.json",
    "minictx/data/v1/miniF2F_test_state_prediction.jsonl",
    "minictx/data/minictx/mathlib.jsonl",
    "minictx/data/minictx/scilean.jsonl",
    "minictx/data/minictx/pfr_cross.jsonl",
    "prover_benchmarks/putnambench_lean4/lean-toolchain",
    "prover_benchmarks/putnambench_lean4/lake-manifest.json",
    *(
        f"prover_benchmarks/putnambench_lean4/src/putnam_{p}.lean"
        for p in ("1962_a2", "1962_a5", "1989_a6", "1997_b1", "2023_a5", "2025_a3", "2025_b5")
    ),
    *(
        f"minif2f_proofs/kimina_prover_preview/src/{p}.lean"
        for p in ("mathd_numbertheory_85", "mathd_numbertheory_185", "aime_1983_p3")
    ),
    *(
        f"minif2f_proofs/kimina_prover_preview/src_added_2025-07-10/{p}.lean"
        for p in ("imo_1969_p2", "aime_1995_p7")
    ),
]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dotted(node: ast.AST) -> str:
    """``pytest.mark.skipif`` for an attribute chain (call targets unwrapped), else ''."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _marks(nodes: list[ast.expr]) -> set[str]:
    """The ``pytest.mark.X`` names among decorators or ``pytestmark`` values."""
    out = set()
    for node in nodes:
        for sub in ast.walk(node):
            dotted = _dotted(sub)
            if dotted.startswith("pytest.mark."):
                out.add(dotted.split(".")[2])
    return out


def _module_marks(tree: ast.Module) -> set[str]:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets
        ):
            return _marks([stmt.value])
    return set()


_SKIPS = re.compile(r"(^|\.)(skip|skipif|importorskip|xfail|SkipTest|skipTest|skipIf|skipUnless)$")


def _skip_sites(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) of every skip outside a function or class marked ``lean``/``gpu``."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, marked: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            marked = marked or bool(_marks(node.decorator_list) & ALLOWED_MARKS)
        if isinstance(node, (ast.Attribute, ast.Name)) and not marked:
            dotted = _dotted(node)
            if _SKIPS.search(dotted) and (
                dotted.startswith(("pytest", "unittest")) or "." not in dotted
            ):
                found.append((node.lineno, dotted))
        for child in ast.iter_child_nodes(node):
            # An attribute chain is reported once, at its outermost node.
            if isinstance(node, ast.Attribute) and child is node.value:
                continue
            visit(child, marked)

    visit(tree, bool(_module_marks(tree) & ALLOWED_MARKS))
    return found


def _reads_shared_checkout(tree: ast.Module) -> list[int]:
    """Lines that look for ``../shared`` themselves instead of using the conftest fixtures."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == "LEAN_DOJO_V2_SHARED_DATA":
            lines.append(node.lineno)
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in ("shared", "shared/data")
        ):
            lines.append(node.lineno)
    return lines


def _test_sources() -> list[Path]:
    me = Path(__file__).resolve()
    return sorted(p for p in TESTS.rglob("*.py") if p.resolve() != me and REAL not in p.parents)


def test_no_test_skips_except_for_lean_or_gpu() -> None:
    # The only skip logic allowed outside lean/gpu/browser-marked code is the hook of
    # tests/conftest.py; a fixture that skips for a missing file would hide a whole directory.
    offenders = []
    for path in _test_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, what in _skip_sites(tree):
            rel = path.relative_to(REPO_ROOT)
            if str(rel) == "tests/conftest.py" and what in ("pytest.mark.skip",):
                continue  # the Lean/GPU/browser hook
            offenders.append(f"{rel}:{line}: {what}")
    assert offenders == [], (
        "tests may skip only for a missing Lean toolchain, GPU or Chromium (mark them "
        "lean/gpu/browser); read real data through the shared_data fixture (tests/data/real):\n"
        + "\n".join(offenders)
    )


def test_only_conftest_looks_for_the_shared_checkout() -> None:
    # A module that reads ../shared itself could parametrise over it and change the test count.
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{line}"
        for path in _test_sources()
        if path != TESTS / "conftest.py"
        for line in _reads_shared_checkout(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == [], "use the shared_data / fullest_data fixtures:\n" + "\n".join(offenders)


def test_skip_detector_sees_fixture_and_module_skips() -> None:
    source = (
        "import pytest\n"
        "@pytest.fixture\n"
        "def data():\n"
        "    pytest.skip('no data')\n"
        "@pytest.mark.skipif(True, reason='x')\n"
        "def test_a(): pass\n"
        "@pytest.mark.lean\n"
        "def test_b():\n"
        "    pytest.skip('no pantograph')\n"
        "torch = pytest.importorskip('torch')\n"
    )
    assert _skip_sites(ast.parse(source)) == [
        (4, "pytest.skip"),
        (5, "pytest.mark.skipif"),
        (10, "pytest.importorskip"),
    ]
    assert (
        _skip_sites(ast.parse("import pytest\npytestmark = pytest.mark.gpu\npytest.skip()")) == []
    )


def test_shared_data_is_the_bundled_copy_without_a_shared_checkout(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shared_data == REAL
    monkeypatch.setenv("LEAN_DOJO_V2_SHARED_DATA", "/nonexistent")
    conftest = _load(TESTS / "conftest.py", "_conftest_without_shared")
    assert conftest.full_shared_data_dir() is None
    assert conftest.REAL_DATA == REAL
    missing = [rel for rel in READ_BY_TESTS if not (REAL / rel).is_file()]
    assert missing == [], (
        f"tests read these; copy them with scripts/copy_real_test_data.py: {missing}"
    )


def test_every_real_data_folder_has_a_source_naming_its_licence() -> None:
    tops = sorted(p for p in REAL.iterdir() if p.is_dir())
    assert {p.name for p in tops} >= {
        "leandojo_b4",
        "minictx",
        "prover_benchmarks",
        "minif2f_proofs",
    }
    for top in tops:
        text = (top / "SOURCE").read_text(encoding="utf-8")
        assert any(licence in text for licence in LICENCES), top
        assert re.search(r"\b[0-9a-f]{40}\b", text), f"{top}/SOURCE names no origin commit"
        assert "Origin" in text and "Licence" in text, top
    for folder in (p for p in REAL.rglob("*") if p.is_dir()):
        covering = [
            d for d in [folder, *folder.parents] if REAL in d.parents and (d / "SOURCE").is_file()
        ]
        assert covering, f"{folder.relative_to(REAL)} has no SOURCE in it or above it"


def test_real_data_copy_stays_small() -> None:
    total = sum(p.stat().st_size for p in REAL.rglob("*") if p.is_file())
    assert total < 3 * 1024 * 1024, f"tests/data/real is {total / 2**20:.1f} MiB: trim it"


def test_real_data_copy_matches_the_shared_checkout(full_shared_data: Path | None) -> None:
    # Extra check where ../shared/data is there: the copy is byte for byte the listed parts of it.
    script = _load(REPO_ROOT / "scripts" / "copy_real_test_data.py", "_copy_real_test_data")
    plan = script.planned()
    assert set(READ_BY_TESTS) <= set(plan)
    if full_shared_data is None:
        return
    for rel, lines in plan.items():
        source = full_shared_data / rel
        if source.is_file():  # a partial LEAN_DOJO_V2_SHARED_DATA may lack some
            assert (REAL / rel).read_bytes() == script.content(source, lines), rel
