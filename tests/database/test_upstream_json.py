"""Import and export of the upstream ``dynamic_database.json``.

``data/upstream_dynamic_database.json`` was written by upstream lean-dojo-v2 1.0.9 itself
(``make_upstream_fixture.py``): two repositories from real records, one ``sorry`` proved with
``change_sorry_to_proven``, difficulties filled in by ``sort_repositories_by_difficulty``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lean_dojo_v2.data import DatasetDir, Pos, sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.errors import DataFormatError

FIXTURE = Path(__file__).parent / "data" / "upstream_dynamic_database.json"


def test_import_then_export_is_byte_identical(db: DynamicDatabase, tmp_path: Path) -> None:
    added = db.import_json(FIXTURE)
    assert [r.name for r in added] == ["example-a/lean-a", "example-b/lean-b"]
    a, b = added
    assert (a.total_theorems, b.total_theorems) == (20, 20)
    assert (b.num_sorry_theorems_unproved, b.num_sorry_theorems_proved) == (1, 1)
    assert a.metadata == {"date_processed": "2024-05-01T10:00:00"}
    assert a.lean_version == "v4.9.0" and a.lean_dojo_version == "1.0.9"
    out = tmp_path / "again.json"
    db.export_json(out)
    assert out.read_bytes() == FIXTURE.read_bytes()
    # Only some repositories, and the upstream method name.
    db.to_json(tmp_path / "all.json")
    assert (tmp_path / "all.json").read_bytes() == FIXTURE.read_bytes()
    db.export_json(tmp_path / "b.json", [b])
    data = json.loads((tmp_path / "b.json").read_text())
    assert [r["url"] for r in data["repositories"]] == [b.url]
    assert data["repositories"][0] == json.loads(FIXTURE.read_text())["repositories"][1]


def test_import_contents(db: DynamicDatabase) -> None:
    db.import_json(FIXTURE)
    raw = json.loads(FIXTURE.read_text())["repositories"]
    first = raw[0]["proven_theorems"][0]
    st = next(db.stored_theorems(full_name=first["full_name"]))
    assert st.theorem.start == Pos(*map(int, first["start"].strip("()").split(",")))
    assert st.sorry_status == "proven"
    unproved = list(db.sorry_theorems_unproved())
    assert [t.full_name for t in unproved] == [
        t["full_name"] for t in raw[1]["sorry_theorems_unproved"]
    ]
    assert unproved[0].traced_tactics[0].tactic == "sorry"
    # Difficulty as upstream stored it: +inf for sorry, e**steps, null for term mode.
    difficulties = {
        t["full_name"]: t["difficulty_rating"]
        for r in raw
        for bucket in ("proven_theorems", "sorry_theorems_proved", "sorry_theorems_unproved")
        for t in r[bucket]
    }
    assert math.inf in difficulties.values() and None in difficulties.values()
    for st in db.stored_theorems():
        assert json.loads(st.upstream_difficulty) == difficulties[st.theorem.full_name]


def test_import_is_idempotent_and_atomic(db: DynamicDatabase, tmp_path: Path) -> None:
    db.import_json(FIXTURE)
    before = db.stats()
    assert db.import_json(FIXTURE) == []
    assert db.stats() == before
    data = json.loads(FIXTURE.read_text())
    data["repositories"][0]["url"] = "https://github.com/example-a/other"
    data["repositories"][1]["url"] = "https://github.com/example-b/other"
    del data["repositories"][1]["sorry_theorems_proved"][0]["start"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(DataFormatError) as info:
        db.import_json(bad)
    err = info.value
    assert err.file == str(bad) and err.record == 1
    assert err.field == "sorry_theorems_proved[0].start"
    assert db.stats() == before  # the first (valid) repository of the file was not kept either


def test_import_rejects_other_shapes(db: DynamicDatabase, tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text('{"repos": []}')
    with pytest.raises(DataFormatError, match="repositories"):
        db.import_json(f)
    f.write_text('{"repositories": [{"url": "u"}]}')
    with pytest.raises(DataFormatError, match="missing field"):
        db.import_json(f)
    f.write_text("[1, 2")
    with pytest.raises(DataFormatError, match="invalid JSON"):
        db.import_json(f)


def test_our_data_round_trips_through_upstream_json(db: DynamicDatabase, tmp_path: Path) -> None:
    """Ours → upstream JSON → ours again gives the same theorems (what users moving back and
    forth need); the JSON has the upstream's shape."""
    info = db.add_repository(sample_dataset_path())
    stored = next(db.stored_theorems(status="proven"))
    path = tmp_path / "up.json"
    db.export_json(path)
    data = json.loads(path.read_text())
    (repo,) = data["repositories"]
    assert repo["total_theorems"] == 100 and repo["num_premises"] == 185
    assert set(repo) >= {"proven_theorems", "premise_files", "files_traced", "pr_url", "metadata"}
    thm = repo["proven_theorems"][0]
    assert isinstance(thm["start"], str) and thm["start"].startswith("(")
    assert "difficulty_rating" in thm
    with DynamicDatabase(tmp_path / "other.sqlite") as other:
        (back,) = other.import_json(path)
        assert back.total_theorems == info.total_theorems
        got = {t.full_name: t for t in other.theorems()}
        for t in db.theorems():
            g = got[t.full_name]
            assert g.traced_tactics == t.traced_tactics
            assert (g.start, g.end, g.file_path) == (t.start, t.end, t.file_path)
        assert stored.theorem.full_name in got
        # and writing it out again gives the same upstream file
        other.export_json(tmp_path / "up2.json")
        assert (tmp_path / "up2.json").read_bytes() == path.read_bytes()
        # a dataset export from the imported copy has the same corpus
        other.export_merged_data(None, tmp_path / "ds")
        assert (tmp_path / "ds" / "corpus.jsonl").read_bytes() == (
            sample_dataset_path() / "corpus.jsonl"
        ).read_bytes()
        assert len(list(DatasetDir(tmp_path / "ds").all_theorems())) == 100
