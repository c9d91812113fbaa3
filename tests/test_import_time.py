"""Importing every layer's package stays cheap: no torch, no transformers, no networkx.

Each check runs in a fresh interpreter, since this one has long since loaded everything. The
seconds are printed, not asserted (a shared machine is too noisy for a time limit in a test);
``benchmarks/import_bench.py`` measures them properly against the 0.3 s target.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lean_dojo_v2

# One package per layer (docs/architecture.md), as a user or a subcommand imports them.
PACKAGES = (
    "lean_dojo_v2",
    "lean_dojo_v2.data",
    "lean_dojo_v2.interaction",
    "lean_dojo_v2.database",
    "lean_dojo_v2.models",
    "lean_dojo_v2.trainer",
    "lean_dojo_v2.prover",
    "lean_dojo_v2.lean_agent",
    "lean_dojo_v2.cli",
)
# The other packages, which a subcommand or a user may import on their own.
OTHER_PACKAGES = (
    "lean_dojo_v2.config",
    "lean_dojo_v2.errors",
    "lean_dojo_v2.system",
    "lean_dojo_v2.utils",
    "lean_dojo_v2.lean_dojo",
    "lean_dojo_v2.lean_progress",
)
# Each costs 0.1 s to seconds to import; they load where they are used, never with a package.
HEAVY = (
    "datasets",
    "lightning",
    "networkx",
    "numpy",
    "peft",
    "pytorch_lightning",
    "sentence_transformers",
    "torch",
    "transformers",
    "trl",
)

_PROBE = """
import importlib, json, sys, time
start = time.perf_counter()
for name in {packages!r}:
    importlib.import_module(name)
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "loaded": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def probe(packages: tuple[str, ...]) -> dict:
    """Import ``packages`` in a fresh interpreter: its seconds and the heavy modules it loaded."""
    code = _PROBE.format(packages=packages, heavy=HEAVY)
    root = str(Path(lean_dojo_v2.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_every_layer_loads_nothing_heavy() -> None:
    report = probe(PACKAGES)
    how = "from source" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode if cached"
    print(
        f"import of {len(PACKAGES)} packages: {report['seconds']:.3f} s (fresh interpreter, {how})"
    )
    assert report["loaded"] == [], f"importing the packages loaded {report['loaded']}"


def test_importing_the_other_packages_loads_nothing_heavy() -> None:
    report = probe(OTHER_PACKAGES)
    assert report["loaded"] == [], f"importing {OTHER_PACKAGES} loaded {report['loaded']}"


def test_probe_sees_a_heavy_module() -> None:
    # networkx is what `Corpus` builds its import DAG with; importing it must show up.
    assert probe(("lean_dojo_v2.data", "networkx"))["loaded"] == ["networkx"]
