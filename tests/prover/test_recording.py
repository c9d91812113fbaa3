"""Recording search results in the DynamicDatabase: only proved results, with backend,
verified (= checked by Lean), time and model; a sorry theorem moves to sorry_proved; results for
theorems the database does not hold are counted and warned about; a repeated run records
nothing twice.

Real data: the bundled LeanDojo sample. The database holds a copy in which some theorems' first
tactic is ``sorry`` (so they are ``sorry_unproved`` there); the search runs on the original
records through ``ReplayEnv`` with a generator that proposes the recorded tactics."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.recording import record_results
from lean_dojo_v2.prover.search import SearchConfig

from .pipeline_oracle import OracleSpec

CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60, frontier_batch=2)


@pytest.fixture(scope="module")
def searched() -> tuple[list, list]:
    data = str(sample_dataset_path())
    all_theorems = load_theorems(data)
    # Ten with a recorded tactic proof, two term-mode ones (replay cannot start them: "error").
    theorems = [t for t in all_theorems if t.traced_tactics][:10]
    theorems += [t for t in all_theorems if not t.traced_tactics][:2]
    results = prove_theorems(
        theorems, ReplayEnvSpec(data), OracleSpec(data), CONFIG, backend="inline", progress=False
    )
    return theorems, results


def _sorry_copy(dst: Path, names: set[str]) -> Path:
    """The bundled sample with the first tactic of ``names`` replaced by ``sorry``."""
    shutil.copytree(sample_dataset_path(), dst)
    for split in dst.glob("*/*.json"):
        records = json.loads(split.read_text("utf-8"))
        for r in records:
            if r["full_name"] in names and r["traced_tactics"]:
                r["traced_tactics"][0] = dict(
                    r["traced_tactics"][0], tactic="sorry", annotated_tactic=["sorry", []]
                )
        split.write_text(json.dumps(records), "utf-8")
    return dst


def test_proved_results_are_recorded_and_sorry_theorems_move_to_proved(
    searched: tuple[list, list], tmp_path: Path
) -> None:
    theorems, results = searched
    proved = [r for r in results if r.status == "proved"]
    assert len(proved) >= 3 and len(proved) < len(results)  # some proved, some not
    sorry_names = {r.theorem for r in proved[:2]}
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        db.add_repository(_sorry_copy(tmp_path / "ds", sorry_names))
        assert {t.full_name for t in db.sorry_theorems_unproved()} >= sorry_names
        summary = record_results(db, results, theorems, model="oracle")
        assert summary.recorded == len(proved)
        assert summary.not_proved == len(results) - len(proved)
        assert summary.not_in_db == [] and summary.ambiguous == []
        by_name = {t.full_name: t for t in theorems}
        for r in proved:
            (record,) = db.proofs(by_name[r.theorem])
            assert record.tactic_texts == r.proof
            assert record.backend == "replay" and record.model == "oracle"
            assert record.verified is False  # replay proofs are not Lean-verified
            assert record.time_s == pytest.approx(r.seconds)
        moved = {t.full_name for t in db.sorry_theorems_proved()}
        assert moved == sorry_names
        assert not sorry_names & {t.full_name for t in db.sorry_theorems_unproved()}
        # Running again records nothing twice.
        again = record_results(db, results, theorems, model="oracle")
        assert again.recorded == 0 and again.already_recorded == len(proved)
        assert db.stats()["proofs"] == len(proved)


def test_lean_checked_results_are_recorded_as_verified(
    searched: tuple[list, list], tmp_path: Path
) -> None:
    theorems, results = searched
    # The same proofs as if a Lean frontend had re-checked them.
    lean = [
        dataclasses.replace(r, checked_by="lean", backend="pantograph")
        for r in results
        if r.status == "proved"
    ]
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        db.add_repository(sample_dataset_path())
        summary = record_results(db, lean)  # no theorem records: matched by name and file
        assert summary.recorded == len(lean)
        assert all(p.verified and p.backend == "pantograph" for p in db.proofs())


def test_results_not_in_the_database_are_counted_and_warned(
    searched: tuple[list, list], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    theorems, results = searched
    proved = [r for r in results if r.status == "proved"]
    others = [dataclasses.replace(t, url="https://example.org/other") for t in theorems]
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        db.add_repository(sample_dataset_path())
        with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.prover.recording"):
            summary = record_results(db, results, others)
        assert summary.recorded == 0
        assert summary.not_in_db == [r.theorem for r in proved]
        assert "not in the database" in caplog.text
        assert db.stats()["proofs"] == 0
        # A theorem name the database lacks entirely (no theorem records given).
        renamed = [dataclasses.replace(r, theorem=r.theorem + "_x") for r in proved[:1]]
        assert record_results(db, renamed).not_in_db == [proved[0].theorem + "_x"]
