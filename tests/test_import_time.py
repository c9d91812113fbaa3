"""Importing every layer's package stays cheap: no torch, no transformers, no networkx.

Each check runs in a fresh interpreter, since this one has long since loaded everything. The
seconds are printed, not asserted (a shared machine is too noisy for a time limit in a test);
``benchmarks/import_bench.py`` measures them properly against the 0.3 s target.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

# The package lists, the heavy modules and the probe are the benchmark's (one definition).
_ROOT = Path(__file__).resolve().parents[1]
_BENCH = _ROOT / "benchmarks" / "import_bench.py"
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


FACE_IMPORT = "from lean_dojo_v2 import " + ", ".join(
    "HFAgent LeanAgent ExternalAgent SFTTrainer GRPOTrainer RetrievalTrainer ProgressTrainer "
    "DynamicDatabase BestFirstSearch HFProver RetrievalProver ExternalProver ReplayEnv "
    "PantographEnv LeanGitRepo trace".split()
)


def test_import_lean_dojo_v2_is_fast_and_loads_nothing_heavy() -> None:
    """The top-level face is lazy: ``import lean_dojo_v2`` stays within the 0.3 s target (best
    of three fresh interpreters, to ride out a busy machine) and loads no torch."""
    reports = [probe(("lean_dojo_v2",)) for _ in range(3)]
    best = min(r["seconds"] for r in reports)
    print(f"import lean_dojo_v2: {best:.3f} s (best of 3, fresh interpreters, no bytecode)")
    assert reports[0]["loaded"] == [], f"import lean_dojo_v2 loaded {reports[0]['loaded']}"
    assert best <= bench.TARGET_SECONDS, f"import lean_dojo_v2 took {best:.3f} s"


def test_the_names_of_the_face_import_without_torch() -> None:
    """``from lean_dojo_v2 import HFAgent, SFTTrainer, ...`` gives the classes; torch,
    transformers, TRL and Lightning load only when one of them is used."""
    # networkx may load (the corpus's import graph); the model stack may not.
    model_stack = tuple(m for m in HEAVY if m != "networkx")
    code = f"import sys\n{FACE_IMPORT}\nprint([m for m in {model_stack!r} if m in sys.modules])"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=_ROOT
    )
    assert proc.stdout.strip() == "[]", f"{FACE_IMPORT} loaded {proc.stdout.strip()}"
