"""Opening the database file, and the transactions every other part of the database runs in.

Three ways to open (see :class:`DatabaseConnection`):

- read-write, creating the file when absent (``create=True``, the default; ``db add``,
  ``db import-json``);
- read-write, an existing database only (``create=False``; ``db delete``);
- read-only (``readonly=True``; ``db stats``, ``db list``, ``db curriculum``, ``db export``,
  ``db export-json``): an existing database only, opened with SQLite's ``mode=ro`` URI, so nothing
  can be written through it. Where nobody can write the file (it or its directory has no write
  permission) and no write-ahead log is pending, it is opened ``immutable=1`` as well: SQLite then
  creates no ``-wal``/``-shm`` file beside it, which a read-only directory would refuse.

Whatever the mode, the file's schema is checked before any statement or pragma that could write:
a SQLite file of some other application is refused untouched (same bytes, same mtime).
SQLite's own errors come back as :class:`~.errors.DatabaseError` subclasses that say what to do.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..config import get_settings
from .errors import (
    CorruptDatabaseError,
    DatabaseError,
    DatabaseNotFoundError,
    DatabasePermissionError,
)
from .schema import READABLE_FROM, SCHEMA_VERSION, current_version, migrate

DEFAULT_DB_NAME = "dynamic_database.sqlite"

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_PERM = 3
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26


def default_path() -> Path:
    """``RAID_DIR/dynamic_database.sqlite``."""
    return get_settings().raid_dir / DEFAULT_DB_NAME


def typed_error(exc: sqlite3.Error, path: Path | str) -> sqlite3.Error | DatabaseError:
    """The typed error for a SQLite error on the database at ``path``; errors that are not about
    the file (constraints, SQL mistakes) come back unchanged."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return CorruptDatabaseError(
            f"{path} is not a usable SQLite database (corrupt, or not a database file: {exc}); "
            "restore it from a backup, or choose another --db"
        )
    if code in (_SQLITE_PERM, _SQLITE_CANTOPEN):
        return DatabasePermissionError(
            f"cannot open database {path} ({exc}); check that its directory exists and that "
            "this user may read and write it, or choose another --db"
        )
    if code == _SQLITE_READONLY:
        return DatabasePermissionError(
            f"cannot write database {path} ({exc}): it is opened read-only or this user may not "
            "write it or its directory"
        )
    if code in (_SQLITE_IOERR, _SQLITE_FULL):
        return DatabaseError(f"cannot read or write database {path}: {exc}; check the disk")
    return exc


@contextmanager
def typed_errors(path: Path | str) -> Iterator[None]:
    """Turn SQLite's errors about the file inside the block into :func:`typed_error`'s."""
    try:
        yield
    except sqlite3.Error as exc:
        typed = typed_error(exc, path)
        if typed is exc:
            raise
        raise typed from exc


def _no_write_permission(path: Path) -> bool:
    """Whether nobody may write ``path`` (or its directory): no write bit, or not for us."""
    for p in (path, path.parent):
        try:
            mode = p.stat().st_mode
        except OSError:
            return True
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(p, os.W_OK):
            return True
    return False


