"""Errors of the database layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LeanDojoError

if TYPE_CHECKING:
    from .records import RepositoryInfo


class DatabaseError(LeanDojoError):
    """The database cannot do what was asked: a file that is not a database, a schema newer than
    this library, a repository or theorem that is not there, a conflicting write."""


class RecordNotFoundError(DatabaseError, LookupError):
    """A repository, theorem or training run that the database does not hold."""


class DatabaseNotFoundError(DatabaseError, FileNotFoundError):
    """No database at the path given (or an empty file) where an existing one is needed: only
    ``db add`` / ``db import-json`` (and ``DynamicDatabase(path)`` with ``create=True``) create
    one."""


class CorruptDatabaseError(DatabaseError):
    """The file is not a SQLite database, or one whose pages are damaged; restore it from a backup
    or choose another file."""


class DatabasePermissionError(DatabaseError, PermissionError):
    """The database file or its directory cannot be created, read or written by this user."""


class RepositoryExistsError(DatabaseError):
    """``add_repository(..., exist_ok=False)`` found the url + commit already in the database
    (possibly added by another process meanwhile). ``repository`` is the stored version."""

    def __init__(self, message: str, repository: RepositoryInfo | None = None) -> None:
        super().__init__(message)
        self.repository = repository

    def __reduce__(self) -> tuple[Any, ...]:  # survive pickling with the repository
        return (type(self), (self.args[0], self.repository))
