"""Fixtures shared by the parallel-proving tests: the bundled LeanDojo sample and the theorems they
prove (12 with a recorded tactic proof, 2 term-mode ones that replay cannot start)."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path


@pytest.fixture(scope="module")
def data() -> str:
    return str(sample_dataset_path())


@pytest.fixture(scope="module")
def theorems(data: str) -> list:
    all_theorems = load_theorems(data)
    with_tactics = [t for t in all_theorems if t.traced_tactics][:12]
    term_mode = [t for t in all_theorems if not t.traced_tactics][:2]
    return [*with_tactics[:6], *term_mode, *with_tactics[6:]]
