"""Build the bundled sample dataset (package data) from the real records in ../shared/data.

Run from the repository root:  python scripts/build_sample_data.py [--shared ../shared/data]

The sample is LeanDojo Benchmark 4 (mathlib4 29dcec07): the first 100 records of random/test.json,
unchanged. The benchmark's corpus.jsonl was not available, so the corpus written here lists, per
definition file, the premises named in the tactics' provenances with their real paths and name
positions; their ``code`` is empty and ``kind`` is "unknown" (nothing is invented). The imports are
the edges implied by premise use (``scripts/sample_corpus_imports.py``, run at the end).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from sample_corpus_imports import main as add_implied_imports

from lean_dojo_v2.data import (
    Pos,
    Premise,
    PremiseFile,
    SplitSpec,
    read_theorems,
    write_split_dataset,
)
from lean_dojo_v2.data.output_dir import MARKER
from lean_dojo_v2.data.sample import sample_dataset_path

PROVENANCE = """\
# Provenance of the bundled sample `leandojo_b4_sample`

- **What**: the first 100 theorem records of LeanDojo Benchmark 4 `random/test.json`, copied unchanged
  (100 theorems, 51 with tactic proofs, 158 tactics), re-split by lean-dojo-v2 (`SplitSpec(val=10, test=10)`).
- **Origin**: LeanDojo Benchmark 4 as released on Zenodo (record 12740403), traced from
  `leanprover-community/mathlib4` at commit `29dcec074de168ac2bf835a77ef68bbe069194c5` with LeanDojo 2.0.0;
  the copy read was `pianomaster99/Fermats2ndLastTheorem@23f3999433cabded658afe9b6279444d6a56965e`,
  `data/leandojo_benchmark_4/random/test.json`.
- **Licence**: the dataset is released under **CC BY 2.0**; the traced Lean sources (mathlib4) are
  **Apache-2.0**. Attribution: Yang et al., "LeanDojo: Theorem Proving with Retrieval-Augmented Language
  Models", NeurIPS 2023 Datasets and Benchmarks.
- **corpus.jsonl**: the benchmark's corpus was not available. The corpus here is derived from the tactics'
  premise provenances: one entry per definition file, one premise per distinct (name, position) with the
  real `def_path`, `def_pos` and `def_end_pos` (the name's range, as LeanDojo records it). `code` is empty
  and `kind` is `"unknown"`. Every file that holds theorems has an entry too (those that define no
  recorded premise list none), so every theorem has accessible premises.
- **Imports**: the real import graph is not known, but premise use implies real edges: a theorem in file
  T whose proof uses a premise defined in file P != T can only do so because T imports P (directly or
  transitively). Each file's `imports` are exactly these implied edges (116 of them; they form a DAG),
  written by `scripts/sample_corpus_imports.py` from the sample's own records. They make every recorded
  premise accessible where it is used (premises of the theorem's own file are all defined before it);
  they are not the files' full import lists, so a file may see fewer premises than in Lean.
- **metadata.json**: the benchmark's own metadata plus the fields above.
"""


def build(shared: Path, out: Path) -> None:
    records = shared / "leandojo_b4" / "random_test_records_1_100.json"
    theorems = read_theorems(records)
    files: dict[str, dict[tuple[str, Pos], Premise]] = {}
    for thm in theorems:
        for a in thm.annotations:
            files.setdefault(a.def_path, {}).setdefault(
                (a.full_name, a.def_pos),
                Premise(a.def_path, a.full_name, "", a.def_pos, a.def_end_pos, "unknown"),
            )
    corpus = [
        PremiseFile(path, [], sorted(prem.values(), key=lambda p: p.start))
        for path, prem in sorted(files.items())
    ]
    meta = json.loads((shared / "leandojo_b4" / "metadata.json").read_text())
    meta.update(
        {
            "sample": "first 100 records of LeanDojo Benchmark 4 random/test.json",
            "licence": "CC BY 2.0 (dataset); Apache-2.0 (mathlib4 sources)",
            "corpus_note": "derived from tactic provenances; code unknown (empty); imports implied "
            "by premise use",
        }
    )
    traced = sorted({t.file_path for t in theorems})
    sizes = write_split_dataset(
        out, theorems, SplitSpec(val=10, test=10), corpus, traced, meta, force=True
    )
    (out / MARKER).unlink()  # package data: no "lean-dojo-v2 may replace this" marker
    add_implied_imports(out)
    (out / "PROVENANCE.md").write_text(PROVENANCE)
    shutil.copyfile(shared / "leandojo_b4" / "SOURCE.txt", out / "SOURCE.txt")
    print(json.dumps(sizes))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path("..") / "shared" / "data")
    parser.add_argument("--out", type=Path, default=sample_dataset_path())
    args = parser.parse_args()
    build(args.shared, args.out)
