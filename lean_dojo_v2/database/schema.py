"""The SQLite schema of the dynamic database, its version and its migrations.

The schema version is kept in the ``db_meta`` table (key ``schema_version``). Opening a database runs
every migration from its version up to :data:`SCHEMA_VERSION`, each in the same transaction as the
version bump, so a crash during a migration leaves the old version intact. A database whose version
is newer than this library's is refused rather than touched.

Design notes:

- Identity of a repository version: ``(url, commit_hash)``. Identity of a theorem: its repository
  version, file, full name and start position (``UNIQUE (repository_id, file_id, full_name,
  start_line, start_col)``; a file row belongs to one repository version). The index is led by the
  repository, so inserting a repository appends to it, and it serves the cascade on delete.
- Everything needed to rebuild a LeanDojo theorem record exactly is stored: whether the record had a
  ``theorem_statement`` key, unknown keys (``extra``, JSON), the record's own url/commit where they
  differ from the repository's, the annotated tactic text where it differs from the tactic.
  A tactic's ``state_before`` is NULL when it is the previous tactic's ``state_after`` (three
  times in four in LeanDojo Benchmark 4), which saves a quarter of the text. A tactic is identified
  by its theorem and index, a premise use by its tactic and index: both
  tables are clustered on that key (``WITHOUT ROWID``), so a theorem's tactics and uses are
  contiguous on disk, and inserting a repository appends.
- A premise use is a tactic's n-th provenance entry; the provenance itself (name, defining file,
  position) is stored once per repository in ``premise_refs``. ``theorems.file_id`` and
  ``premise_uses.ref_id`` carry no foreign key of their own: their targets go with the same
  repository (``ON DELETE CASCADE``), and each declared key would need another index on the hot
  insert path. Rows that are almost always empty (``url``, ``extra``, ``sorry_source``…) are only
  written when set: adding a repository is dominated by the number of values bound.
- Every other child table has an index led by its parent key, so ``ON DELETE CASCADE`` is cheap.
- Queries use portable SQL only (joins, window functions, ``IN`` sub-queries); SQLite specifics are
  confined to the connection pragmas in :mod:`.connection` (WAL, 16 KiB pages) and the
  ``WITHOUT ROWID`` clustering of tactics and premise uses.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .errors import DatabaseError

SCHEMA_VERSION = 2

READABLE_FROM = 1
"""The oldest schema version this library reads without migrating (opened read-only): version 2
only let ``tactics.state_before`` be NULL, which the queries handle either way."""

SORRY_STATUSES = ("proven", "sorry_unproved", "sorry_proved")


def _tactics_table(name: str, state_before: str) -> str:
    return f"""CREATE TABLE {name} (
    theorem_id INTEGER NOT NULL REFERENCES theorems(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    tactic TEXT NOT NULL,
    annotated_tactic TEXT,
    {state_before},
    state_after TEXT NOT NULL,
    PRIMARY KEY (theorem_id, idx)
) WITHOUT ROWID"""


_V1 = """
CREATE TABLE db_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE repositories (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    name TEXT NOT NULL,
    commit_hash TEXT NOT NULL,
    lean_version TEXT,
    lean_dojo_version TEXT,
    date_processed TEXT NOT NULL,
    processed_at REAL NOT NULL,
    metadata TEXT NOT NULL,
    pr_url TEXT,
    added_at TEXT NOT NULL,
    UNIQUE (url, commit_hash)
);

CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    repository_id INTEGER NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    traced_ord INTEGER,
    UNIQUE (repository_id, path)
);

CREATE TABLE premise_files (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    repository_id INTEGER NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    corpus_ord INTEGER NOT NULL,
    imports TEXT NOT NULL
);
CREATE INDEX premise_files_repository ON premise_files(repository_id, corpus_ord);

