"""Importing every layer's package stays cheap: no torch, no transformers, no networkx.

Each check runs in a fresh interpreter, since this one has long since loaded everything. The
seconds are printed, not asserted (a shared machine is too noisy for a time limit in a test);
``benchmarks/import_bench.py`` measures them properly against the 0.3 s target.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# The package lists, the heavy modules and the probe are the benchmark's (one definition).
_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "import_bench.py"
_spec = importlib.util.spec_from_file_location("import_bench_under_test", _BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
PACKAGES, OTHER_PACKAGES, HEAVY = bench.PACKAGES, bench.OTHER_PACKAGES, bench.HEAVY


def probe(packages: tuple[str, ...]) -> dict:
    """Import ``packages`` in a fresh interpreter (writing no bytecode): its seconds and the heavy
    modules it loaded."""
    return bench.probe(packages, None, HEAVY)


def test_importing_every_layer_loads_nothing_heavy() -> None:
    report = probe(PACKAGES)
    print(f"import of {len(PACKAGES)} packages: {report['seconds']:.3f} s (fresh interpreter)")
    assert report["loaded"] == [], f"importing the packages loaded {report['loaded']}"


def test_importing_the_other_packages_loads_nothing_heavy() -> None:
    report = probe(OTHER_PACKAGES)
    assert report["loaded"] == [], f"importing {OTHER_PACKAGES} loaded {report['loaded']}"


def test_probe_sees_a_heavy_module() -> None:
    # networkx is what `Corpus` builds its import DAG with; importing it must show up.
    assert probe(("lean_dojo_v2.data", "networkx"))["loaded"] == ["networkx"]
