"""Repository versions: the rows of ``repositories`` and the records read from them.

The module functions (:func:`insert_repository`, :func:`repository_id`, :func:`corpus_rows`,
:func:`premise_rows`, :func:`traced_paths`) work on a connection inside the caller's transaction
or snapshot; they are the package's internal API, used by :class:`RepositoryQueries` (part of
:class:`~.dynamic_database.DynamicDatabase`), the export and the upstream JSON import/export.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..data import PremiseFile, Repository
from ..data.jsonio import loads
from ..data.model import repo_name_from_url
from ..errors import DataFormatError
from .common import RepositoriesArg, RepositoryRef, chunks, marks, named, now, parse_date
from .connection import DatabaseConnection
from .errors import RecordNotFoundError
from .ingest import encode_json
from .records import RepositoryInfo


def insert_repository(
    conn: sqlite3.Connection,
    *,
    url: str,
    commit: str,
    name: str | None,
    lean_version: str | None,
    lean_dojo_version: str | None,
    metadata: Mapping[str, Any],
    pr_url: str | None = None,
) -> int:
    """Insert a repository row inside the caller's write transaction and return its id; adds
    ``date_processed`` (now) to the metadata when missing."""
    date_value = metadata.get("date_processed")
    if date_value is None:
        metadata = {"date_processed": now(), **metadata}
        date_value = metadata["date_processed"]
    date_text, date_ts = parse_date(date_value)
    for label, value in (("lean_version", lean_version), ("lean_dojo_version", lean_dojo_version)):
        if value is not None and not isinstance(value, str):
            raise DataFormatError(f"expected text, got {type(value).__name__}", field=label)
    cur = conn.execute(
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
            now(),
        ),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def repository_id(conn: sqlite3.Connection, url: str, commit: str) -> int | None:
    """The id of repository version ``url`` @ ``commit``, or None."""
    row = conn.execute(
        "SELECT id FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
    ).fetchone()
    return row[0] if row else None


def corpus_rows(conn: sqlite3.Connection, repo_id: int) -> list[sqlite3.Row]:
    """The corpus of a repository version in its order: rows with ``file_id``, ``path`` and
    ``imports`` (JSON text)."""
    return named(
        conn,
        "SELECT pf.file_id, f.path, pf.imports FROM premise_files pf "
        "JOIN files f ON f.id = pf.file_id WHERE pf.repository_id = ? ORDER BY pf.corpus_ord",
        (repo_id,),
    ).fetchall()


def premise_rows(conn: sqlite3.Connection, file_id: int) -> sqlite3.Cursor:
    """The premises of one corpus file in order: rows with ``full_name``, ``code``,
    ``start_line``, ``start_col``, ``end_line``, ``end_col`` and ``kind``."""
    return named(
        conn,
        "SELECT full_name, code, start_line, start_col, end_line, end_col, kind "
        "FROM premises WHERE file_id = ? ORDER BY idx",
        (file_id,),
    )


def premise_dicts(conn: sqlite3.Connection, file_id: int) -> list[dict[str, Any]]:
    """The premises of one corpus file as ``corpus.jsonl`` writes them."""
    return [
        {
            "full_name": p["full_name"],
            "code": p["code"],
            "start": [p["start_line"], p["start_col"]],
            "end": [p["end_line"], p["end_col"]],
            "kind": p["kind"],
        }
        for p in premise_rows(conn, file_id)
    ]


def traced_paths(conn: sqlite3.Connection, repo_id: int) -> Iterator[str]:
    """The traced files of a repository version, in ``traced_files.jsonl`` order."""
    for (path,) in conn.execute(
        "SELECT path FROM files WHERE repository_id = ? AND traced_ord IS NOT NULL "
        "ORDER BY traced_ord",
        (repo_id,),
    ):
        yield path


class RepositoryQueries(DatabaseConnection):
    """Finding, listing, resolving, loading and deleting repository versions."""

    def get_repository(self, url: str, commit: str | None = None) -> RepositoryInfo | None:
        """The repository version ``url`` @ ``commit``; with no commit, the most recently processed
        version of ``url``. ``None`` when absent (as upstream)."""
        if commit is not None:
            rid = repository_id(self._conn, url, commit)
        else:
            row = self._conn.execute(
                "SELECT id FROM repositories WHERE url = ? "
                "ORDER BY processed_at DESC, id DESC LIMIT 1",
                (url,),
            ).fetchone()
            rid = row[0] if row else None
        return self._repository_by_id(rid) if rid is not None else None

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
            for chunk in chunks(list(ids)):
                m = marks(len(chunk))
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
                for row in named(
                    conn,
                    "SELECT id, url, name, commit_hash, lean_version, lean_dojo_version, "
                    f"date_processed, metadata, pr_url FROM repositories WHERE id IN ({m})",
                    chunk,
                ):
                    c = counts[row["id"]]
                    out[row["id"]] = RepositoryInfo(
                        id=row["id"],
                        url=row["url"],
                        name=row["name"],
                        commit=row["commit_hash"],
                        lean_version=row["lean_version"],
                        lean_dojo_version=row["lean_dojo_version"],
                        date_processed=row["date_processed"],
                        metadata=loads(row["metadata"]),
                        pr_url=row["pr_url"],
                        num_proven_theorems=c.get("proven", 0),
                        num_sorry_theorems_unproved=c.get("sorry_unproved", 0),
                        num_sorry_theorems_proved=c.get("sorry_proved", 0),
                        num_tactics=c.get("tactics", 0),
                        num_premise_files=c.get("premise_files", 0),
                        num_premises=c.get("premises", 0),
                        num_files_traced=c.get("traced", 0),
                    )
        return [out[i] for i in ids if i in out]

    def resolve_repositories(self, repositories: RepositoriesArg = None) -> list[RepositoryInfo]:
        """Repository versions from references: a :class:`RepositoryInfo`, an id, ``(url,
        commit)``, or a url (its latest version); ``None`` means all. Unknown ones raise
        :class:`RecordNotFoundError`."""
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
                raise RecordNotFoundError(f"no repository {ref!r} in {self.path}")
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
                raise RecordNotFoundError(f"repository {url!r} with commit {commit!r} not found")

    def load_repository(self, repository: RepositoryRef) -> Repository:
        """Materialise one repository version as a :class:`~lean_dojo_v2.data.Repository`
        (theorems in the order they were added, corpus, traced files)."""
        (info,) = self.resolve_repositories([repository])
        with self.snapshot() as conn:
            # TheoremQueries (a subclass; DynamicDatabase has both) gives the theorems.
            theorems = list(self.theorems(repository=info))  # type: ignore[attr-defined]
            corpus = [
                PremiseFile.from_dict(
                    {
                        "path": row["path"],
                        "imports": loads(row["imports"]),
                        "premises": premise_dicts(conn, row["file_id"]),
                    }
                )
                for row in corpus_rows(conn, info.id)
            ]
            traced = list(traced_paths(conn, info.id))
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

    def theorem_files_missing_from_corpus(self, repository: RepositoryRef) -> list[str]:
        """The files holding theorems of ``repository`` that its corpus lacks, sorted: their
        theorems have no accessible premises (LeanDojo's loaders fail on them)."""
        (info,) = self.resolve_repositories([repository])
        return self._missing_corpus_files(info.id)

    def _missing_corpus_files(self, repo_id: int) -> list[str]:
        from ..data.corpus import theorem_files_missing_from_corpus

        with self.snapshot() as conn:
            theorem_paths = [
                r[0]
                for r in conn.execute(
                    "SELECT path FROM files WHERE id IN "
                    "(SELECT DISTINCT file_id FROM theorems WHERE repository_id = ?)",
                    (repo_id,),
                )
            ]
            corpus = [row["path"] for row in corpus_rows(conn, repo_id)]
        return theorem_files_missing_from_corpus(theorem_paths, corpus)
