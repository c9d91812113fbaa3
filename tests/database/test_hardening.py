"""The database layer: nothing lost, nothing created or modified by reading, typed one-line
errors, the report of ``db add`` from its own transaction, incomplete datasets refused, worker
errors whole, exported premises accessible."""

from __future__ import annotations

import json
import logging
import pickle
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from lean_dojo_v2.data import Corpus, DatasetDir, SplitSpec, sample_dataset_path
from lean_dojo_v2.data.dataset import DatasetDir as _DatasetDir
from lean_dojo_v2.database import (
    CorruptDatabaseError,
    DatabaseError,
    DatabaseNotFoundError,
    DatabasePermissionError,
    DynamicDatabase,
    RepositoryExistsError,
)
from lean_dojo_v2.database import connection as connection_module
from lean_dojo_v2.errors import (
    DataFormatError,
    IncompleteDatasetError,
    LeanDojoError,
    OutputExistsError,
)

from .conftest import replicate
from .test_cli import run

SIDE_FILES = ("-wal", "-shm", "-journal")


def _sample_db(path: Path) -> Path:
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
    return path


def _state(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def _side_files(path: Path) -> list[str]:
    return [s for s in SIDE_FILES if Path(f"{path}{s}").exists()]


# -- 1. db export never deletes what is not ours --------------------------------------------------


def test_export_refuses_foreign_output_dir(tmp_path: Path) -> None:
    db = str(_sample_db(tmp_path / "db.sqlite"))
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("x")
    with pytest.raises(OutputExistsError, match="--force"):
        run("export", str(precious), "--db", db)
    assert (precious / "thesis.tex").read_text() == "x"
    with DynamicDatabase(db) as opened, pytest.raises(OutputExistsError):
        opened.export_merged_data(None, precious)
    assert sorted(p.name for p in precious.iterdir()) == ["thesis.tex"]
    # Nothing is left beside it either (no staging directory).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite", "precious"]
    # --force replaces it; the result is ours, so a second export needs no --force.
    assert run("export", str(precious), "--db", db, "--force") == 0
    assert not (precious / "thesis.tex").exists()
    assert len(list(DatasetDir(precious).all_theorems())) == 100
    assert run("export", str(precious), "--db", db) == 0


def test_export_refuses_a_file_as_output(tmp_path: Path) -> None:
    db = str(_sample_db(tmp_path / "db.sqlite"))
    target = tmp_path / "notes.txt"
    target.write_text("keep")
    with pytest.raises(OutputExistsError):
        run("export", str(target), "--db", db, "--force")
    assert target.read_text() == "keep"


# -- 2. a foreign SQLite file is never modified -----------------------------------------------------


def test_foreign_sqlite_file_is_not_modified(tmp_path: Path) -> None:
    foreign = tmp_path / "other.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (x)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    before = _state(foreign)
    for argv in (("stats",), ("list",), ("curriculum",), ("add", str(sample_dataset_path()))):
        with pytest.raises(DatabaseError, match="not a lean-dojo-v2 database"):
            run(*argv, "--db", str(foreign))
        assert _state(foreign) == before, argv
        assert _side_files(foreign) == []
    with pytest.raises(DatabaseError, match="not a lean-dojo-v2 database"):
        DynamicDatabase(foreign)
    assert _state(foreign) == before
    # Still a rollback-journal database (WAL would have changed the header).
    assert foreign.read_bytes()[18:20] == b"\x01\x01"


# -- 3. reading never creates; read-only databases can be read -------------------------------------


@pytest.mark.parametrize(
    "argv",
    [("stats",), ("list",), ("curriculum",), ("export", "OUT"), ("export-json", "OUT.json")],
)
def test_readonly_commands_do_not_create_databases(tmp_path: Path, argv: tuple[str, ...]) -> None:
    argv = tuple(str(tmp_path / a) if a.startswith("OUT") else a for a in argv)
    typo = tmp_path / "typo" / "x.sqlite"
    with pytest.raises(DatabaseNotFoundError, match="db add"):
        run(*argv, "--db", str(typo))
    assert not typo.parent.exists()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(DatabaseNotFoundError, match="empty file"):
        run(*argv, "--db", str(empty))
    assert empty.stat().st_size == 0 and _side_files(empty) == []
    assert not (tmp_path / "OUT").exists() and not (tmp_path / "OUT.json").exists()


def test_delete_does_not_create_a_database(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError):
        run("delete", "https://x/y", "0" * 40, "--db", str(tmp_path / "none.sqlite"))
    assert list(tmp_path.iterdir()) == []


def test_readonly_api_refuses_missing_and_writes(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError):
        DynamicDatabase.open_readonly(tmp_path / "missing.sqlite")
    with pytest.raises(DatabaseNotFoundError):
        DynamicDatabase(tmp_path / "missing.sqlite", create=False)
    assert list(tmp_path.iterdir()) == []
    path = _sample_db(tmp_path / "db.sqlite")
    with DynamicDatabase.open_readonly(path) as db:
        assert db.readonly and db.stats()["theorems"] == 100
        with pytest.raises(DatabaseError, match="read-only"):
            db.add_repository(sample_dataset_path(), replace=True)
        with pytest.raises(sqlite3.DatabaseError):  # SQLite itself refuses, not only our check
            db.connection.execute("DELETE FROM theorems")


def test_readonly_open_uses_mode_ro_and_leaves_the_file_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sample_db(tmp_path / "db.sqlite")
    before = _state(path)
    uris: list[str] = []
    real_connect = sqlite3.connect

    def spy(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        uris.append(str(database))
        return real_connect(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(connection_module.sqlite3, "connect", spy)
    for argv in (("stats",), ("list",), ("curriculum",), ("export", str(tmp_path / "out"))):
        assert run(*argv, "--db", str(path)) == 0
    assert len(uris) == 4
    assert all(u.startswith("file:") and "mode=ro" in u for u in uris), uris
    assert _state(path) == before


@pytest.mark.parametrize("what", ["file", "directory"])
def test_readonly_database_is_readable_without_side_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _sample_db(folder / "db.sqlite")
    assert _side_files(path) == []  # a clean close checkpoints and removes them
    before = _state(path)
    uris: list[str] = []
    real_connect = sqlite3.connect
    monkeypatch.setattr(
        connection_module.sqlite3,
        "connect",
        lambda database, *a, **k: uris.append(str(database)) or real_connect(database, *a, **k),
    )
    target = path if what == "file" else folder
    mode = target.stat().st_mode
    target.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        capsys.readouterr()
        assert run("stats", "--db", str(path), "--json") == 0
        assert json.loads(capsys.readouterr().out)["theorems"] == 100
        assert run("export", str(tmp_path / "out"), "--db", str(path)) == 0
        assert sorted(p.name for p in folder.iterdir()) == ["db.sqlite"]  # no -wal/-shm/journal
    finally:
        target.chmod(mode)
    assert uris and all("mode=ro" in u and "immutable=1" in u for u in uris), uris
    assert _state(path) == before


def test_readonly_open_in_readonly_directory_falls_back_to_immutable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a non-root user meets: the directory looks writable to the check but SQLite cannot
    # create the -shm file a WAL database needs.
    path = _sample_db(tmp_path / "db.sqlite")
    real_connect = sqlite3.connect
    uris: list[str] = []

    def connect(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        uris.append(str(database))
        if "immutable=1" not in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(connection_module.sqlite3, "connect", connect)
    with DynamicDatabase.open_readonly(path) as db:
        assert db.stats()["theorems"] == 100
    assert len(uris) == 2 and "immutable=1" in uris[1]


# -- 4. concurrent db add: the report comes from the transaction -----------------------------------


def test_concurrent_add_reports_already_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    DynamicDatabase(db).close()
    real_metadata = _DatasetDir.metadata
    raced = []

    def metadata(self: _DatasetDir) -> dict:
        if not raced:  # another process adds the same repository while this run reads the dataset
            raced.append(1)
            with DynamicDatabase(db) as other:
                other.add_repository(sample_dataset_path())
        return real_metadata(self)

    monkeypatch.setattr(_DatasetDir, "metadata", metadata)
    assert run("add", str(sample_dataset_path()), "--db", str(db), "--json") == 0
    assert raced and json.loads(capsys.readouterr().out)["added"] is False
    with DynamicDatabase(db) as opened:
        assert opened.stats()["repositories"] == 1


def test_add_exist_ok_false_raises_with_the_stored_version(db: DynamicDatabase) -> None:
    info = db.add_repository(sample_dataset_path(), exist_ok=False)
    with pytest.raises(RepositoryExistsError) as exc:
        db.add_repository(sample_dataset_path(), exist_ok=False)
    assert exc.value.repository == info
    again = pickle.loads(pickle.dumps(exc.value))
    assert again.repository == info and str(again) == str(exc.value)
    assert db.add_repository(sample_dataset_path()) == info  # the default stays a no-op


# -- 5. typed one-line errors -----------------------------------------------------------------------


def test_export_json_to_a_directory_is_a_typed_error(tmp_path: Path) -> None:
    db = str(_sample_db(tmp_path / "db.sqlite"))
    (tmp_path / "dir").mkdir()
    with pytest.raises(OutputExistsError, match="is a directory"):
        run("export-json", str(tmp_path / "dir"), "--db", db)


def test_corrupt_database_page_is_a_typed_error(tmp_path: Path) -> None:
    path = _sample_db(tmp_path / "db.sqlite")
    data = bytearray(path.read_bytes())
    page = 16384
    assert len(data) > 4 * page
    for i in range(2 * page, len(data)):  # keep the header and schema pages, ruin the rest
        data[i] = 0xA5
    path.write_bytes(bytes(data))
    for argv in (("stats",), ("list",), ("export", str(tmp_path / "out"))):
        with pytest.raises(CorruptDatabaseError, match="corrupt"):
            run(*argv, "--db", str(path))
    with pytest.raises(CorruptDatabaseError):  # on opening or on the first read
        with DynamicDatabase.open_readonly(path) as db:
            db.stats()


def test_unwritable_db_directory_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root, where chmod does not stop writes: raise what a user meets.
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(DatabasePermissionError, match="directory this user may write"):
        run("add", str(sample_dataset_path()), "--db", str(tmp_path / "locked" / "db.sqlite"))
    monkeypatch.undo()

    def cannot_open(*args: object, **kwargs: object) -> sqlite3.Connection:
        exc = sqlite3.OperationalError("unable to open database file")
        exc.sqlite_errorcode = 14  # SQLITE_CANTOPEN
        raise exc

    monkeypatch.setattr(connection_module.sqlite3, "connect", cannot_open)
    with pytest.raises(DatabasePermissionError, match="may read and write"):
        run("add", str(sample_dataset_path()), "--db", str(tmp_path / "db.sqlite"))
    monkeypatch.undo()
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(DatabaseError):
        run("add", str(sample_dataset_path()), "--db", str(afile / "db.sqlite"))


def _dataset(tmp_path: Path, name: str = "ds") -> Path:
    dst = tmp_path / name
    shutil.copytree(sample_dataset_path(), dst)
    return dst


def test_add_names_non_utf8_corpus_and_split_files(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    src = _dataset(tmp_path)
    lines = (src / "corpus.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"imports"', b'"imp\xff\xfeorts"')
    (src / "corpus.jsonl").write_bytes(b"".join(lines))
    with pytest.raises(DataFormatError, match="not UTF-8") as exc:
        run("add", str(src), "--db", db)
    assert "utf-16" not in str(exc.value)
    assert exc.value.file.endswith("corpus.jsonl") and exc.value.record == 3

    src2 = _dataset(tmp_path, "ds2")
    raw = (src2 / "random" / "val.json").read_bytes()
    (src2 / "random" / "val.json").write_bytes(raw.replace(b'"url"', b'"u\xffrl"', 1))
    with pytest.raises(DataFormatError, match="not UTF-8") as exc:
        run("add", str(src2), "--db", db)
    assert exc.value.file.endswith("val.json")
    with DynamicDatabase(db) as opened:
        assert opened.stats()["theorems"] == 0


def test_add_refuses_a_corpus_that_is_a_directory(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    src = _dataset(tmp_path)
    (src / "corpus.jsonl").unlink()
    (src / "corpus.jsonl").mkdir()
    with pytest.raises(IncompleteDatasetError, match="not a file"):
        run("add", str(src), "--db", db)
    with pytest.raises(DataFormatError, match="not a file"):
        run("add", str(src), "--db", db, "--partial")


# -- 6. incomplete datasets ------------------------------------------------------------------------


@pytest.mark.parametrize("part", ["random/val.json", "corpus.jsonl"])
def test_add_refuses_incomplete_dataset(
    tmp_path: Path, part: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    src = _dataset(tmp_path)
    (src / part).unlink()
    with pytest.raises(IncompleteDatasetError, match=part) as exc:
        run("add", str(src), "--db", db)
    assert exc.value.missing == [part] and "--partial" in str(exc.value)
    with DynamicDatabase(db) as opened:
        assert opened.stats()["repositories"] == 0
        with pytest.raises(IncompleteDatasetError):
            opened.add_repository(src)
        info = opened.add_repository(src, partial=True)
        assert info.total_theorems == (100 if part == "corpus.jsonl" else 90)
    assert run("add", str(src), "--db", str(tmp_path / "db2.sqlite"), "--partial") == 0


def test_add_warns_about_theorem_files_missing_from_corpus(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _dataset(tmp_path)
    lines = (src / "corpus.jsonl").read_text().splitlines()
    theorem_files = {t.file_path for t in DatasetDir(src).all_theorems()}
    dropped = [ln for ln in lines if json.loads(ln)["path"] in theorem_files]
    assert dropped
    victim = json.loads(dropped[-1])["path"]
    kept = [ln for ln in lines if json.loads(ln)["path"] != victim]
    kept = [  # nothing may import the removed file
        ln for ln in kept if victim not in json.loads(ln)["imports"]
    ]
    (src / "corpus.jsonl").write_text("\n".join(kept) + "\n")
    db = str(tmp_path / "db.sqlite")
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.database"):
        assert run("add", str(src), "--db", db) == 0
    err = capsys.readouterr().err
    assert "not in corpus.jsonl" in err and victim in err
    assert any(victim in r.getMessage() for r in caplog.records)
    with DynamicDatabase(db) as opened:
        assert victim in opened.theorem_files_missing_from_corpus(opened.repositories()[0])


# -- 7. worker errors come back whole ----------------------------------------------------------------


def test_worker_errors_keep_their_fields(tmp_path: Path, records: list[dict], make_dataset) -> None:
    err = DataFormatError("bad", file="f.json", record=3, field="start")
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.record, again.field, str(again)) == ("f.json", 3, "start", str(err))
    assert type(again) is DataFormatError
    good = make_dataset(replicate(records, "https://x/a", "1" * 40))
    bad = make_dataset(replicate(records, "https://x/b", "2" * 40))
    data = json.loads((bad / "random" / "train.json").read_text())
    del data[5]["end"]
    (bad / "random" / "train.json").write_text(json.dumps(data))
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        with pytest.raises(DataFormatError) as exc:
            db.add_repositories([good, bad], workers=1)
        assert type(exc.value) is DataFormatError
        assert exc.value.file.endswith("train.json")
        assert (exc.value.record, exc.value.field) == (5, "end")
        assert [r.url for r in db.repositories()] == ["https://x/a"]


def test_one_ingest_path_for_records_and_theorems(
    tmp_path: Path, records: list[dict], make_dataset
) -> None:
    """Raw split-file records and Theorem objects give the same rows."""
    from lean_dojo_v2.data import Repository, Theorem

    recs = replicate(records, "https://x/r", "1" * 40)
    with DynamicDatabase(tmp_path / "a.sqlite") as a, DynamicDatabase(tmp_path / "b.sqlite") as b:
        a.add_repository(make_dataset(recs, corpus=[], traced=[]))
        b.add_repository(
            Repository(
                url="https://x/r", commit="1" * 40, theorems=[Theorem.from_dict(r) for r in recs]
            )
        )
        for table, order in (
            ("theorems", "id"),
            ("tactics", "theorem_id, idx"),
            ("premise_uses", "theorem_id, tactic_idx, idx"),
            ("premise_refs", "id"),
        ):
            rows = [
                db.connection.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
                for db in (a, b)
            ]
            # Theorems are queued in split-file order by one and record order by the other.
            key = (lambda r: r[3:]) if table == "theorems" else (lambda r: r)
            if table in ("theorems", "premise_refs"):
                assert sorted(map(key, rows[0])) == sorted(map(key, rows[1])), table
            else:
                assert len(rows[0]) == len(rows[1]), table


# -- exported datasets: every recorded premise is accessible where it is used -------------------------


def _closure(imports: dict[str, list[str]], path: str) -> set[str]:
    seen: set[str] = set()
    stack = list(imports.get(path, []))
    while stack:
        p = stack.pop()
        if p not in seen:
            seen.add(p)
            stack.extend(imports.get(p, []))
    return seen


def test_exported_premises_are_accessible(
    tmp_path: Path, records: list[dict], make_dataset
) -> None:
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        db.add_repository(sample_dataset_path())
        outs = [tmp_path / "all"]
        db.export_merged_data(None, outs[0])
        # A newer version of the same files: the merged export takes theorems from both.
        other = make_dataset(
            replicate(records[:30], "https://x/other", "1" * 40),
            metadata={
                "from_repo": {"url": "https://x/other", "commit": "1" * 40},
                "date_processed": "2999-01-01T00:00:00",
            },
        )
        db.add_repository(other)
        outs.append(tmp_path / "merged")
        db.export_merged_data(None, outs[-1], spec=SplitSpec(5, 5))
    for out in outs:
        lines = [json.loads(ln) for ln in (out / "corpus.jsonl").read_text().splitlines()]
        imports = {d["path"]: d["imports"] for d in lines}
        defined = {
            d["path"]: {(p["full_name"], tuple(p["start"])) for p in d["premises"]} for d in lines
        }
        corpus = Corpus.from_jsonl(out / "corpus.jsonl")
        problems = []
        for strategy in ("random", "novel_premises"):
            for thm in DatasetDir(out).all_theorems(strategy):
                # Independently: the theorem's file and everything it imports, transitively.
                reach = _closure(imports, thm.file_path) | {thm.file_path}
                names_here = {name for p in reach if p in defined for name, _ in defined[p]}
                accessible = (
                    {p.full_name for p in corpus.accessible_premises(thm.file_path)}
                    if thm.file_path in imports
                    else set()
                )
                for tac in thm.traced_tactics:
                    for a in tac.annotations:
                        if a.def_path not in imports:
                            continue  # defined outside the corpus (e.g. Lean core): not a premise
                        if a.full_name not in names_here or a.full_name not in accessible:
                            problems.append((str(out.name), thm.full_name, a.full_name))
        assert not problems, f"{len(problems)} inaccessible premises, e.g. {problems[:3]}"


def test_lean_dojo_errors_are_what_the_cli_prints() -> None:
    for cls in (
        CorruptDatabaseError,
        DatabaseNotFoundError,
        DatabasePermissionError,
        RepositoryExistsError,
    ):
        assert issubclass(cls, LeanDojoError)
    assert issubclass(DatabaseNotFoundError, FileNotFoundError)
    assert issubclass(DatabasePermissionError, PermissionError)
