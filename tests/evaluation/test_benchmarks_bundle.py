"""The bundled benchmarks are the upstream files, unchanged: rebuilt from ``../shared/data``
(where it is at hand) by :func:`lean_dojo_v2.evaluation.bundle.build_bundle`, every data file and
licence is byte for byte the one in the package."""

from __future__ import annotations

import json
from pathlib import Path

from lean_dojo_v2.evaluation.benchmarks import bundled_benchmarks_dir
from lean_dojo_v2.evaluation.bundle import build_bundle, single_theorem

EXPECTED_RECORDS = {
    "deepseek_prover_v15/minif2f.jsonl": 488,
    "deepseek_prover_v15/proofnet.jsonl": 371,
    "deepseek_prover_v15/minif2f_valid_few_shot.jsonl": 67,
    "putnambench/putnambench.jsonl": 672,
    "kimina_prover_preview/minif2f_test_proofs.jsonl": 217,
}


def test_the_bundle_has_every_record_and_names_its_licence() -> None:
    bundle = bundled_benchmarks_dir()
    for rel, records in EXPECTED_RECORDS.items():
        lines = (bundle / rel).read_text("utf-8").splitlines()
        assert len(lines) == records, rel
        assert all(json.loads(line) for line in lines), rel
    for source in {Path(rel).parent for rel in EXPECTED_RECORDS}:
        assert (bundle / source / "LICENSE").is_file() and (bundle / source / "SOURCE").is_file()


def test_the_bundle_is_rebuilt_byte_for_byte(tmp_path: Path, full_shared_data: Path | None):
    # Extra check where ../shared/data is there: the package's copy is what build_bundle makes.
    if full_shared_data is None or not (full_shared_data / "prover_benchmarks").is_dir():
        return
    counts = build_bundle(full_shared_data, tmp_path)
    assert counts == EXPECTED_RECORDS
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert built
    for rel in built:
        assert (bundled_benchmarks_dir() / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_only_files_declaring_one_theorem_are_kept():
    header = "import Mathlib\n\nopen Real\n\n"
    assert single_theorem(header + "theorem t : 1 = 1 := by\n  rfl\n")
    assert not single_theorem(header + "lemma l : 1 = 1 := rfl\n\ntheorem t : 1 = 1 := by\n  rfl\n")
    assert not single_theorem(header + "def f := 1\n")
