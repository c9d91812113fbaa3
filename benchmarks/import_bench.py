"""Import-time benchmark: ``import lean_dojo_v2`` and every layer's package, in fresh interpreters.

Each figure is the median over ``--runs`` fresh interpreters of the time the ``import``
statements take (interpreter start-up left out). Bytecode is compiled once into a private
``PYTHONPYCACHEPREFIX`` before the timed runs, as an installed package has it; the
``no_bytecode`` figure compiles every module from source each time (what a checkout run with
``PYTHONDONTWRITEBYTECODE=1`` pays). Also reported: which heavy modules (torch, transformers,
networkx, ...) the imports loaded (target: none) and the slowest modules our code imports
directly (``-X importtime``, cumulative), where a regression shows first.

Prints one JSON object. Target: all packages together <= 0.3 s.

    python benchmarks/import_bench.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 0.3
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
# Timed alone too (not in the total): packages a subcommand or a user may import on their own.
OTHER_PACKAGES = (
    "lean_dojo_v2.config",
    "lean_dojo_v2.errors",
    "lean_dojo_v2.system",
    "lean_dojo_v2.utils",
    "lean_dojo_v2.lean_dojo",
    "lean_dojo_v2.lean_progress",
)
# Must never load with a package (tests/test_import_time.py asserts it): each costs 0.1 s to
# seconds and loads where it is used.
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
# Lighter, but watched too: the benchmark reports them when a package loads one.
WATCHED = HEAVY + ("yaml", "tqdm", "httpx", "pydantic", "rich")

_PROBE = """
import importlib, json, sys, time
start = time.perf_counter()
for name in {packages!r}:
    importlib.import_module(name)
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _env(pycache: str | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def probe(
    packages: tuple[str, ...], pycache: str | None, watched: tuple[str, ...] = WATCHED
) -> dict:
    """Import ``packages`` in a fresh interpreter; its seconds and which of ``watched`` loaded
    (``pycache`` None: the interpreter writes no bytecode)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(packages=packages, heavy=watched)],
        cwd=ROOT,
        env=_env(pycache),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_seconds(packages: tuple[str, ...], pycache: str | None, runs: int) -> float:
    return round(statistics.median(probe(packages, pycache)["seconds"] for _ in range(runs)), 4)


def slowest_direct_imports(pycache: str, top: int = 8) -> list[dict[str, object]]:
    """Modules outside the package that our modules import directly, slowest first
    (cumulative microseconds from ``-X importtime``, one run)."""
    code = "import " + ", ".join(PACKAGES)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        env=_env(pycache),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m[2]), len(m[3]), m[4]))
    found = []
    # -X importtime prints a module after everything it imported; its importer is the next
    # line with a smaller indent.
    for i, (cumulative, indent, name) in enumerate(rows):
        parent = next((r[2] for r in rows[i + 1 :] if r[1] < indent), "")
        if parent.startswith("lean_dojo_v2") and not name.startswith("lean_dojo_v2"):
            found.append({"module": name, "by": parent, "ms": round(cumulative / 1000, 1)})
    return sorted(found, key=lambda r: -float(r["ms"]))[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-bench-pyc-") as pycache:
        probe(PACKAGES, pycache)  # compile once; not timed
        total = median_seconds(PACKAGES, pycache, args.runs)
        # each package alone in a fresh interpreter: what `import lean_dojo_v2.x` costs
        alone = {p: median_seconds((p,), pycache, args.runs) for p in PACKAGES + OTHER_PACKAGES}
        loaded = probe(PACKAGES, pycache)["loaded"]
        slowest = slowest_direct_imports(pycache)
    no_bytecode = median_seconds(PACKAGES, None, max(3, args.runs // 2))
    print(
        json.dumps(
            {
                "packages": list(PACKAGES),
                "total_s": total,
                "target_s": TARGET_SECONDS,
                "within_target": total <= TARGET_SECONDS,
                "per_package_alone_s": alone,
                "no_bytecode_total_s": no_bytecode,
                "heavy_loaded": loaded,
                "torch_loaded": "torch" in loaded,
                "transformers_loaded": "transformers" in loaded,
                "networkx_loaded": "networkx" in loaded,
                "slowest_direct_imports": slowest,
                "runs": args.runs,
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
