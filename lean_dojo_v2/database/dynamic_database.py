"""``DynamicDatabase``: repositories, theorems, premises, sorry status and proofs on SQLite.

The upstream (LeanAgent / LeanDojo-v2 1.0.9) keeps the whole database in memory and rewrites one
JSON file on every save; constructing it wipes the file. Here:

- the database is a SQLite file (WAL journal, foreign keys on, a schema version with migrations);
  opening an existing database never modifies its data, and a read-only opening
  (``readonly=True`` / :meth:`DynamicDatabase.open_readonly`) never writes at all;
- every write is one transaction: a repository is added whole or not at all, even if the process is
  killed midway, and readers (other connections, other processes) see either state, never a mix;
- reads stream rows (``theorems()`` pages by id; ``export_merged_data`` fetches theorems in chunks),
  so memory does not grow with the database;
- adding a repository costs time proportional to that repository only.

The class is assembled from one part per concern, each in its own module: opening and transactions
(:mod:`.connection`), repository versions (:mod:`.repositories`), adding them (:mod:`.adding`, rows
built by :mod:`.ingest`), the curriculum (:mod:`.curriculum`), theorem queries (:mod:`.queries`),
proofs and training runs (:mod:`.proofs`), dataset export (:mod:`.export`) and the upstream JSON
format (:mod:`.upstream`).
"""

from __future__ import annotations

from pathlib import Path

from .adding import RepositoryAdding
from .common import RepositoriesArg, RepositoryRef, StatusFilter
from .connection import DEFAULT_DB_NAME, default_path
from .export import DatasetExport
from .records import RepositoryInfo
from .schema import SCHEMA_VERSION
from .upstream import export_upstream_json, import_upstream_json

__all__ = [
    "DEFAULT_DB_NAME",
    "DynamicDatabase",
    "RepositoriesArg",
    "RepositoryRef",
    "StatusFilter",
    "default_path",
]


class DynamicDatabase(RepositoryAdding, DatasetExport):
    """A database of traced repositories on SQLite.

    ``DynamicDatabase(path)`` opens the file, creating it when absent; the default is
    ``RAID_DIR/dynamic_database.sqlite``. Use it as a context manager or call :meth:`close`.
    ``durable=True`` syncs every commit to disk (survives power loss, slower); the default already
    survives a crash or kill of the process. ``create=False`` opens an existing database only
    (:class:`~.errors.DatabaseNotFoundError` otherwise). ``readonly=True`` (or
    :meth:`open_readonly`) opens an existing database for reading only: nothing is created,
    migrated or written, and a read-only file or directory can be read.
    """

    def _schema_target(self) -> int:
        return SCHEMA_VERSION  # looked up here at each opening (tests raise it to add a migration)

    def import_json(self, path: str | Path) -> list[RepositoryInfo]:
        """Import an upstream LeanAgent / LeanDojo-v2 ``dynamic_database.json`` (one transaction;
        repository versions already present are skipped). Returns the repositories imported."""
        return import_upstream_json(self, path)

    def export_json(
        self,
        path: str | Path,
        repositories: RepositoriesArg = None,
    ) -> Path:
        """Write the upstream ``dynamic_database.json`` format (what ``DynamicDatabase.to_json``
        writes in LeanDojo-v2 1.0.9), streamed, atomically."""
        return export_upstream_json(self, path, repositories)

    # Upstream name.
    def to_json(self, file_path: str | Path) -> Path:
        return self.export_json(file_path)
