"""A tour of the data layer on the bundled real sample (LeanDojo Benchmark 4, mathlib4).

python examples/data_tour.py [DATASET_DIR] [OUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from lean_dojo_v2.data import (
    DatasetDir,
    SplitSpec,
    canonical_state,
    compute_stats,
    sample_dataset_path,
    split_goals,
    write_split_dataset,
)


def main(src: Path, out: Path) -> None:
    ds = DatasetDir(src)
    theorems = list(ds.all_theorems())
    print("stats:", compute_stats(theorems).to_dict())

    thm = next(t for t in theorems if len(t.traced_tactics) >= 2)
    print(f"\n{thm.full_name}  ({thm.file_path}:{thm.start.line_nb})")
    for tac in thm.traced_tactics:
        goals = split_goals(tac.state_before)
        print(f"  {len(goals)} goal(s) -> {tac.tactic!r}   premises: {tac.premises}")
    print("\ncanonical first state:\n" + canonical_state(thm.traced_tactics[0].state_before))

    corpus = ds.corpus()
    use = next(a for t in theorems for a in t.annotations)
    print(
        f"\n{use.full_name} is defined in {use.def_path}:",
        corpus.locate_premise(use.def_path, use.def_pos),
    )

    sizes = write_split_dataset(
        out,
        theorems,
        SplitSpec(val=0.1, test=0.1),
        ds.corpus_files(),
        ds.traced_files(),
        ds.metadata(),
    )
    print(f"\nre-split into {out}: {sizes}")


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else sample_dataset_path()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp()) / "resplit"
    main(src, out)
