"""Opening, schema versions, adding and reading repositories and theorems."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lean_dojo_v2.data import Repository, Theorem, sample_dataset_path
from lean_dojo_v2.database import (
    SCHEMA_VERSION,
    DatabaseError,
    DynamicDatabase,
    RecordNotFoundError,
    schema,
)
from lean_dojo_v2.errors import LeanDojoError

from .conftest import SAMPLE_COMMIT, SAMPLE_URL, record_key, replicate


def test_open_creates_schema_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "db.sqlite"
    with DynamicDatabase(path) as db:
        assert db.schema_version == SCHEMA_VERSION
        assert db.stats()["repositories"] == 0
        mode = db.connection.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        assert db.connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert path.is_file()


def test_reopening_never_wipes(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
        before = db.stats()
    for _ in range(2):
        with DynamicDatabase(path) as db:
            assert db.stats() == before


def test_default_path_is_under_raid_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lean_dojo_v2.config import reset_settings

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    reset_settings()
    try:
        with DynamicDatabase() as db:
            assert db.path == tmp_path / "raid" / "dynamic_database.sqlite"
        assert db.path.is_file()
    finally:
        reset_settings()


def test_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseError, match="not a usable SQLite database"):
        DynamicDatabase(junk)
    assert junk.read_bytes() == b"this is not sqlite" * 100

    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError, match="not a lean-dojo-v2 database"):
        DynamicDatabase(foreign)
    with pytest.raises(DatabaseError, match="directory"):
        DynamicDatabase(tmp_path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    DynamicDatabase(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE db_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
    )
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError, match="newer than this library"):
        DynamicDatabase(path)


def test_migration_runs_once_and_keeps_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite"
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
        before = db.stats()
    calls = []

    def v2(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("ALTER TABLE repositories ADD COLUMN note TEXT")

    monkeypatch.setitem(schema.MIGRATIONS, SCHEMA_VERSION + 1, v2)
    monkeypatch.setattr("lean_dojo_v2.database.dynamic_database.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):
        with DynamicDatabase(path) as db:
            assert db.schema_version == SCHEMA_VERSION + 1
            assert db.stats() == before
    assert calls == [1]


def test_failed_migration_leaves_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite"
    DynamicDatabase(path).close()

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE repositories ADD COLUMN note TEXT")
        raise RuntimeError("boom")

    monkeypatch.setitem(schema.MIGRATIONS, SCHEMA_VERSION + 1, broken)
    monkeypatch.setattr("lean_dojo_v2.database.dynamic_database.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(RuntimeError):
        DynamicDatabase(path)
    monkeypatch.undo()
    with DynamicDatabase(path) as db:
        assert db.schema_version == SCHEMA_VERSION
        cols = [r[1] for r in db.connection.execute("PRAGMA table_info(repositories)")]
        assert "note" not in cols


def test_add_sample_and_read_back(db: DynamicDatabase, records: list[dict]) -> None:
    info = db.add_repository(sample_dataset_path())
    assert (info.url, info.commit, info.name) == (SAMPLE_URL, SAMPLE_COMMIT, "mathlib4")
    assert info.total_theorems == 100 and info.num_tactics == 158
    assert info.num_files_traced == 95 and info.num_premise_files == 160
    assert info.metadata["dataset_name"] == "LeanDojo Benchmark 4"
    assert "date_processed" in info.metadata
    assert str(info) == f"mathlib4_{SAMPLE_COMMIT}"
    stats = db.stats()
    assert stats["theorems"] == 100 and stats["tactics"] == 158 and stats["premise_uses"] == 262
    assert stats["premises"] == 185
    got = sorted((t.to_dict() for t in db.theorems()), key=record_key)
    assert got == sorted(records, key=record_key)
    assert db.get_repository(SAMPLE_URL) == info
    assert db.get_repository(SAMPLE_URL, SAMPLE_COMMIT) == info
    assert db.get_repository(SAMPLE_URL, "0" * 40) is None
    assert db.get_repository("https://nowhere") is None


def test_idempotent_re_add(db: DynamicDatabase) -> None:
    first = db.add_repository(sample_dataset_path())
    before = db.stats()
    again = db.add_repository(sample_dataset_path())
    assert again == first
    assert db.stats() == before
    assert len(db.repositories()) == 1


def test_new_commit_is_a_new_version(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    old = db.add_repository(make_dataset(replicate(records, "https://x/r", "1" * 40)))
    new = db.add_repository(make_dataset(replicate(records[:50], "https://x/r", "2" * 40)))
    assert old.id != new.id and len(db.repositories()) == 2
    assert db.count_theorems(old) == 100 and db.count_theorems(new) == 50
    assert db.count_theorems("https://x/r") == 50  # a bare url means the latest version


def test_replace(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    src = make_dataset(replicate(records, "https://x/r", "1" * 40))
    db.add_repository(src)
    smaller = make_dataset(replicate(records[:10], "https://x/r", "1" * 40))
    info = db.add_repository(smaller, replace=True)
    assert info.total_theorems == 10
    assert db.stats()["theorems"] == 10 and len(db.repositories()) == 1


def test_delete_repository(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    a = db.add_repository(make_dataset(replicate(records, "https://x/a", "1" * 40)))
    db.add_repository(make_dataset(replicate(records, "https://x/b", "1" * 40)))
    thm = next(db.theorems(a, status="proven"))
    db.record_proof(thm, ["simp"])
    db.delete_repository(a.url, a.commit)
    assert [r.url for r in db.repositories()] == ["https://x/b"]
    stats = db.stats()
    assert stats["theorems"] == 100 and stats["tactics"] == 158 and stats["premise_uses"] == 262
    assert stats["proofs"] == 0 and stats["premises"] == 185
    leftover = db.connection.execute(
        "SELECT COUNT(*) FROM files WHERE repository_id = ?", (a.id,)
    ).fetchone()[0]
    assert leftover == 0
    with pytest.raises(RecordNotFoundError):
        db.delete_repository(a.url, a.commit)
    assert db.connection.execute("PRAGMA foreign_key_check").fetchall() == []


def test_add_traced_repository_object(
    db: DynamicDatabase, records: list[dict], sample_corpus
) -> None:
    theorems = [Theorem.from_dict(r) for r in records]
    repo = Repository(
        url=SAMPLE_URL,
        commit=SAMPLE_COMMIT,
        lean_version="v4.9.0",
        theorems=theorems,
        premise_files=sample_corpus,
        traced_files=["A.lean", "B.lean"],
        metadata={"lean_dojo_version": "2.0.0"},
    )
    info = db.add_repository(repo)
    assert info.lean_version == "v4.9.0" and info.lean_dojo_version == "2.0.0"
    assert info.num_files_traced == 2 and info.total_theorems == 100
    back = db.load_repository(info)
    assert [t.to_dict() for t in back.theorems] == records
    assert [f.to_dict() for f in back.premise_files] == [f.to_dict() for f in sample_corpus]
    assert back.traced_files == ["A.lean", "B.lean"]
    assert back.url == SAMPLE_URL and back.lean_version == "v4.9.0"


def test_theorem_filters(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    a = db.add_repository(make_dataset(replicate(records, "https://x/a", "1" * 40)))
    b = db.add_repository(make_dataset(replicate(records[:30], "https://x/b", "1" * 40)))
    assert sum(1 for _ in db.theorems()) == 130
    assert sum(1 for _ in db.theorems(a)) == 100
    assert sum(1 for _ in db.theorems([a, b])) == 130
    assert sum(1 for _ in db.theorems(("https://x/b", "1" * 40))) == 30
    assert sum(1 for _ in db.theorems(b.id)) == 30
    name = records[5]["full_name"]
    hits = list(db.theorems(full_name=name))
    assert len(hits) == 2 and {t.url for t in hits} == {"https://x/a", "https://x/b"}
    path = records[5]["file_path"]
    assert all(t.file_path == path for t in db.theorems(a, file_path=path))
    light = next(db.theorems(a, full_name=name, with_tactics=False))
    assert light.traced_tactics == []
    assert db.count_theorems(status="proven") == 130
    assert db.count_theorems(status="sorry") == 0
    with pytest.raises(ValueError):
        list(db.theorems(status="nonsense"))
    with pytest.raises(RecordNotFoundError):
        list(db.theorems("https://x/none"))
    stored = next(db.stored_theorems(a, full_name=name))
    assert db.get_theorem(stored.theorem).id == stored.id
    assert db.get_theorem(stored.id).theorem == stored.theorem
    with pytest.raises(RecordNotFoundError):
        db.get_theorem(Theorem.from_dict(dict(records[5], commit="f" * 40)))


def test_iteration_survives_writes(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    db.add_repository(make_dataset(replicate(records, "https://x/a", "1" * 40, copies=6)))
    seen = 0
    for stored in db.stored_theorems(status="proven"):
        seen += 1
        if seen % 50 == 0:
            db.record_proof(stored, ["rfl"], backend="replay")
    assert seen == 600


def test_repository_info_errors(db: DynamicDatabase) -> None:
    with pytest.raises(TypeError):
        db.add_repository(42)  # type: ignore[arg-type]
    with pytest.raises(LeanDojoError):
        db.add_repository(Path("/nonexistent/dataset"))
    with pytest.raises(RecordNotFoundError):
        db.resolve_repositories([999])


def test_metadata_and_dates(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    meta = {
        "from_repo": {"url": "https://x/a", "commit": "1" * 40},
        "lean_version": "v4.3.0",
        "leandojo_version": "2.0.0",
        "date_processed": "2024-01-02T03:04:05",
    }
    info = db.add_repository(
        make_dataset(replicate(records[:5], "https://x/a", "1" * 40), metadata=meta)
    )
    assert info.lean_version == "v4.3.0" and info.lean_dojo_version == "2.0.0"
    assert info.date_processed == "2024-01-02T03:04:05"
    assert json.loads(json.dumps(info.metadata)) == meta


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_add_repositories_in_bulk(
    db: DynamicDatabase, records: list[dict], make_dataset, sample_corpus, workers: int
) -> None:
    dirs = [
        make_dataset(replicate(records, f"https://x/r{k}", f"{k}" * 40, tag=f"r{k}"))
        for k in range(4)
    ]
    repo = Repository(
        url="https://x/obj",
        commit="9" * 40,
        theorems=[Theorem.from_dict(r) for r in replicate(records[:10], "https://x/obj", "9" * 40)],
    )
    infos = db.add_repositories([dirs[0], dirs[1], repo, dirs[2], dirs[3]], workers=workers)
    assert [i.url for i in infos] == [
        "https://x/r0",
        "https://x/r1",
        "https://x/obj",
        "https://x/r2",
        "https://x/r3",
    ]
    assert [i.total_theorems for i in infos] == [100, 100, 10, 100, 100]
    before = db.stats()
    assert db.add_repositories(dirs, workers=workers) == [infos[0], infos[1], infos[3], infos[4]]
    assert db.stats() == before
    # Same rows as adding one by one.
    with DynamicDatabase(db.path.with_name("serial.sqlite")) as serial:
        for d in dirs:
            serial.add_repository(d)
        assert [t.to_dict() for t in serial.theorems()] == [
            t.to_dict() for t in db.theorems([i for i in infos if i.url != "https://x/obj"])
        ]


def test_add_repositories_stops_at_bad_input(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    good = make_dataset(replicate(records, "https://x/good", "1" * 40))
    bad = make_dataset(replicate(records, "https://x/bad", "2" * 40))
    data = json.loads((bad / "random" / "test.json").read_text())
    data[1]["traced_tactics"] = "oops"
    (bad / "random" / "test.json").write_text(json.dumps(data))
    later = make_dataset(replicate(records, "https://x/later", "3" * 40))
    from lean_dojo_v2.errors import DataFormatError

    with pytest.raises(DataFormatError) as info:
        db.add_repositories([good, bad, later], workers=1)
    assert info.value.file.endswith("random/test.json") and info.value.record == 1
    assert info.value.field == "traced_tactics"
    assert [r.url for r in db.repositories()] == ["https://x/good"]


def test_v1_database_migrates_to_v2(tmp_path: Path) -> None:
    """A database written by schema v1 (``state_before`` always stored, NOT NULL) opens, keeps its
    theorems, and takes new repositories (which store repeated states as NULL)."""
    path = tmp_path / "db.sqlite"
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
        expected = [t.to_dict() for t in db.theorems()]
    # Turn it back into the v1 shape, with every state_before spelled out.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        """
        BEGIN;
        CREATE TABLE tactics_v1 (
            theorem_id INTEGER NOT NULL REFERENCES theorems(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            tactic TEXT NOT NULL,
            annotated_tactic TEXT,
            state_before TEXT NOT NULL,
            state_after TEXT NOT NULL,
            PRIMARY KEY (theorem_id, idx)
        ) WITHOUT ROWID;
        INSERT INTO tactics_v1
            SELECT theorem_id, idx, tactic, annotated_tactic,
                   COALESCE(state_before, LAG(state_after) OVER (
                       PARTITION BY theorem_id ORDER BY idx)),
                   state_after
            FROM tactics;
        DROP TABLE tactics;
        ALTER TABLE tactics_v1 RENAME TO tactics;
        UPDATE db_meta SET value = '1' WHERE key = 'schema_version';
        COMMIT;
        """
    )
    assert conn.execute("SELECT COUNT(*) FROM tactics WHERE state_before IS NULL").fetchone() == (
        0,
    )
    conn.close()
    with DynamicDatabase(path) as db:
        assert db.schema_version == SCHEMA_VERSION == 2
        assert [t.to_dict() for t in db.theorems()] == expected
        info = db.add_repository(sample_dataset_path(), url="https://x/again", commit="a" * 40)
        assert info.total_theorems == len(expected)
        nulls = db.connection.execute(
            "SELECT COUNT(*) FROM tactics WHERE state_before IS NULL"
        ).fetchone()[0]
        assert nulls > 0
