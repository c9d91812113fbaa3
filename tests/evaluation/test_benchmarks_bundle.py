"""The bundled benchmarks are the upstream files, unchanged: rebuilt from ``../shared/data``
(where it is at hand) by :func:`lean_dojo_v2.evaluation.bundle.build_bundle`, every data file and
licence is byte for byte the one in the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_dojo_v2.evaluation.benchmarks import bundled_benchmarks_dir
from lean_dojo_v2.evaluation.bundle import build_bundle, single_theorem


def test_the_bundle_is_rebuilt_byte_for_byte(tmp_path: Path, full_shared_data: Path | None):
    if full_shared_data is None or not (full_shared_data / "prover_benchmarks").is_dir():
        pytest.skip("the upstream releases (../shared/data/prover_benchmarks) are not here")
    counts = build_bundle(full_shared_data, tmp_path)
    assert counts == {
        "deepseek_prover_v15/minif2f.jsonl": 488,
        "deepseek_prover_v15/proofnet.jsonl": 371,
        "deepseek_prover_v15/minif2f_valid_few_shot.jsonl": 67,
        "putnambench/putnambench.jsonl": 672,
        "kimina_prover_preview/minif2f_test_proofs.jsonl": 217,
    }
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert built
    for rel in built:
        assert (bundled_benchmarks_dir() / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_only_files_declaring_one_theorem_are_kept():
    header = "import Mathlib\n\nopen Real\n\n"
    assert single_theorem(header + "theorem t : 1 = 1 := by\n  rfl\n")
    assert not single_theorem(header + "lemma l : 1 = 1 := rfl\n\ntheorem t : 1 = 1 := by\n  rfl\n")
    assert not single_theorem(header + "def f := 1\n")
