"""Fixtures for the v1 API tests: the bundled traced sample (real LeanDojo Benchmark 4 records),
a clean v1 configuration per test, and a Lean project served by the fake Pantograph REPL
(tests/fake_pantograph), which answers with states recorded by real Lean runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data import Theorem as DataTheorem
from lean_dojo_v2.data import goal_texts, load_theorems, sample_dataset_path

TESTS_DIR = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
if str(TESTS_DIR) not in sys.path:  # the fake REPL lives in tests/fake_pantograph
    sys.path.insert(0, str(TESTS_DIR))

# Theorems of the sample whose recorded proofs reach states with several goals.
MULTI_GOAL = "CancelDenoms.cancel_factors_lt"
SORRY_FREE = "IsGroupHom.inv_ker_one'"


@pytest.fixture(autouse=True)
def clean_v1(monkeypatch: pytest.MonkeyPatch):
    """No REPL, project or dataset from the machine; nothing left over from another test."""
    from lean_dojo_v2.v1 import alias, backend

    for var in (
        "LEAN_DOJO_V2_PANTOGRAPH",
        "LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT",
        backend.ENV_DATASET,
        backend.ENV_PROJECT,
    ):
        monkeypatch.delenv(var, raising=False)
    # An installed PyPantograph would be found as the REPL; these tests pick theirs.
    monkeypatch.setattr(
        "lean_dojo_v2.interaction.pantograph.locate.pypantograph_binary", lambda: None
    )
    backend.use_dataset(None)
    backend.use_project(None)
    backend._noticed.clear()
    yield
    alias.uninstall()
    backend.use_dataset(None)
    backend.use_project(None)


@pytest.fixture(scope="session")
def sample_theorems() -> list[DataTheorem]:
    return list(load_theorems(sample_dataset_path()))


@pytest.fixture(scope="session")
def proofs(sample_theorems: list[DataTheorem]) -> dict[str, DataTheorem]:
    """The sample's theorems with a recorded tactic proof, by full name (51)."""
    return {t.full_name: t for t in sample_theorems if t.traced_tactics}


def v1_theorem(thm: DataTheorem):
    """The v1 ``Theorem`` of a dataset record, built as v1 code builds it from benchmark JSON."""
    from lean_dojo_v2.v1 import LeanGitRepo, Theorem

    return Theorem(LeanGitRepo(thm.url, thm.commit), thm.file_path, thm.full_name)


def candidate_table(theorems: list[DataTheorem], wrong: int = 3) -> dict[str, list[list]]:
    """What a "model" suggests for a state, keyed by its first goal: the tactics recorded at that
    goal (log-prob from -0.1 down) and ``wrong`` tactics recorded at other goals of the sample
    (real text, log-prob from -0.5 down, so a wrong one often comes first). Deterministic."""
    import random

    rng = random.Random(0)
    pool: list[tuple[str, str]] = []
    right: dict[str, list[str]] = {}
    for thm in theorems:
        for tt in thm.traced_tactics:
            goals = goal_texts(tt.state_before)
            if goals:
                right.setdefault(goals[0], [])
                if tt.tactic not in right[goals[0]]:
                    right[goals[0]].append(tt.tactic)
                pool.append((goals[0], tt.tactic))
    table: dict[str, list[list]] = {}
    for goal, tactics in sorted(right.items()):
        cands = [[t, -0.1 * (i + 1)] for i, t in enumerate(tactics)]
        others = [t for g, t in rng.sample(pool, 4 * wrong) if g != goal and t not in tactics]
        cands += [[t, -0.05 - 0.2 * i] for i, t in enumerate(dict.fromkeys(others))][:wrong]
        table[goal] = cands
    return table


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def fake_project(tmp_path: Path, theorems: list[DataTheorem]) -> Path:
    """A built Lake project (lakefile, ``.lake/build``, the fake's Lean version) holding the
    theorems' files, for the fake REPL; the files are empty (the fake does not elaborate them:
    it starts a theorem from its recorded first state)."""
    from fake_pantograph.launcher import DEFAULT_TOOLCHAIN

    root = tmp_path / "project"
    (root / ".lake" / "build").mkdir(parents=True)
    (root / "lakefile.lean").write_text("import Lake\n", encoding="utf-8")
    (root / "lean-toolchain").write_text(DEFAULT_TOOLCHAIN + "\n", encoding="utf-8")
    for thm in theorems:
        path = root / thm.file_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    return root


@pytest.fixture
def fake_lean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake REPL as the Pantograph binary (``LEAN_DOJO_V2_PANTOGRAPH``), answering
    ``copyFrom`` with the recorded first state, and a ``lake`` on PATH that prints a LEAN_PATH.
    Returns the directory of the fake binaries."""
    from fake_pantograph.launcher import write_fake_binary

    bin_dir = tmp_path / "bin"
    binary = write_fake_binary(bin_dir, env={"FAKE_PANTOGRAPH_COPYFROM_RECORDED": "1"})
    lake = bin_dir / "lake"
    lake.write_text(f"#!/bin/sh\necho {tmp_path / 'lean_path'}\n", encoding="utf-8")
    lake.chmod(0o755)
    monkeypatch.setenv("LEAN_DOJO_V2_PANTOGRAPH", str(binary))
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ.get('PATH', '')}")
    return bin_dir
