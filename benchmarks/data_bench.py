"""Data-layer benchmark: read + normalise + write a 100k-theorem LeanDojo dataset.

The dataset is made by replicating the real LeanDojo Benchmark 4 records (../shared/data) under
fresh names (file paths and full names get a copy suffix; goal text and tactics stay real). The
measured work runs in a child process so its peak RSS is its own:

1. read every theorem of the dataset (``random/{train,val,test}.json``),
2. normalise every goal state (``clean_state`` written back, ``canonical_state`` computed),
3. split both ways and write the whole layout (both strategies, corpus, traced files, metadata).

Prints one JSON object. Targets (2-core machine): <= 20 s and <= 2 GiB peak RSS.

    python benchmarks/data_bench.py [--theorems 100000] [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_SECONDS = 20.0
TARGET_RSS_GIB = 2.0


def make_dataset(shared: Path, n: int, dst: Path) -> dict[str, int]:
    """Replicate the real records under fresh names into a LeanDojo dataset at ``dst``."""
    from lean_dojo_v2.data import SplitSpec, write_split_dataset
    from lean_dojo_v2.data.jsonio import read_json

    records = read_json(shared / "leandojo_b4" / "random_test_records_1_100.json")

    def replicas():
        for i in range(n):
            rec = dict(records[i % len(records)])
            copy = i // len(records)
            rec["file_path"] = rec["file_path"].replace(".lean", f"_c{copy}.lean")
            rec["full_name"] = f"{rec['full_name']}_c{copy}"
            yield rec

    from lean_dojo_v2.data import Theorem

    theorems = [Theorem.from_dict(r) for r in replicas()]
    sizes = write_split_dataset(dst, theorems, SplitSpec(0.02, 0.02))
    return sizes["random"]


def measured(src: Path, dst: Path) -> dict[str, float]:
    """The work under test; runs in a fresh process."""
    from lean_dojo_v2.data import (
        DatasetDir,
        SplitSpec,
        canonical_state,
        clean_state,
        split_theorems,
        write_dataset,
    )

    t0 = time.perf_counter()
    theorems = list(DatasetDir(src).all_theorems("random"))
    t1 = time.perf_counter()
    n_states = 0
    distinct: set[str] = set()
    for thm in theorems:
        for tac in thm.traced_tactics:
            tac.state_before = clean_state(tac.state_before)
            tac.state_after = clean_state(tac.state_after)
            distinct.add(canonical_state(tac.state_before))
            distinct.add(canonical_state(tac.state_after))
            n_states += 2
    t2 = time.perf_counter()
    splits = split_theorems(theorems, SplitSpec(0.02, 0.02))
    t_split = time.perf_counter()
    write_dataset(dst, splits)
    t3 = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "theorems": len(theorems),
        "states_normalised": n_states,
        "distinct_canonical_states": len(distinct),
        "read_s": round(t1 - t0, 3),
        "normalise_s": round(t2 - t1, 3),
        "split_s": round(t_split - t2, 3),
        "write_s": round(t3 - t_split, 3),
        "total_s": round(t3 - t0, 3),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--theorems", type=int, default=100_000)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--child", nargs=2, metavar=("SRC", "DST"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measured(Path(args.child[0]), Path(args.child[1]))))
        return
    with tempfile.TemporaryDirectory(prefix="ldv2-bench-") as tmp:
        src, dst = Path(tmp) / "src", Path(tmp) / "dst"
        t0 = time.perf_counter()
        sizes = make_dataset(args.shared, args.theorems, src)
        made = time.perf_counter() - t0
        size_mib = sum(p.stat().st_size for p in src.rglob("*") if p.is_file()) / 2**20
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(src), str(dst)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(proc.stdout)
    result.update(
        {
            "benchmark": "data_read_normalise_write",
            "dataset_mib": round(size_mib, 1),
            "random_split_sizes": sizes,
            "generation_s": round(made, 2),
            "target_s": TARGET_SECONDS,
            "target_rss_mib": TARGET_RSS_GIB * 1024,
            "time_ratio_to_target": round(result["total_s"] / TARGET_SECONDS, 3),
            "rss_ratio_to_target": round(result["peak_rss_mib"] / (TARGET_RSS_GIB * 1024), 3),
        }
    )
    result["meets_targets"] = (
        result["total_s"] <= TARGET_SECONDS and result["peak_rss_mib"] <= TARGET_RSS_GIB * 1024
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
