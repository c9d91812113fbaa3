"""``DynamicDatabase``: repositories, theorems, premises, sorry status and proofs on SQLite.

The upstream (LeanAgent / LeanDojo-v2 1.0.9) keeps the whole database in memory and rewrites one
JSON file on every save; constructing it wipes the file. Here:

- the database is a SQLite file (WAL journal, foreign keys on, a schema version with migrations);
  opening an existing database never modifies its data;
- every write is one transaction: a repository is added whole or not at all, even if the process is
  killed midway, and readers (other connections, other processes) see either state, never a mix;
- reads stream rows (``theorems()`` pages by id; ``export_merged_data`` fetches theorems in chunks),
  so memory does not grow with the database;
- adding a repository costs time proportional to that repository only.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import get_settings
from ..data import (
    Annotation,
    Corpus,
    Pos,
    PremiseFile,
    Repository,
    SplitSpec,
    Theorem,
    TracedTactic,
)
from ..data.dataset import CORPUS_FILE
from ..data.jsonio import gc_paused, write_jsonl
from ..data.model import repo_name_from_url
from ..errors import DataFormatError
from .difficulty import (
    CATEGORIES,
    Curriculum,
    RepositoryDifficulty,
    Thresholds,
    distribute,
    order_repositories,
)
from .errors import DatabaseError, NotFoundError
from .ingest import (
    DatasetPlan,
    Executor,
    Ingest,
    SourceSorry,
    encode_json,
    feed_dataset,
    plan_dataset,
    prepare_dataset,
)
from .ingest import (
    unwrap_prepared as _unwrap,
)
from .records import ProofRecord, RepositoryInfo, StoredTheorem, TrainingRun
from .schema import SCHEMA_VERSION, SORRY_STATUSES, migrate

DEFAULT_DB_NAME = "dynamic_database.sqlite"
_PAGE = 256
_IN_CHUNK = 500

RepositoryRef = RepositoryInfo | int | str | tuple[str, str]
StatusFilter = str | Iterable[str] | None

# Proof length that decides difficulty (see difficulty.py): the found proof's for a proved sorry.
_STEPS = (
    "(CASE WHEN t.sorry_status = 'sorry_proved' AND t.proof_steps IS NOT NULL "
    "THEN t.proof_steps ELSE t.num_tactics END)"
)
_THEOREM_COLUMNS = (
    "t.id, t.repository_id, COALESCE(t.url, r.url), COALESCE(t.commit_hash, r.commit_hash), "
    "f.path, t.full_name, t.start_line, t.start_col, t.end_line, t.end_col, t.theorem_statement, "
    "t.has_statement, t.extra, t.sorry_status, t.sorry_source, t.proof_steps, t.num_tactics, "
    "t.upstream_difficulty"
)
_THEOREM_FROM = (
    "theorems t JOIN files f ON f.id = t.file_id JOIN repositories r ON r.id = t.repository_id"
)


def default_path() -> Path:
    """``RAID_DIR/dynamic_database.sqlite``."""
    return get_settings().raid_dir / DEFAULT_DB_NAME


def _now() -> str:
    return _dt.datetime.now().isoformat()


def _date(value: Any, field: str = "metadata.date_processed") -> tuple[str, float]:
    """An ISO date (``datetime`` or text) → (text as stored, seconds since the epoch for ordering;
    a date without a time zone is read as UTC)."""
    if isinstance(value, _dt.datetime):
        dt = value
        text = value.isoformat()
    elif isinstance(value, str):
        try:
            dt = _dt.datetime.fromisoformat(value)
        except ValueError:
            raise DataFormatError(f"not an ISO date: {value!r}", field=field) from None
        text = value
    else:
        raise DataFormatError(f"expected an ISO date, got {type(value).__name__}", field=field)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    return text, dt.timestamp()


def _chunks(items: Sequence[Any], n: int = _IN_CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _swap_dir(new: Path, dst: Path, work: Path) -> None:
    """Put directory ``new`` at ``dst``, replacing what is there (moved into ``work`` first)."""
    if dst.exists() and not dst.is_dir():
        raise FileExistsError(f"{dst} exists and is not a directory")
    if not dst.exists():
        new.rename(dst)
        return
    old = work / "old"
    dst.rename(old)
    try:
        new.rename(dst)
    except BaseException:
        old.rename(dst)
        raise


class _Stub(Theorem):
    """Just enough of a theorem for ``split_theorems``: identity, premise names, sorry flag."""

    __slots__ = ("row_id",)


_P0 = Pos(0, 0)
_STUB_SORRY = "sorry"


class DynamicDatabase:
    """A database of traced repositories on SQLite.

    ``DynamicDatabase(path)`` opens (or creates) the file; the default is
    ``RAID_DIR/dynamic_database.sqlite``. Use it as a context manager or call :meth:`close`.
    ``durable=True`` syncs every commit to disk (survives power loss, slower); the default already
    survives a crash or kill of the process.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        durable: bool = False,
        timeout: float = 60.0,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        memory = str(path) == ":memory:"
        if not memory:
            if self.path.is_dir():
                raise DatabaseError(f"{self.path} is a directory, not a database file")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                ":memory:" if memory else str(self.path), isolation_level=None, timeout=timeout
            )
        except sqlite3.Error as exc:
            raise DatabaseError(f"cannot open database {self.path}: {exc}") from exc
        try:
            if not memory:
                # Takes effect only when the file is new; large pages suit rows with goal text.
                self._conn.execute("PRAGMA page_size = 16384")
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise DatabaseError(f"cannot switch {self.path} to WAL mode (got {mode})")
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._conn.execute("PRAGMA cache_size = -32768")
            self._conn.execute("PRAGMA temp_store = MEMORY")
            migrate(self._conn, SCHEMA_VERSION)
        except sqlite3.OperationalError as exc:
            self._conn.close()
            raise DatabaseError(f"cannot open database {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise DatabaseError(f"{self.path} is not a usable SQLite database: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise

    # -- connection and transactions -------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> DynamicDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DynamicDatabase({str(self.path)!r})"

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for read-only queries of your own."""
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): all of it commits, or none of it. The body
        may end it early with ``ROLLBACK``."""
        conn = self._conn
        if conn.in_transaction:
            raise DatabaseError("a transaction is already open on this connection")
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

    # -- repositories ----------------------------------------------------------------------------

    def add_repository(
        self,
        source: str | Path | Repository,
        *,
        url: str | None = None,
        commit: str | None = None,
        name: str | None = None,
        lean_version: str | None = None,
        lean_dojo_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_dir: str | Path | None = None,
        replace: bool = False,
    ) -> RepositoryInfo:
        """Add a repository version from a LeanDojo dataset directory or a traced
        :class:`~lean_dojo_v2.data.Repository`, in one transaction.

        Url and commit come from the arguments, else the dataset's ``metadata.json``
        (``from_repo``), else the theorem records. Re-adding a url + commit already present changes
        nothing and returns it (``replace=True`` replaces it instead, dropping its recorded proofs);
        a new commit of the same url is a new repository version.

        Sorry status: a theorem is ``sorry_unproved`` when one of its tactics contains a ``sorry``
        token, or, with ``source_dir`` (the repository checkout), when its declaration in the source
        contains one (term-mode ``:= sorry``).

        Bad input raises :class:`~lean_dojo_v2.errors.DataFormatError` naming the file and record;
        the database is then unchanged.
        """
        if isinstance(source, Repository):
            return self._add_traced(
                source,
                url=url,
                commit=commit,
                name=name,
                lean_version=lean_version,
                lean_dojo_version=lean_dojo_version,
                metadata=metadata,
                source_dir=source_dir,
                replace=replace,
            )
        if isinstance(source, (str, Path)):
            return self._add_dataset(
                Path(source),
                url=url,
                commit=commit,
                name=name,
                lean_version=lean_version,
                lean_dojo_version=lean_dojo_version,
                metadata=metadata,
                source_dir=source_dir,
                replace=replace,
            )
        raise TypeError(
            f"add_repository takes a dataset directory or a Repository, not {type(source).__name__}"
        )

    def _add_dataset(self, path: Path, **kw: Any) -> RepositoryInfo:
        replace = kw.pop("replace")
        plan = plan_dataset(path, **kw)
        return self._ingest_plan(
            plan,
            replace,
            lambda ex: feed_dataset(plan, Ingest(plan.url, plan.commit, ex, plan.source())),
        )

    def _ingest_plan(
        self, plan: DatasetPlan, replace: bool, write: Callable[[Executor], Any]
    ) -> RepositoryInfo:
        return self._ingest(
            url=plan.url,
            commit=plan.commit,
            name=plan.name,
            lean_version=plan.lean_version,
            lean_dojo_version=plan.lean_dojo_version,
            metadata=plan.metadata,
            replace=replace,
            write=write,
        )

    def trace_repository(
        self,
        url: str | Path,
        commit: str | None = None,
        build_deps: bool = True,
        **trace_kwargs: Any,
    ) -> RepositoryInfo:
        """Trace ``url`` at ``commit`` (see :func:`lean_dojo_v2.lean_dojo.trace`; needs Lean) and
        add it, with sorry status read from its checkout."""
        from ..lean_dojo import LeanGitRepo, trace

        traced = trace(LeanGitRepo(str(url), commit), build_deps=build_deps, **trace_kwargs)
        return self.add_repository(traced.to_repository(), source_dir=traced.root)

    def add_repositories(
        self,
        sources: Iterable[str | Path | Repository],
        *,
        workers: int | None = None,
        replace: bool = False,
    ) -> list[RepositoryInfo]:
        """Add several repository versions, each in its own transaction, in order.

        Dataset directories are read and checked by ``workers`` helper processes (default: one
        when the machine has more than one CPU) while this process writes the previous one, so
        adding many repositories takes about the time of writing them. ``workers=0`` reads them
        here, one after the other. The first bad input raises (as :meth:`add_repository`);
        the repositories before it stay added.
        """
        items = list(sources)
        if workers is None:
            workers = 1 if (os.cpu_count() or 1) > 1 else 0
        if workers <= 0 or sum(1 for x in items if not isinstance(x, Repository)) < 2:
            return [self.add_repository(x, replace=replace) for x in items]
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor

        # Fork is cheapest where it exists; workers never touch this process's connection and end
        # without running finalisers.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        out: list[RepositoryInfo] = []
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context(method)
        ) as pool:
            pending: list[tuple[Any, Future[Any] | None]] = []
            queue = iter(items)

            def submit_next() -> None:
                for item in queue:
                    if isinstance(item, Repository):
                        pending.append((item, None))
                        return
                    plan = plan_dataset(Path(item))
                    if not replace and self._find_repository(plan.url, plan.commit) is not None:
                        pending.append((plan, None))  # already present: nothing to read
                        return
                    pending.append((plan, pool.submit(prepare_dataset, plan)))
                    return

            for _ in range(workers + 1):
                submit_next()
            while pending:
                item, future = pending.pop(0)
                submit_next()
                if isinstance(item, Repository):
                    out.append(self.add_repository(item, replace=replace))
                    continue
                if future is None:
                    found = self._find_repository(item.url, item.commit)
                    if found is not None:
                        out.append(found)
                        continue
                    future = pool.submit(prepare_dataset, item)
                batches = _unwrap(future.result())
                out.append(
                    self._ingest_plan(
                        item, replace, lambda ex, b=batches: [ex(kind, rows) for kind, rows in b]
                    )
                )
        return out

    def _add_traced(self, repo: Repository, **kw: Any) -> RepositoryInfo:
        metadata = dict(repo.metadata)
        metadata.update(kw.pop("metadata") or {})
        lean_dojo_version = kw.pop("lean_dojo_version") or metadata.get("lean_dojo_version")

        url = kw.pop("url") or repo.url
        commit = kw.pop("commit") or repo.commit
        source_dir = kw.pop("source_dir")

        def write(ex: Executor) -> None:
            ingest = Ingest(url, commit, ex, SourceSorry(source_dir) if source_dir else None)
            ingest.add_traced_files(repo.traced_files)
            ingest.add_premise_files(repo.premise_files)
            for i, t in enumerate(repo.theorems):
                ingest.add_theorem(t, record=i)
            ingest.flush()

        return self._ingest(
            url=url,
            commit=commit,
            name=kw.pop("name") or repo.name,
            lean_version=kw.pop("lean_version") or repo.lean_version,
            lean_dojo_version=lean_dojo_version if isinstance(lean_dojo_version, str) else None,
            metadata=metadata,
            replace=kw.pop("replace"),
            write=write,
        )

    def _ingest(
        self,
        *,
        url: str,
        commit: str,
        name: str | None,
        lean_version: str | None,
        lean_dojo_version: str | None,
        metadata: dict[str, Any],
        replace: bool,
        write: Callable[[Executor], Any],
    ) -> RepositoryInfo:
        """Insert the repository row and let ``write`` add the rest, in one transaction."""
        if not isinstance(url, str) or not isinstance(commit, str):
            raise DataFormatError(f"repository url and commit must be text, got {url!r} {commit!r}")
        if not replace:
            found = self._find_repository(url, commit)
            if found is not None:
                return found
        with self.transaction() as conn, gc_paused():
            if replace:
                conn.execute(
                    "DELETE FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
                )
            else:
                row = conn.execute(  # another process may have added it meanwhile
                    "SELECT id FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
                ).fetchone()
                if row is not None:
                    repo_id = row[0]
                    conn.execute("ROLLBACK")
                    info = self._repository_by_id(repo_id)
                    assert info is not None
                    return info
            repo_id = self._insert_repository(
                url=url,
                commit=commit,
                name=name,
                lean_version=lean_version,
                lean_dojo_version=lean_dojo_version,
                metadata=metadata,
            )
            write(Executor(conn, repo_id))
        info = self._repository_by_id(repo_id)
        assert info is not None
        return info

    def _insert_repository(
        self,
        *,
        url: str,
        commit: str,
        name: str | None,
        lean_version: str | None,
        lean_dojo_version: str | None,
        metadata: Mapping[str, Any],
        pr_url: str | None = None,
    ) -> int:
        """Insert a repository row (inside the caller's transaction); adds ``date_processed`` to
        the metadata when missing."""
        date_value = metadata.get("date_processed")
        if date_value is None:
            metadata = {"date_processed": _now(), **metadata}
            date_value = metadata["date_processed"]
        date_text, date_ts = _date(date_value)
        for label, value in (
            ("lean_version", lean_version),
            ("lean_dojo_version", lean_dojo_version),
        ):
            if value is not None and not isinstance(value, str):
                raise DataFormatError(f"expected text, got {type(value).__name__}", field=label)
        cur = self._conn.execute(
            "INSERT INTO repositories (url, name, commit_hash, lean_version, lean_dojo_version, "
            "date_processed, processed_at, metadata, pr_url, added_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                url,
                name or repo_name_from_url(url),
                commit,
                lean_version,
                lean_dojo_version,
                date_text,
                date_ts,
                encode_json(dict(metadata)),
                pr_url,
                _now(),
            ),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _find_repository(self, url: str, commit: str) -> RepositoryInfo | None:
        row = self._conn.execute(
            "SELECT id FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
        ).fetchone()
        return self._repository_by_id(row[0]) if row else None

    def get_repository(self, url: str, commit: str | None = None) -> RepositoryInfo | None:
        """The repository version ``url`` @ ``commit``; with no commit, the most recently processed
        version of ``url``. ``None`` when absent (as upstream)."""
        if commit is not None:
            return self._find_repository(url, commit)
        row = self._conn.execute(
            "SELECT id FROM repositories WHERE url = ? ORDER BY processed_at DESC, id DESC LIMIT 1",
            (url,),
        ).fetchone()
        return self._repository_by_id(row[0]) if row else None

    def repositories(self) -> list[RepositoryInfo]:
        """Every repository version, in the order they were added."""
        ids = [r[0] for r in self._conn.execute("SELECT id FROM repositories ORDER BY id")]
        return self._repositories_by_ids(ids)

    def _repository_by_id(self, repo_id: int) -> RepositoryInfo | None:
        found = self._repositories_by_ids([repo_id])
        return found[0] if found else None

    def _repositories_by_ids(self, ids: Sequence[int]) -> list[RepositoryInfo]:
        out: dict[int, RepositoryInfo] = {}
        with self.snapshot() as conn:
            for chunk in _chunks(list(ids)):
                m = _marks(len(chunk))
                counts: dict[int, dict[str, int]] = {i: {} for i in chunk}
                for rid, status, n, ntac in conn.execute(
                    f"SELECT repository_id, sorry_status, COUNT(*), SUM(num_tactics) "
                    f"FROM theorems WHERE repository_id IN ({m}) "
                    f"GROUP BY repository_id, sorry_status",
                    chunk,
                ):
                    counts[rid][status] = n
                    counts[rid]["tactics"] = counts[rid].get("tactics", 0) + (ntac or 0)
                per_repository = {
                    "premise_files": "SELECT repository_id, COUNT(*) FROM premise_files "
                    f"WHERE repository_id IN ({m}) GROUP BY repository_id",
                    "premises": "SELECT pf.repository_id, COUNT(*) FROM premises p "
                    "JOIN premise_files pf ON pf.file_id = p.file_id "
                    f"WHERE pf.repository_id IN ({m}) GROUP BY pf.repository_id",
                    "traced": "SELECT repository_id, COUNT(*) FROM files "
                    f"WHERE repository_id IN ({m}) AND traced_ord IS NOT NULL "
                    "GROUP BY repository_id",
                }
                for key, sql in per_repository.items():
                    for rid, n in conn.execute(sql, chunk):
                        counts[rid][key] = n
                for row in conn.execute(
                    f"SELECT id, url, name, commit_hash, lean_version, lean_dojo_version, "
                    f"date_processed, metadata, pr_url FROM repositories WHERE id IN ({m})",
                    chunk,
                ):
                    c = counts[row[0]]
                    out[row[0]] = RepositoryInfo(
                        id=row[0],
                        url=row[1],
                        name=row[2],
                        commit=row[3],
                        lean_version=row[4],
                        lean_dojo_version=row[5],
                        date_processed=row[6],
                        metadata=json.loads(row[7]),
                        pr_url=row[8],
                        num_proven_theorems=c.get("proven", 0),
                        num_sorry_theorems_unproved=c.get("sorry_unproved", 0),
                        num_sorry_theorems_proved=c.get("sorry_proved", 0),
                        num_tactics=c.get("tactics", 0),
                        num_premise_files=c.get("premise_files", 0),
                        num_premises=c.get("premises", 0),
                        num_files_traced=c.get("traced", 0),
                    )
        return [out[i] for i in ids if i in out]

    def resolve_repositories(
        self, repositories: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> list[RepositoryInfo]:
        """Repository versions from references: a :class:`RepositoryInfo`, an id, ``(url,
        commit)``, or a url (its latest version); ``None`` means all. Unknown ones raise
        :class:`NotFoundError`."""
        if repositories is None:
            return self.repositories()
        if isinstance(repositories, (RepositoryInfo, int, str, tuple)):
            repositories = [repositories]
        ids: list[int] = []
        for ref in repositories:
            info: RepositoryInfo | None
            if isinstance(ref, RepositoryInfo):
                info = self._repository_by_id(ref.id)
            elif isinstance(ref, bool):
                raise TypeError(f"not a repository reference: {ref!r}")
            elif isinstance(ref, int):
                info = self._repository_by_id(ref)
            elif isinstance(ref, str):
                info = self.get_repository(ref)
            elif isinstance(ref, tuple) and len(ref) == 2:
                info = self.get_repository(ref[0], ref[1])
            else:
                raise TypeError(f"not a repository reference: {ref!r}")
            if info is None:
                raise NotFoundError(f"no repository {ref!r} in {self.path}")
            if info.id not in ids:
                ids.append(info.id)
        return self._repositories_by_ids(ids)

    def delete_repository(self, url: str, commit: str) -> None:
        """Delete a repository version with its theorems, corpus and recorded proofs."""
        with self.transaction() as conn:
            cur = conn.execute(
                "DELETE FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"repository {url!r} with commit {commit!r} not found")

    def load_repository(self, repository: RepositoryRef) -> Repository:
        """Materialise one repository version as a :class:`~lean_dojo_v2.data.Repository`
        (theorems in the order they were added, corpus, traced files)."""
        (info,) = self.resolve_repositories([repository])
        with self.snapshot():
            theorems = list(self.theorems(repository=info))
            corpus = list(self._corpus_of(info.id))
            traced = [
                r[0]
                for r in self._conn.execute(
                    "SELECT path FROM files WHERE repository_id = ? AND traced_ord IS NOT NULL "
                    "ORDER BY traced_ord",
                    (info.id,),
                )
            ]
        return Repository(
            url=info.url,
            commit=info.commit,
            lean_version=info.lean_version,
            name=info.name,
            theorems=theorems,
            premise_files=corpus,
            traced_files=traced,
            metadata=dict(info.metadata),
        )

    # -- theorems --------------------------------------------------------------------------------

    def _where(
        self,
        repository: RepositoryRef | Iterable[RepositoryRef] | None,
        status: StatusFilter,
        difficulty: str | Iterable[str] | None,
        file_path: str | None,
        full_name: str | None,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if repository is not None:
            ids = [r.id for r in self.resolve_repositories(repository)]
            where.append(f"t.repository_id IN ({_marks(len(ids))})")
            params.extend(ids)
        if status is not None:
            statuses = _statuses(status)
            where.append(f"t.sorry_status IN ({_marks(len(statuses))})")
            params.extend(statuses)
        if file_path is not None:
            where.append("f.path = ?")
            params.append(file_path)
        if full_name is not None:
            where.append("t.full_name = ?")
            params.append(full_name)
        if difficulty is not None:
            cats = [difficulty] if isinstance(difficulty, str) else list(difficulty)
            for c in cats:
                if c not in CATEGORIES:
                    raise ValueError(f"difficulty must be one of {CATEGORIES}, got {c!r}")
            thresholds = self.thresholds()
            where.append("(" + " OR ".join(_difficulty_sql(c, thresholds) for c in cats) + ")")
        return where, params

    def stored_theorems(
        self,
        repository: RepositoryRef | Iterable[RepositoryRef] | None = None,
        *,
        status: StatusFilter = None,
        difficulty: str | Iterable[str] | None = None,
        file_path: str | None = None,
        full_name: str | None = None,
        with_tactics: bool = True,
    ) -> Iterator[StoredTheorem]:
        """Theorems with their database id and sorry status, in the order they were added.

        Filters: ``repository`` (reference or list, see :meth:`resolve_repositories`),
        ``status`` (``proven``, ``sorry_unproved``, ``sorry_proved``, or ``sorry`` for both),
        ``difficulty`` (``easy``, ``medium``, ``hard``, ``hard_no_proof``; LeanAgent's rule over the
        whole database), ``file_path``, ``full_name``. Rows are read a page at a time, so the
        database may be written (e.g. proofs recorded) while iterating.
        """
        where, params = self._where(repository, status, difficulty, file_path, full_name)
        last = 0
        sql = (
            f"SELECT {_THEOREM_COLUMNS} FROM {_THEOREM_FROM} WHERE "
            + " AND ".join(where + ["t.id > ?"])
            + f" ORDER BY t.id LIMIT {_PAGE}"
        )
        while True:
            rows = self._conn.execute(sql, [*params, last]).fetchall()
            if not rows:
                return
            yield from self._build(rows, with_tactics)
            last = rows[-1][0]

    def theorems(
        self,
        repository: RepositoryRef | Iterable[RepositoryRef] | None = None,
        *,
        status: StatusFilter = None,
        difficulty: str | Iterable[str] | None = None,
        file_path: str | None = None,
        full_name: str | None = None,
        with_tactics: bool = True,
    ) -> Iterator[Theorem]:
        """Theorem records (see :meth:`stored_theorems` for the filters)."""
        for st in self.stored_theorems(
            repository,
            status=status,
            difficulty=difficulty,
            file_path=file_path,
            full_name=full_name,
            with_tactics=with_tactics,
        ):
            yield st.theorem

    def sorry_theorems_unproved(
        self, repository: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> Iterator[Theorem]:
        """Theorems with a ``sorry`` that no recorded proof has closed yet."""
        return self.theorems(repository, status="sorry_unproved")

    def sorry_theorems_proved(
        self, repository: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> Iterator[Theorem]:
        return self.theorems(repository, status="sorry_proved")

    def proven_theorems(
        self, repository: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> Iterator[Theorem]:
        return self.theorems(repository, status="proven")

    def count_theorems(
        self,
        repository: RepositoryRef | Iterable[RepositoryRef] | None = None,
        *,
        status: StatusFilter = None,
        difficulty: str | Iterable[str] | None = None,
    ) -> int:
        where, params = self._where(repository, status, difficulty, None, None)
        sql = f"SELECT COUNT(*) FROM {_THEOREM_FROM}" + (
            " WHERE " + " AND ".join(where) if where else ""
        )
        return self._conn.execute(sql, params).fetchone()[0]

    def get_theorem(self, theorem: Theorem | StoredTheorem | int) -> StoredTheorem:
        """The stored theorem for a record (matched on url, commit, file, name and start) or an
        id; :class:`NotFoundError` when absent."""
        tid = self._theorem_id(theorem)
        rows = self._conn.execute(
            f"SELECT {_THEOREM_COLUMNS} FROM {_THEOREM_FROM} WHERE t.id = ?", (tid,)
        ).fetchall()
        return self._build(rows, True)[0]

    def _theorem_id(self, theorem: Theorem | StoredTheorem | int) -> int:
        if isinstance(theorem, StoredTheorem):
            theorem = theorem.id
        if isinstance(theorem, int) and not isinstance(theorem, bool):
            row = self._conn.execute("SELECT id FROM theorems WHERE id = ?", (theorem,)).fetchone()
            if row is None:
                raise NotFoundError(f"no theorem with id {theorem}")
            return row[0]
        if not isinstance(theorem, Theorem):
            raise TypeError(f"expected a Theorem or a theorem id, got {type(theorem).__name__}")
        row = self._conn.execute(
            f"SELECT t.id FROM {_THEOREM_FROM} WHERE t.full_name = ? AND f.path = ? "
            "AND t.start_line = ? AND t.start_col = ? "
            "AND COALESCE(t.url, r.url) = ? AND COALESCE(t.commit_hash, r.commit_hash) = ?",
            (
                theorem.full_name,
                theorem.file_path,
                theorem.start[0],
                theorem.start[1],
                theorem.url,
                theorem.commit,
            ),
        ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no theorem {theorem.full_name!r} at {theorem.file_path}:{theorem.start[0]}:"
                f"{theorem.start[1]} of {theorem.url} @ {theorem.commit}"
            )
        return row[0]

    def _build(self, rows: Sequence[Sequence[Any]], with_tactics: bool) -> list[StoredTheorem]:
        """Theorem rows (``_THEOREM_COLUMNS``) → stored theorems, with their tactics."""
        tactics = self._tactics_for([r[0] for r in rows]) if with_tactics else {}
        out = []
        for r in rows:
            extra = json.loads(r[12]) if r[12] is not None else {}
            thm = Theorem(
                url=r[2],
                commit=r[3],
                file_path=r[4],
                full_name=r[5],
                start=Pos(r[6], r[7]),
                end=Pos(r[8], r[9]),
                traced_tactics=tactics.get(r[0], []),
                theorem_statement=r[10],
                has_statement_field=bool(r[11]),
                extra=extra,
            )
            out.append(StoredTheorem(r[0], r[1], thm, r[13], r[14], r[15], r[17]))
        return out

    def _tactics_for(self, theorem_ids: Sequence[int]) -> dict[int, list[TracedTactic]]:
        conn = self._conn
        out: dict[int, list[TracedTactic]] = {}
        for chunk in _chunks(theorem_ids):
            m = _marks(len(chunk))
            uses: dict[tuple[int, int], list[Annotation]] = {}
            for tid, i, name, path, l1, c1, l2, c2 in conn.execute(
                "SELECT u.theorem_id, u.tactic_idx, r.full_name, r.def_path, r.def_line, "
                "r.def_col, r.def_end_line, r.def_end_col FROM premise_uses u "
                f"JOIN premise_refs r ON r.id = u.ref_id WHERE u.theorem_id IN ({m}) "
                "ORDER BY u.theorem_id, u.tactic_idx, u.idx",
                chunk,
            ):
                ann = Annotation(name, path, Pos(l1, c1), Pos(l2, c2))
                lst = uses.get((tid, i))
                if lst is None:
                    uses[(tid, i)] = [ann]
                else:
                    lst.append(ann)
            prev_after = ""
            for tid, i, text, annotated, before, after in conn.execute(
                "SELECT theorem_id, idx, tactic, annotated_tactic, state_before, state_after "
                f"FROM tactics WHERE theorem_id IN ({m}) ORDER BY theorem_id, idx",
                chunk,
            ):
                if before is None:  # the same as the previous tactic's state_after
                    before = prev_after
                prev_after = after
                tac = TracedTactic(
                    text,
                    text if annotated is None else annotated,
                    uses.get((tid, i), []) if uses else [],
                    before,
                    after,
                )
                lst2 = out.get(tid)
                if lst2 is None:
                    out[tid] = [tac]
                else:
                    lst2.append(tac)
        return out

    # -- sorry status and proofs -----------------------------------------------------------------

    def record_proof(
        self,
        theorem: Theorem | StoredTheorem | int,
        proof: str | Sequence[str] | Sequence[TracedTactic],
        *,
        backend: str = "unknown",
        verified: bool = False,
        time_s: float | None = None,
        model: str | None = None,
        training_run: int | None = None,
    ) -> ProofRecord:
        """Record a proof found for ``theorem`` and, if it was an unproved ``sorry``, move it to
        ``sorry_proved``.

        ``proof`` is the proof text (one tactic per line), a list of tactics, or a list of
        :class:`TracedTactic` (their goal states are kept). ``backend`` says what checked it
        (``pantograph``, ``replay``…), ``verified`` whether the whole proof was re-checked by Lean.
        """
        if isinstance(proof, str):
            lines = [line for line in proof.splitlines() if line.strip()]
            steps = [{"tactic": line, "state_before": "", "state_after": ""} for line in lines]
            text = proof
        else:
            steps = []
            for p in proof:
                if isinstance(p, TracedTactic):
                    steps.append(
                        {
                            "tactic": p.tactic,
                            "state_before": p.state_before,
                            "state_after": p.state_after,
                        }
                    )
                elif isinstance(p, str):
                    steps.append({"tactic": p, "state_before": "", "state_after": ""})
                else:
                    raise TypeError(f"a proof step must be text or a TracedTactic, not {p!r}")
            text = "\n".join(s["tactic"] for s in steps)
        if not steps:
            raise ValueError("an empty proof")
        found = _now()
        with self.transaction() as conn:
            tid = self._theorem_id(theorem)
            if (
                training_run is not None
                and not conn.execute(
                    "SELECT 1 FROM training_runs WHERE id = ?", (training_run,)
                ).fetchone()
            ):
                raise NotFoundError(f"no training run {training_run}")
            cur = conn.execute(
                "INSERT INTO proofs (theorem_id, tactics, proof_text, backend, verified, time_s, "
                "model, training_run_id, found_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tid,
                    encode_json(steps),
                    text,
                    backend,
                    1 if verified else 0,
                    time_s,
                    model,
                    training_run,
                    found,
                ),
            )
            conn.execute(
                "UPDATE theorems SET sorry_status = CASE sorry_status WHEN 'sorry_unproved' "
                "THEN 'sorry_proved' ELSE sorry_status END, "
                "proof_steps = CASE WHEN proof_steps IS NULL OR proof_steps > ? THEN ? "
                "ELSE proof_steps END WHERE id = ?",
                (len(steps), len(steps), tid),
            )
            pid = cur.lastrowid
        assert pid is not None
        return ProofRecord(
            pid, tid, steps, text, backend, verified, time_s, model, training_run, found
        )

    def proofs(self, theorem: Theorem | StoredTheorem | int | None = None) -> list[ProofRecord]:
        """Recorded proofs of one theorem (or all), oldest first."""
        if theorem is None:
            rows = self._conn.execute(f"SELECT {_PROOF_COLUMNS} FROM proofs ORDER BY id")
        else:
            rows = self._conn.execute(
                f"SELECT {_PROOF_COLUMNS} FROM proofs WHERE theorem_id = ? ORDER BY id",
                (self._theorem_id(theorem),),
            )
        return [_proof(r) for r in rows]

    def best_proof(self, theorem: Theorem | StoredTheorem | int) -> ProofRecord | None:
        """Verified before unverified, then fewest steps, then oldest."""
        proofs = self.proofs(theorem)
        if not proofs:
            return None
        return min(proofs, key=lambda p: (not p.verified, len(p.tactics), p.id))

    # -- training runs ---------------------------------------------------------------------------

    def start_training_run(
        self,
        kind: str,
        *,
        model: str | None = None,
        config: Mapping[str, Any] | None = None,
        repositories: Iterable[RepositoryRef] = (),
    ) -> int:
        """Record the start of a training run (``sft``, ``grpo``, ``retrieval``, ``progress``…) and
        the repositories it trains on, in order; returns its id."""
        repos = self.resolve_repositories(list(repositories)) if repositories else []
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO training_runs (kind, model, status, started_at, config, metrics) "
                "VALUES (?, ?, 'running', ?, ?, '{}')",
                (kind, model, _now(), encode_json(dict(config or {}))),
            )
            run_id = cur.lastrowid
            assert run_id is not None
            conn.executemany(
                "INSERT INTO training_run_repositories (run_id, repository_id, position) "
                "VALUES (?, ?, ?)",
                [(run_id, r.id, i) for i, r in enumerate(repos)],
            )
        return run_id

    def finish_training_run(
        self,
        run_id: int,
        *,
        status: str = "finished",
        metrics: Mapping[str, Any] | None = None,
        checkpoint: str | Path | None = None,
    ) -> None:
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE training_runs SET status = ?, finished_at = ?, metrics = ?, "
                "checkpoint = ? WHERE id = ?",
                (
                    status,
                    _now(),
                    encode_json(dict(metrics or {})),
                    str(checkpoint) if checkpoint is not None else None,
                    run_id,
                ),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no training run {run_id}")

    def training_runs(self) -> list[TrainingRun]:
        runs = []
        with self.snapshot() as conn:
            for row in conn.execute(
                "SELECT id, kind, model, status, started_at, finished_at, config, metrics, "
                "checkpoint FROM training_runs ORDER BY id"
            ).fetchall():
                repo_ids = [
                    r[0]
                    for r in conn.execute(
                        "SELECT repository_id FROM training_run_repositories WHERE run_id = ? "
                        "ORDER BY position",
                        (row[0],),
                    )
                ]
                runs.append(
                    TrainingRun(
                        row[0],
                        row[1],
                        row[2],
                        row[3],
                        row[4],
                        row[5],
                        json.loads(row[6]),
                        json.loads(row[7]),
                        row[8],
                        repo_ids,
                    )
                )
        return runs

    # -- difficulty and curriculum ---------------------------------------------------------------

    def thresholds(
        self, repositories: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> Thresholds:
        """The 33rd/67th percentile cut-offs over the finite difficulties of ``repositories``
        (default: the whole database)."""
        where, params = self._repo_filter(repositories)
        hist = dict(
            self._conn.execute(
                f"SELECT {_STEPS}, COUNT(*) FROM theorems t WHERE t.sorry_status <> "
                f"'sorry_unproved' AND {_STEPS} > 0{where} GROUP BY {_STEPS}",
                params,
            ).fetchall()
        )
        return Thresholds.from_histogram(hist)

    def _repo_filter(
        self, repositories: RepositoryRef | Iterable[RepositoryRef] | None
    ) -> tuple[str, list[int]]:
        if repositories is None:
            return "", []
        ids = [r.id for r in self.resolve_repositories(repositories)]
        return f" AND t.repository_id IN ({_marks(len(ids))})", ids

    def curriculum(
        self, repositories: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> Curriculum:
        """LeanAgent's curriculum over ``repositories`` (default: all): per-repository counts of
        Easy / Medium / Hard / Hard (No proof) theorems and the repositories ordered by their number
        of Easy theorems. See :mod:`lean_dojo_v2.database.difficulty`."""
        with self.snapshot() as conn:
            infos = self.resolve_repositories(repositories)
            thresholds = self.thresholds([i.id for i in infos]) if infos else Thresholds(None, None)
            easy = thresholds.max_easy_steps
            medium = thresholds.max_medium_steps
            stats = {
                i.id: RepositoryDifficulty(i.id, i.url, i.commit)
                for i in infos  # database order, for ties
            }
            if stats:
                e = easy if easy is not None else -1
                m = medium if medium is not None else -1
                ids = list(stats)
                for rid, no_proof, td, n_easy, n_medium, n_hard in conn.execute(
                    "SELECT t.repository_id, "
                    "SUM(CASE WHEN t.sorry_status = 'sorry_unproved' THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {_STEPS} = 0 "
                    "THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {_STEPS} > 0 "
                    f"AND {_STEPS} <= ? THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {_STEPS} > 0 "
                    f"AND {_STEPS} > ? AND {_STEPS} <= ? THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {_STEPS} > 0 "
                    f"AND {_STEPS} > ? THEN 1 ELSE 0 END) "
                    f"FROM theorems t WHERE t.repository_id IN ({_marks(len(ids))}) "
                    "GROUP BY t.repository_id",
                    [e, e, m, m, *ids],
                ):
                    d_easy, d_medium, d_hard = distribute(td)
                    stats[rid].counts.update(
                        easy=n_easy + d_easy,
                        medium=n_medium + d_medium,
                        hard=n_hard + d_hard,
                        hard_no_proof=no_proof,
                    )
        return Curriculum(thresholds, order_repositories(list(stats.values())))

    def sort_repositories_by_difficulty(
        self, repositories: RepositoryRef | Iterable[RepositoryRef] | None = None
    ) -> list[RepositoryInfo]:
        """Repositories in curriculum order: most Easy theorems first (LeanAgent)."""
        order = self.curriculum(repositories).repositories
        return self._repositories_by_ids([r.repository_id for r in order])

    # -- statistics ------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Counts over the whole database."""
        with self.snapshot() as conn:

            def one(sql: str) -> int:
                return conn.execute(sql).fetchone()[0] or 0

            by_status = dict(
                conn.execute("SELECT sorry_status, COUNT(*) FROM theorems GROUP BY sorry_status")
            )
            return {
                "repositories": one("SELECT COUNT(*) FROM repositories"),
                "theorems": sum(by_status.values()),
                "proven": by_status.get("proven", 0),
                "sorry_unproved": by_status.get("sorry_unproved", 0),
                "sorry_proved": by_status.get("sorry_proved", 0),
                "tactics": one("SELECT COUNT(*) FROM tactics"),
                "premise_uses": one("SELECT COUNT(*) FROM premise_uses"),
                "premise_files": one("SELECT COUNT(*) FROM premise_files"),
                "premises": one("SELECT COUNT(*) FROM premises"),
                "files_traced": one("SELECT COUNT(*) FROM files WHERE traced_ord IS NOT NULL"),
                "proofs": one("SELECT COUNT(*) FROM proofs"),
                "training_runs": one("SELECT COUNT(*) FROM training_runs"),
            }

    # -- export ----------------------------------------------------------------------------------

    def _corpus_of(self, repo_id: int) -> Iterator[PremiseFile]:
        rows = self._conn.execute(
            "SELECT pf.file_id, f.path, pf.imports FROM premise_files pf "
            "JOIN files f ON f.id = pf.file_id WHERE pf.repository_id = ? ORDER BY pf.corpus_ord",
            (repo_id,),
        ).fetchall()
        for file_id, path, imports in rows:
            yield PremiseFile.from_dict(
                {
                    "path": path,
                    "imports": json.loads(imports),
                    "premises": self._premise_dicts(file_id),
                }
            )

    def _premise_dicts(self, file_id: int) -> list[dict[str, Any]]:
        return [
            {
                "full_name": r[0],
                "code": r[1],
                "start": [r[2], r[3]],
                "end": [r[4], r[5]],
                "kind": r[6],
            }
            for r in self._conn.execute(
                "SELECT full_name, code, start_line, start_col, end_line, end_col, kind "
                "FROM premises WHERE file_id = ? ORDER BY idx",
                (file_id,),
            )
        ]

    def export_merged_data(
        self,
        repositories: RepositoryRef | Iterable[RepositoryRef] | None,
        output_path: str | Path,
        *,
        spec: SplitSpec | None = None,
        use_found_proofs: bool = False,
    ) -> dict[str, Any]:
        """Write the theorems, corpus and traced files of ``repositories`` (``None``: all) as one
        LeanDojo-layout dataset at ``output_path`` (replaced atomically).

        - A theorem present in several repository versions (same file, name, start and end) is
          written once, from the most recently processed version.
        - Splits come from :func:`lean_dojo_v2.data.split_theorems` (``spec``, default 2 % / 2 %,
          hash-stable; unproved ``sorry`` theorems go to test, never train).
        - The corpus is the union by path (newest version wins), in dependency order.
        - Records are the stored ones exactly; with ``use_found_proofs``, a former ``sorry``
          proved by us is written with its best recorded proof as its tactics instead.
        - Theorems are streamed from the database a chunk at a time; only their identities and
          premise names are held for splitting.

        Returns the sizes written and the metadata.
        """
        from ..data import split_theorems, write_dataset
        from ..data.dataset import default_metadata

        output_path = Path(output_path)
        with self.snapshot(), gc_paused():
            infos = self.resolve_repositories(repositories)
            newest_first = sorted(
                infos,
                key=lambda i: (_date(i.date_processed)[1], i.id),
                reverse=True,
            )
            rank = {info.id: k for k, info in enumerate(newest_first)}
            stubs: list[_Stub | None] = []
            winner: dict[tuple, tuple[int, int]] = {}
            dedup = len(infos) > 1
            annotations: dict[str, Annotation] = {}
            counts = {"proven": 0, "sorry_unproved": 0, "sorry_proved": 0}
            status_of: dict[int, str] = {}
            for info in infos:
                for stub, status in self._stubs(info, annotations, use_found_proofs):
                    if dedup:
                        key = (stub.file_path, stub.full_name, stub.start, stub.end)
                        prev = winner.get(key)
                        if prev is not None:
                            if rank[info.id] < prev[0]:
                                old = stubs[prev[1]]
                                assert old is not None
                                counts[status_of.pop(old.row_id)] -= 1
                                stubs[prev[1]] = stub
                                winner[key] = (rank[info.id], prev[1])
                                counts[status] += 1
                                status_of[stub.row_id] = status
                            continue
                        winner[key] = (rank[info.id], len(stubs))
                    status_of[stub.row_id] = status
                    counts[status] += 1
                    stubs.append(stub)
            winner.clear()
            status_of.clear()
            theorems = [s for s in stubs if s is not None]
            del stubs
            splits = split_theorems(theorems, spec or SplitSpec())
            del theorems

            # Corpus: union by path, newest version first; only paths and imports in memory.
            corpus: dict[str, tuple[int, list[str]]] = {}
            for info in newest_first:
                for file_id, path, imports in self._conn.execute(
                    "SELECT pf.file_id, f.path, pf.imports FROM premise_files pf JOIN files f "
                    "ON f.id = pf.file_id WHERE pf.repository_id = ? ORDER BY pf.corpus_ord",
                    (info.id,),
                ):
                    if path not in corpus:
                        corpus[path] = (file_id, json.loads(imports))
            # Dependency order (and a check of the import graph) from the foundation's Corpus.
            order = [
                f.path
                for f in Corpus(
                    PremiseFile(p, imports, []) for p, (_, imports) in corpus.items()
                ).files
            ]
            num_premises = 0
            file_ids = [fid for fid, _ in corpus.values()]
            for chunk in _chunks(file_ids):
                num_premises += self._conn.execute(
                    f"SELECT COUNT(*) FROM premises WHERE file_id IN ({_marks(len(chunk))})", chunk
                ).fetchone()[0]
            traced = list(self._traced_union(infos))

            total = sum(counts.values())
            metadata = default_metadata(
                repositories=[
                    {
                        "url": i.url,
                        "name": i.name,
                        "commit": i.commit,
                        "lean_version": i.lean_version,
                        "lean_dojo_version": i.lean_dojo_version,
                        "metadata": i.metadata,
                    }
                    for i in infos
                ],
                total_theorems=total,
                num_proven_theorems=counts["proven"],
                num_sorry_theorems=counts["sorry_unproved"] + counts["sorry_proved"],
                num_sorry_theorems_unproved=counts["sorry_unproved"],
                num_sorry_theorems_proved=counts["sorry_proved"],
                num_premise_files=len(corpus),
                num_premises=num_premises,
                num_files_traced=len(traced),
            )
            if len(infos) == 1:
                metadata["from_repo"] = {"url": infos[0].url, "commit": infos[0].commit}
            written = {
                strategy: {
                    name: self._full_theorems(stubs_of_split, use_found_proofs)
                    for name, stubs_of_split in by_split.items()
                }
                for strategy, by_split in splits.items()
            }
            corpus_lines = (
                {
                    "path": p,
                    "imports": corpus[p][1],
                    "premises": self._premise_dicts(corpus[p][0]),
                }
                for p in order
            )
            # write_dataset streams the splits; the corpus is then streamed into the staged
            # directory (write_dataset would hold every premise in memory), which is swapped in.
            output_path.parent.mkdir(parents=True, exist_ok=True)
            work = Path(
                tempfile.mkdtemp(
                    prefix=f".{output_path.name}.", suffix=".tmp", dir=output_path.parent
                )
            )
            try:
                staged = work / "dataset"
                write_dataset(staged, written, (), traced, metadata)
                write_jsonl(staged / CORPUS_FILE, corpus_lines)
                _swap_dir(staged, output_path, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        return {
            "path": str(output_path),
            "splits": {s: {k: len(v) for k, v in by.items()} for s, by in splits.items()},
            **{k: v for k, v in metadata.items() if k.startswith(("num_", "total_"))},
        }

    def _stubs(
        self, info: RepositoryInfo, annotations: dict[str, Annotation], use_found_proofs: bool
    ) -> Iterator[tuple[_Stub, str]]:
        """Light theorems of one repository (identity, distinct premise names, sorry flag), in
        database order, with their sorry status."""
        conn = self._conn
        names = conn.execute(
            "SELECT u.theorem_id, r.full_name FROM premise_uses u "
            "JOIN premise_refs r ON r.id = u.ref_id "
            "WHERE u.theorem_id IN (SELECT id FROM theorems WHERE repository_id = ?) "
            "ORDER BY u.theorem_id, u.tactic_idx, u.idx",
            (info.id,),
        )
        pending = next(names, None)
        rows = conn.execute(
            "SELECT t.id, COALESCE(t.url, r.url), COALESCE(t.commit_hash, r.commit_hash), f.path, "
            "t.full_name, t.start_line, t.start_col, t.end_line, t.end_col, t.sorry_status, "
            "t.sorry_source FROM theorems t JOIN files f ON f.id = t.file_id "
            "JOIN repositories r ON r.id = t.repository_id WHERE t.repository_id = ? ORDER BY t.id",
            (info.id,),
        )
        url_cache: dict[str, str] = {}
        for tid, url, commit, path, name, l1, c1, l2, c2, status, source in rows:
            used: dict[str, None] = {}
            while pending is not None and pending[0] < tid:
                pending = next(names, None)
            while pending is not None and pending[0] == tid:
                used[pending[1]] = None
                pending = next(names, None)
            replaced = use_found_proofs and status == "sorry_proved"
            sorry = status == "sorry_unproved" or (
                status == "sorry_proved" and source == "tactic" and not replaced
            )
            anns = []
            if not replaced:
                for n in used:
                    a = annotations.get(n)
                    if a is None:
                        a = annotations[n] = Annotation(n, "", _P0, _P0)
                    anns.append(a)
            tactic = TracedTactic(_STUB_SORRY if sorry else "", "", anns, "", "")
            stub = _Stub(
                url_cache.setdefault(url, url),
                url_cache.setdefault(commit, commit),
                path,
                name,
                Pos(l1, c1),
                Pos(l2, c2),
                [tactic],
            )
            stub.row_id = tid
            yield stub, status

    def _full_theorems(self, stubs: list[Theorem], use_found_proofs: bool) -> Iterator[Theorem]:
        """The stored records of ``stubs``, in their order, fetched a chunk at a time."""
        for chunk in _chunks(stubs):
            ids = [s.row_id for s in chunk]  # type: ignore[attr-defined]
            rows = self._conn.execute(
                f"SELECT {_THEOREM_COLUMNS} FROM {_THEOREM_FROM} WHERE t.id IN ({_marks(len(ids))})",
                ids,
            ).fetchall()
            built = {st.id: st for st in self._build(rows, True)}
            for tid in ids:
                st = built[tid]
                if use_found_proofs and st.sorry_status == "sorry_proved":
                    best = self.best_proof(tid)
                    if best is not None:
                        st.theorem.traced_tactics = [
                            TracedTactic.unannotated(
                                s["tactic"], s.get("state_before", ""), s.get("state_after", "")
                            )
                            for s in best.tactics
                        ]
                yield st.theorem

    def _traced_union(self, infos: Sequence[RepositoryInfo]) -> Iterator[str]:
        seen: set[str] = set()
        for info in infos:
            for (path,) in self._conn.execute(
                "SELECT path FROM files WHERE repository_id = ? AND traced_ord IS NOT NULL "
                "ORDER BY traced_ord",
                (info.id,),
            ):
                if path not in seen:
                    seen.add(path)
                    yield path

    # -- upstream JSON ---------------------------------------------------------------------------

    def import_json(self, path: str | Path) -> list[RepositoryInfo]:
        """Import an upstream LeanAgent / LeanDojo-v2 ``dynamic_database.json`` (one transaction;
        repository versions already present are skipped). Returns the repositories imported."""
        from .upstream import import_upstream_json

        return import_upstream_json(self, path)

    def export_json(
        self,
        path: str | Path,
        repositories: RepositoryRef | Iterable[RepositoryRef] | None = None,
    ) -> Path:
        """Write the upstream ``dynamic_database.json`` format (what ``DynamicDatabase.to_json``
        writes in LeanDojo-v2 1.0.9), streamed, atomically."""
        from .upstream import export_upstream_json

        return export_upstream_json(self, path, repositories)

    # Upstream name.
    def to_json(self, file_path: str | Path) -> Path:
        return self.export_json(file_path)


_PROOF_COLUMNS = (
    "id, theorem_id, tactics, proof_text, backend, verified, time_s, model, training_run_id, "
    "found_at"
)


def _proof(r: Sequence[Any]) -> ProofRecord:
    return ProofRecord(r[0], r[1], json.loads(r[2]), r[3], r[4], bool(r[5]), r[6], r[7], r[8], r[9])


def _statuses(status: str | Iterable[str]) -> list[str]:
    items = [status] if isinstance(status, str) else list(status)
    out: list[str] = []
    for s in items:
        if s == "sorry":
            out += ["sorry_unproved", "sorry_proved"]
        elif s in SORRY_STATUSES:
            out.append(s)
        else:
            raise ValueError(f"status must be one of {SORRY_STATUSES} or 'sorry', got {s!r}")
    return out


def _difficulty_sql(category: str, th: Thresholds) -> str:
    """A condition on ``t`` selecting theorems of ``category`` (thresholds baked in as numbers)."""
    if category == "hard_no_proof":
        return "t.sorry_status = 'sorry_unproved'"
    e = th.max_easy_steps if th.max_easy_steps is not None else -1
    m = th.max_medium_steps if th.max_medium_steps is not None else -1
    finite = f"t.sorry_status <> 'sorry_unproved' AND {_STEPS} > 0"
    rank_cond = {
        "easy": (f"{finite} AND {_STEPS} <= {e}", "d.rk < d.n / 3"),
        "medium": (
            f"{finite} AND {_STEPS} > {e} AND {_STEPS} <= {m}",
            "d.rk >= d.n / 3 AND d.rk < 2 * (d.n / 3)",
        ),
        "hard": (f"{finite} AND {_STEPS} > {m}", "d.rk >= 2 * (d.n / 3)"),
    }[category]
    distributed = (
        "t.id IN (SELECT d.id FROM (SELECT t.id AS id, ROW_NUMBER() OVER "
        "(PARTITION BY t.repository_id ORDER BY t.id) - 1 AS rk, COUNT(*) OVER "
        "(PARTITION BY t.repository_id) AS n FROM theorems t WHERE t.sorry_status <> "
        f"'sorry_unproved' AND {_STEPS} = 0) d WHERE {rank_cond[1]})"
    )
    return f"(({rank_cond[0]}) OR {distributed})"
