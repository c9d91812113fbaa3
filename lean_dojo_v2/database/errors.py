"""Errors of the database layer."""

from __future__ import annotations

from ..errors import LeanDojoError


class DatabaseError(LeanDojoError):
    """The database cannot do what was asked: a file that is not a database, a schema newer than
    this library, a repository or theorem that is not there, a conflicting write."""


class NotFoundError(DatabaseError, LookupError):
    """A repository, theorem or training run that the database does not hold."""
