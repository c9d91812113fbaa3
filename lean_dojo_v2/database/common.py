"""Small helpers shared by the modules of the database: chunked ``IN`` lists, dates, named rows."""

from __future__ import annotations

import datetime as _dt
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import DataFormatError
from .records import RepositoryInfo

RepositoryRef = RepositoryInfo | int | str | tuple[str, str]
"""A repository version: its record, its id, ``(url, commit)`` or a url (its latest version)."""
RepositoriesArg = RepositoryRef | Iterable[RepositoryRef] | None
StatusFilter = str | Iterable[str] | None

IN_CHUNK = 500
"""Most values bound in one ``IN (…)`` list."""


def now() -> str:
    return _dt.datetime.now().isoformat()


def parse_date(value: object, field: str = "metadata.date_processed") -> tuple[str, float]:
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


def chunks(items: Sequence[Any], n: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def marks(n: int) -> str:
    """``?, ?, …`` for an ``IN`` list of ``n`` values."""
    return ",".join("?" * n)


def named(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
    """Run ``sql`` with rows read by column name (:class:`sqlite3.Row`); the connection's own row
    type (plain tuples, what users of ``db.connection`` get) is left alone."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    return cur.execute(sql, params)
