"""Exact round trip of real LeanDojo Benchmark 4 records through the data model."""

from __future__ import annotations

import copy
import json

import pytest

from lean_dojo_v2.data import Annotation, Pos, Theorem, TracedTactic
from lean_dojo_v2.errors import DataFormatError


@pytest.fixture(scope="module")
def raw_text(b4_records_path):
    return b4_records_path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def records(raw_text):
    return json.loads(raw_text)


def _tactics(records):
    return [t for r in records for t in r["traced_tactics"]]


def test_every_record_round_trips_exactly(records):
    for i, rec in enumerate(records):
        out = Theorem.from_dict(rec).to_dict()
        assert out == rec, f"record {i}"
        assert list(out) == list(rec), f"key order of record {i}"
        for t_out, t_in in zip(out["traced_tactics"], rec["traced_tactics"], strict=True):
            assert list(t_out) == list(t_in)


def test_serialised_bytes_match_leandojo_file(raw_text, records):
    theorems = [Theorem.from_dict(r) for r in records]
    assert json.dumps([t.to_dict() for t in theorems]) == raw_text


def test_the_fixture_really_has_every_quirk(records):
    """The round trip above only means something if the real data carries each quirk."""
    tactics = _tactics(records)
    states = [t["state_before"] for t in tactics]
    assert any("\n\n" in s for s in states), "multi-goal state"
    assert any(s.startswith("case ") for s in states), "case tags"
    assert any("✝" in s for s in states), "inaccessible names"
    assert any(ord(c) > 0xFFFF for t in tactics for c in t["state_before"] + t["tactic"]), "non-BMP"
    assert "\\ud835" in json.dumps(records), "non-BMP characters are stored as surrogate pairs"
    assert any(
        "\n" in t["tactic"]
        and t["annotated_tactic"][0].replace("<a>", "").replace("</a>", "") != t["tactic"]
        for t in tactics
    ), "multi-line tactic indented differently in annotated_tactic"
    assert any(r["traced_tactics"] == [] for r in records), "term-mode theorem"
    paths = {p["def_path"] for t in tactics for p in t["annotated_tactic"][1]}
    assert any(p.startswith(".lake/packages/lean4/") for p in paths)
    assert any(p.startswith(".lake/packages/batteries/") for p in paths)
    assert any(
        len({p["full_name"] for p in t["annotated_tactic"][1]}) < len(t["annotated_tactic"][1])
        for t in tactics
    ), "repeated premises"


def test_theorem_properties_on_real_records(records):
    theorems = [Theorem.from_dict(r) for r in records]
    assert sum(t.has_tactic_proof for t in theorems) == 51
    assert sum(t.num_tactics for t in theorems) == 158
    rec = next(
        r
        for r in records
        for t in r["traced_tactics"]
        if len({p["full_name"] for p in t["annotated_tactic"][1]}) < len(t["annotated_tactic"][1])
    )
    thm = Theorem.from_dict(rec)
    names = [p["full_name"] for t in rec["traced_tactics"] for p in t["annotated_tactic"][1]]
    assert thm.premises == list(dict.fromkeys(names))
    assert len(list(thm.annotations)) == len(names)
    assert not thm.has_sorry


def test_theorem_statement_key_kept_in_place(records):
    # Newer LeanDojo versions add theorem_statement (null for term-mode proofs) after full_name.
    rec = {}
    for k, v in records[1].items():
        rec[k] = v
        if k == "full_name":
            rec["theorem_statement"] = None
    out = Theorem.from_dict(rec).to_dict()
    assert list(out) == list(rec) and out == rec
    assert "theorem_statement" not in Theorem.from_dict(records[1]).to_dict()


def test_unknown_keys_are_kept(records):
    rec = dict(records[0], difficulty_rating=1.5)
    assert Theorem.from_dict(rec).to_dict() == rec


def test_sorry_detection_on_tactics(records):
    rec = copy.deepcopy(next(r for r in records if r["traced_tactics"]))
    first = rec["traced_tactics"][0]
    # A real state with its tactic replaced by sorry (what a sorry'd proof records).
    first["tactic"] = "sorry"
    first["annotated_tactic"] = ["sorry", []]
    assert Theorem.from_dict(rec).has_sorry
    first["tactic"] = first["annotated_tactic"][0] = "exact sorry_lemma"
    assert not Theorem.from_dict(rec).has_sorry


@pytest.mark.parametrize(
    "value,expected",
    [([3, 7], Pos(3, 7)), ((3, 7), Pos(3, 7)), ("(3, 7)", Pos(3, 7)), (" ( 3,7 ) ", Pos(3, 7))],
)
def test_pos_parse(value, expected):
    assert Pos.parse(value) == expected
    assert repr(expected) == "(3, 7)"


@pytest.mark.parametrize("value", [[1], [1, 2, 3], ["1", 2], "3, 7", None, [True, 1]])
def test_pos_parse_rejects(value):
    with pytest.raises(DataFormatError):
        Pos.parse(value)


def test_pos_ordering():
    assert Pos(2, 30) < Pos(3, 1) < Pos(3, 2)


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda r: r.pop("url"), "url"),
        (lambda r: r.__setitem__("start", "nowhere"), "start"),
        (lambda r: r["traced_tactics"][0].pop("state_after"), "traced_tactics[0].state_after"),
        (
            lambda r: r["traced_tactics"][0]["annotated_tactic"][1][0].pop("def_pos"),
            "traced_tactics[0].annotated_tactic[1][0].def_pos",
        ),
        (
            lambda r: r["traced_tactics"][0].__setitem__("annotated_tactic", ["x"]),
            "traced_tactics[0].annotated_tactic",
        ),
        (lambda r: r.__setitem__("full_name", 3), "full_name"),
        (lambda r: r.__setitem__("theorem_statement", 3), "theorem_statement"),
    ],
)
def test_malformed_record_names_the_field(records, mutate, field):
    rec = copy.deepcopy(
        next(
            r
            for r in records
            if r["traced_tactics"] and r["traced_tactics"][0]["annotated_tactic"][1]
        )
    )
    mutate(rec)
    with pytest.raises(DataFormatError) as info:
        Theorem.from_dict(rec)
    assert info.value.field == field
    assert field in str(info.value)


def test_unannotated_tactic_and_annotation_round_trip(records):
    tac = records[3]["traced_tactics"][0] if records[3]["traced_tactics"] else _tactics(records)[0]
    t = TracedTactic.unannotated(tac["tactic"], tac["state_before"], tac["state_after"])
    assert t.to_dict()["annotated_tactic"] == [tac["tactic"], []]
    prov = next(p for x in _tactics(records) for p in x["annotated_tactic"][1])
    assert Annotation.from_dict(prov).to_dict() == prov


def test_repository_views(records):
    from lean_dojo_v2.data import Repository

    theorems = [Theorem.from_dict(r) for r in records]
    sorry = copy.deepcopy(records[next(i for i, r in enumerate(records) if r["traced_tactics"])])
    sorry["full_name"] += "_sorry"
    sorry["traced_tactics"][0]["tactic"] = "sorry"  # a real state, proof replaced by sorry
    theorems.append(Theorem.from_dict(sorry))
    repo = Repository(
        url=records[0]["url"] + ".git", commit=records[0]["commit"], theorems=theorems
    )
    assert repo.name == "mathlib4"
    assert len(repo.sorry_theorems) == 1
    assert (
        len(repo.proven_theorems) == 51 - 0
    )  # the 51 real tactic proofs; the sorry copy is not proven