def readonly_uri(path: Path) -> str:
    """The ``file:`` URI that opens ``path`` read-only (``immutable=1`` where nobody can write it
    and no write-ahead log is pending)."""
    wal = Path(f"{path}-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    uri = path.resolve().as_uri() + "?mode=ro"
    if _no_write_permission(path) and not pending:
        uri += "&immutable=1"
    return uri


def open_connection(
    path: Path | None,
    *,
    readonly: bool = False,
    create: bool = True,
    durable: bool = False,
    timeout: float = 60.0,
    target: int = SCHEMA_VERSION,
) -> sqlite3.Connection:
    """A configured connection to the database at ``path`` (``None``: in memory), its schema
    checked (and, read-write, migrated to ``target``)."""
    if path is None:
        if readonly:
            raise DatabaseError("an in-memory database cannot be opened read-only")
        conn = sqlite3.connect(":memory:", isolation_level=None)
    else:
        conn = _connect_file(path, readonly=readonly, create=create, timeout=timeout)
    where = path if path is not None else ":memory:"
    try:
        with typed_errors(where):
            # A plain read, before anything that could write: a foreign or newer file is refused
            # untouched.
            found = current_version(conn)
            if readonly:
                _check_readable(conn, found, where, target)
            elif path is not None:
                # Takes effect only when the file is new; large pages suit rows with goal text.
                conn.execute("PRAGMA page_size = 16384")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise DatabaseError(f"cannot switch {path} to WAL mode (got {mode})")
            conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            conn.execute("PRAGMA cache_size = -32768")
            conn.execute("PRAGMA temp_store = MEMORY")
            if readonly:
                conn.execute("PRAGMA query_only = ON")
            else:
                migrate(conn, target)
    except BaseException:
        conn.close()
        raise
    return conn


def _connect_file(
    path: Path, *, readonly: bool, create: bool, timeout: float
) -> sqlite3.Connection:
    if path.is_dir():
        raise DatabaseError(f"{path} is a directory, not a database file; give a file path")
    if readonly or not create:
        if not path.exists():
            raise DatabaseNotFoundError(
                f"no database at {path}; check the path (--db), or create one with "
                "`lean-dojo-v2 db add DATASET` or `db import-json FILE`"
            )
        if path.stat().st_size == 0:
            raise DatabaseNotFoundError(
                f"{path} is an empty file, not a lean-dojo-v2 database; check the path (--db), "
                "or create a database with `lean-dojo-v2 db add DATASET`"
            )
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except PermissionError as exc:
            raise DatabasePermissionError(
                f"cannot create the directory of database {path} ({exc.strerror}); choose a "
                "--db in a directory this user may write"
            ) from exc
        except OSError as exc:
            raise DatabaseError(
                f"cannot create the directory of database {path} ({exc.strerror}); choose "
                "another --db"
            ) from exc
    try:
        if readonly:
            try:
                return sqlite3.connect(
                    readonly_uri(path), uri=True, isolation_level=None, timeout=timeout
                )
            except sqlite3.OperationalError:
                # mode=ro could not create the -shm file SQLite wants beside a WAL database
                # (read-only directory): nobody can be writing there, read the file as it is.
                if Path(f"{path}-wal").exists():
                    raise
                uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
                return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout)
        return sqlite3.connect(str(path), isolation_level=None, timeout=timeout)
    except sqlite3.Error as exc:
        typed = typed_error(exc, path)
        if typed is exc:
            typed = DatabaseError(f"cannot open database {path}: {exc}")
        raise typed from exc


def _check_readable(conn: sqlite3.Connection, version: int, where: Path | str, target: int) -> None:
    if version == 0:
        raise DatabaseNotFoundError(
            f"{where} holds no lean-dojo-v2 database (an empty SQLite file); create one with "
            "`lean-dojo-v2 db add DATASET`"
        )
    if version > target:
        migrate(conn, target)  # raises: newer than this library
    if version < READABLE_FROM:
        raise DatabaseError(
            f"{where} has schema version {version}, too old to read without migrating; open it "
            "once for writing (e.g. `lean-dojo-v2 db add`) to migrate it"
        )


class DatabaseConnection:
    """The connection of a :class:`~.dynamic_database.DynamicDatabase`: opening, closing,
    transactions and snapshots."""

    path: Path
    readonly: bool
    _conn: sqlite3.Connection

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        durable: bool = False,
        timeout: float = 60.0,
        readonly: bool = False,
        create: bool = True,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.readonly = readonly
        memory = str(path) == ":memory:"
        self._conn = open_connection(
            None if memory else self.path,
            readonly=readonly,
            create=create,
            durable=durable,
            timeout=timeout,
            target=self._schema_target(),
        )

    def _schema_target(self) -> int:
        """The schema version an opening migrates to."""
        return SCHEMA_VERSION

    @classmethod
    def open_readonly(cls, path: str | Path | None = None, *, timeout: float = 60.0):  # noqa: ANN206
        """Open an existing database for reading only (``readonly=True``): nothing is created,
        migrated or written; a missing file raises :class:`~.errors.DatabaseNotFoundError`."""
        return cls(path, timeout=timeout, readonly=True)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self):  # noqa: ANN204
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = ", readonly=True" if self.readonly else ""
        return f"{type(self).__name__}({str(self.path)!r}{mode})"

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for read-only queries of your own."""
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): all of it commits, or none of it. The body
        may end it early with ``ROLLBACK``."""
        conn = self._conn
        if self.readonly:
            raise DatabaseError(
                f"{self.path} is opened read-only; open it with readonly=False to change it"
            )
        if conn.in_transaction:
            raise DatabaseError("a transaction is already open on this connection")
        with typed_errors(self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            else:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same state, whatever other writers do."""
        conn = self._conn
        if conn.in_transaction:
            yield conn
            return
        with typed_errors(self.path):
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT 1 FROM db_meta LIMIT 1").fetchall()  # takes the snapshot now
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM db_meta WHERE key = 'schema_version'")
        return int(row.fetchone()[0])