CREATE TABLE premises (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES premise_files(file_id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    full_name TEXT NOT NULL,
    code TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    end_col INTEGER NOT NULL,
    kind TEXT NOT NULL,
    UNIQUE (file_id, idx)
);
CREATE INDEX premises_name ON premises(full_name);

CREATE TABLE theorems (
    id INTEGER PRIMARY KEY,
    repository_id INTEGER NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    file_id INTEGER NOT NULL,
    full_name TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    end_col INTEGER NOT NULL,
    num_tactics INTEGER NOT NULL,
    sorry_status TEXT NOT NULL DEFAULT 'proven'
        CHECK (sorry_status IN ('proven', 'sorry_unproved', 'sorry_proved')),
    sorry_source TEXT,
    proof_steps INTEGER,
    url TEXT,
    commit_hash TEXT,
    theorem_statement TEXT,
    has_statement INTEGER NOT NULL DEFAULT 0,
    extra TEXT,
    upstream_difficulty TEXT,
    UNIQUE (repository_id, file_id, full_name, start_line, start_col)
);

{tactics_v1}

CREATE TABLE premise_refs (
    id INTEGER PRIMARY KEY,
    repository_id INTEGER NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    full_name TEXT NOT NULL,
    def_path TEXT NOT NULL,
    def_line INTEGER NOT NULL,
    def_col INTEGER NOT NULL,
    def_end_line INTEGER NOT NULL,
    def_end_col INTEGER NOT NULL
);
CREATE INDEX premise_refs_repository ON premise_refs(repository_id);

CREATE TABLE premise_uses (
    theorem_id INTEGER NOT NULL REFERENCES theorems(id) ON DELETE CASCADE,
    tactic_idx INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    ref_id INTEGER NOT NULL,
    PRIMARY KEY (theorem_id, tactic_idx, idx)
) WITHOUT ROWID;

CREATE TABLE training_runs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    config TEXT NOT NULL,
    metrics TEXT NOT NULL,
    checkpoint TEXT
);

CREATE TABLE training_run_repositories (
    run_id INTEGER NOT NULL REFERENCES training_runs(id) ON DELETE CASCADE,
    repository_id INTEGER NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (run_id, repository_id)
);
CREATE INDEX training_run_repositories_repository ON training_run_repositories(repository_id);

CREATE TABLE proofs (
    id INTEGER PRIMARY KEY,
    theorem_id INTEGER NOT NULL REFERENCES theorems(id) ON DELETE CASCADE,
    tactics TEXT NOT NULL,
    proof_text TEXT NOT NULL,
    backend TEXT NOT NULL,
    verified INTEGER NOT NULL,
    time_s REAL,
    model TEXT,
    training_run_id INTEGER REFERENCES training_runs(id) ON DELETE SET NULL,
    found_at TEXT NOT NULL
);
CREATE INDEX proofs_theorem ON proofs(theorem_id);
CREATE INDEX proofs_training_run ON proofs(training_run_id);
""".replace("{tactics_v1}", _tactics_table("tactics", "state_before TEXT NOT NULL") + ";")

# v2: ``tactics.state_before`` may be NULL (meaning: the previous tactic's ``state_after``). SQLite
# cannot drop a NOT NULL constraint in place, so the table is rebuilt; existing rows keep their text.
_V2 = f"""
{_tactics_table("tactics_v2", "state_before TEXT")};
INSERT INTO tactics_v2 (theorem_id, idx, tactic, annotated_tactic, state_before, state_after)
    SELECT theorem_id, idx, tactic, annotated_tactic, state_before, state_after FROM tactics;
DROP TABLE tactics;
ALTER TABLE tactics_v2 RENAME TO tactics
"""

Migration = Callable[[sqlite3.Connection], None]


def _script(sql: str) -> Migration:
    statements = [s.strip() for s in sql.split(";") if s.strip()]

    def run(conn: sqlite3.Connection) -> None:
        # One statement at a time: ``executescript`` would commit the open transaction.
        for statement in statements:
            conn.execute(statement)

    return run


# MIGRATIONS[v] takes a database from version v - 1 to version v (version 0: an empty file).
MIGRATIONS: dict[int, Migration] = {1: _script(_V1), 2: _script(_V2)}


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def current_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database: 0 for an empty one."""
    if not _has_table(conn, "db_meta"):
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        if tables:
            raise DatabaseError(
                "this SQLite file is not a lean-dojo-v2 database (it has tables "
                f"{sorted(t[0] for t in tables)} but no db_meta); refusing to modify it"
            )
        return 0
    row = conn.execute("SELECT value FROM db_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise DatabaseError("the database has no schema_version in db_meta")
    try:
        return int(row[0])
    except ValueError:
        raise DatabaseError(f"unreadable schema_version {row[0]!r} in db_meta") from None


def migrate(conn: sqlite3.Connection, target: int | None = None) -> int:
    """Bring the schema up to ``target`` (default :data:`SCHEMA_VERSION`); returns the version
    found. Each step runs in its own write transaction together with its version bump; an
    up-to-date database is only read."""
    target = max(MIGRATIONS) if target is None else target
    # A plain read: opening an up-to-date database never waits for another process's writer.
    found = current_version(conn)
    if found > target:
        raise DatabaseError(
            f"the database has schema version {found}, newer than this library's ({target}); "
            "upgrade lean-dojo-v2 to open it"
        )
    for version in range(found + 1, target + 1):
        if version not in MIGRATIONS:
            raise DatabaseError(f"no migration to schema version {version}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have migrated meanwhile.
            if current_version(conn) >= version:
                conn.execute("COMMIT")
                continue
            MIGRATIONS[version](conn)
            conn.execute(
                "INSERT INTO db_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return found
