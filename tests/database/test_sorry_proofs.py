"""Sorry status from the data (tactics, source) and from recorded proofs; training runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_dojo_v2.data import TracedTactic
from lean_dojo_v2.database import DynamicDatabase, RecordNotFoundError

from .conftest import replicate


def _with_tactic(record: dict, tactic: str) -> dict:
    first = dict(record["traced_tactics"][0], tactic=tactic, annotated_tactic=[tactic, []])
    return dict(record, traced_tactics=[first] + record["traced_tactics"][1:])


def test_sorry_from_tactics(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    tactic_idx = [i for i, r in enumerate(recs) if r["traced_tactics"]]
    cases = {
        "sorry": "sorry_unproved",
        "exact sorry": "sorry_unproved",
        "refine ⟨_, sorry⟩": "sorry_unproved",
        "exact sorry_lemma x": "proven",  # an identifier, not the sorry term
        "simp -- sorry later": "proven",  # a comment
        'trace "sorry"': "proven",  # a string
        "exact Foo.sorry": "proven",
    }
    for i, tactic in zip(tactic_idx, cases, strict=False):
        recs[i] = _with_tactic(recs[i], tactic)
    info = db.add_repository(make_dataset(recs))
    assert info.num_sorry_theorems_unproved == 3
    for i, (tactic, status) in zip(tactic_idx, cases.items(), strict=False):
        stored = next(db.stored_theorems(full_name=recs[i]["full_name"]))
        assert stored.sorry_status == status, tactic
        assert stored.sorry_source == ("tactic" if status != "proven" else None)
    unproved = {t.full_name for t in db.sorry_theorems_unproved()}
    assert unproved == {recs[i]["full_name"] for i in tactic_idx[:3]}
    assert db.stats()["sorry_unproved"] == 3


def test_sorry_from_source(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    term_mode = [r for r in recs if not r["traced_tactics"]]
    by_file: dict[str, list[dict]] = {}
    for r in term_mode:
        by_file.setdefault(r["file_path"], []).append(r)
    # Files holding exactly one term-mode theorem, so we control each file's whole text.
    singles = [
        rs[0]
        for rs in by_file.values()
        if len(rs) == 1
        and not any(o["file_path"] == rs[0]["file_path"] and o is not rs[0] for o in recs)
    ][:4]
    assert len(singles) == 4
    src = tmp_path / "checkout"
    bodies = [
        ":= sorry",  # term-mode sorry: detected
        ":= by\n  sorry",  # tactic sorry that the tracer did not record
        ":= foo -- sorry in a comment",  # not a sorry
        ":= sorryAx _ /- sorry -/",  # sorryAx is an identifier, the other in a comment
    ]
    for r, body in zip(singles, bodies, strict=True):
        (l1, _), (l2, _) = r["start"], r["end"]
        lines = [""] * (l1 - 1) + [f"theorem t {body}"] + [""] * max(0, l2 - l1 - body.count("\n"))
        lines.append("theorem after : True := sorry")  # after the end: belongs to another decl
        path = src / r["file_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))
    info = db.add_repository(make_dataset(recs), source_dir=src)
    assert info.num_sorry_theorems_unproved == 2
    got = {st.theorem.full_name: st for st in db.stored_theorems(status="sorry_unproved")}
    assert set(got) == {singles[0]["full_name"], singles[1]["full_name"]}
    assert all(st.sorry_source == "source" for st in got.values())


def test_record_proof_moves_to_proved(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    idx = [i for i, r in enumerate(recs) if r["traced_tactics"]][:3]
    for i in idx:
        recs[i] = _with_tactic(recs[i], "sorry")
    info = db.add_repository(make_dataset(recs))
    assert info.num_sorry_theorems_unproved == 3
    target = next(db.sorry_theorems_unproved())
    p1 = db.record_proof(
        target,
        "intro h\nexact h.1\n",
        backend="pantograph",
        verified=False,
        time_s=1.5,
        model="smollm2",
    )
    assert p1.tactic_texts == ["intro h", "exact h.1"] and p1.proof_text == "intro h\nexact h.1\n"
    stored = db.get_theorem(target)
    assert stored.sorry_status == "sorry_proved" and stored.proof_steps == 2
    assert target.full_name not in {t.full_name for t in db.sorry_theorems_unproved()}
    assert [t.full_name for t in db.sorry_theorems_proved()] == [target.full_name]
    again = db.get_repository(info.url, info.commit)
    assert again is not None
    assert (again.num_sorry_theorems_unproved, again.num_sorry_theorems_proved) == (2, 1)
    # A shorter, verified proof with goal states.
    steps = [TracedTactic.unannotated("simp_all", "h : A ∧ B\n⊢ A", "no goals")]
    p2 = db.record_proof(stored.id, steps, backend="pantograph", verified=True)
    assert p2.tactics == [
        {"tactic": "simp_all", "state_before": "h : A ∧ B\n⊢ A", "state_after": "no goals"}
    ]
    assert db.get_theorem(stored.id).proof_steps == 1
    assert [p.id for p in db.proofs(target)] == [p1.id, p2.id]
    assert db.best_proof(target) == p2
    assert db.stats()["proofs"] == 2 and db.stats()["sorry_proved"] == 1
    # A proof of an already proven theorem is recorded; the status stays proven.
    proven = next(db.stored_theorems(status="proven"))
    db.record_proof(proven, ["rfl"], backend="replay")
    assert db.get_theorem(proven.id).sorry_status == "proven"
    with pytest.raises(ValueError):
        db.record_proof(proven, [])
    with pytest.raises(RecordNotFoundError):
        db.record_proof(10_000, ["rfl"])
    with pytest.raises(RecordNotFoundError):
        db.record_proof(proven, ["rfl"], training_run=99)
    assert db.stats()["proofs"] == 3  # failed calls changed nothing


def test_difficulty_uses_found_proof(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    i = next(i for i, r in enumerate(recs) if r["traced_tactics"])
    recs[i] = _with_tactic(recs[i], "sorry")
    db.add_repository(make_dataset(recs))
    st = next(db.stored_theorems(status="sorry_unproved"))
    assert st.difficulty == float("inf")
    before = db.count_theorems(difficulty="hard_no_proof")
    db.record_proof(st, ["a", "b", "c"])
    st = db.get_theorem(st.id)
    assert st.steps == 3 and st.difficulty == pytest.approx(20.085536923187668)
    assert db.count_theorems(difficulty="hard_no_proof") == before - 1


def test_training_runs(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    a = db.add_repository(make_dataset(replicate(records[:10], "https://x/a", "1" * 40)))
    b = db.add_repository(make_dataset(replicate(records[:10], "https://x/b", "1" * 40)))
    run = db.start_training_run("sft", model="smollm2", config={"lr": 1e-4}, repositories=[b, a])
    stored = next(db.stored_theorems(a))
    proof = db.record_proof(stored, ["simp"], training_run=run, model="smollm2")
    assert proof.training_run_id == run
    db.finish_training_run(run, metrics={"loss": 0.5}, checkpoint="ckpt/1")
    (tr,) = db.training_runs()
    assert (tr.kind, tr.model, tr.status, tr.checkpoint) == ("sft", "smollm2", "finished", "ckpt/1")
    assert tr.config == {"lr": 1e-4} and tr.metrics == {"loss": 0.5}
    assert tr.repository_ids == [b.id, a.id] and tr.finished_at
    with pytest.raises(RecordNotFoundError):
        db.finish_training_run(42)
    db.connection.execute("DELETE FROM training_runs WHERE id = ?", (run,))
    assert db.proofs(stored)[0].training_run_id is None  # ON DELETE SET NULL
