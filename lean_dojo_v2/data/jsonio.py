"""JSON in LeanDojo's own serialisation, atomic writes, and errors that say where input is broken.

LeanDojo writes its files with Python's ``json`` defaults (ASCII escapes, so characters outside
the BMP appear as surrogate pairs; ``", "`` and ``": "`` separators; no trailing newline for
``.json``; one object and ``\\n`` per line for ``.jsonl``). We write the same bytes.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson

from ..errors import DataFormatError, DatasetNotFoundError

T = TypeVar("T")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during bulk parsing or writing.

    Records become millions of small acyclic objects; with the collector on, its repeated passes
    over the growing heap cost more than the parsing itself (3x on a 100k-theorem split file).
    Nothing created here forms cycles, so reference counting frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def fix_mode(path: str | Path, directory: bool = False) -> None:
    """Give a file made by ``tempfile`` (0600/0700) the permissions a plain ``open`` would."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


# Exactly json.dumps' defaults; kept as one encoder so the hot loop skips argument handling.
_ENCODER = json.JSONEncoder()


def dumps(obj: object) -> str:
    """``json.dumps(obj)`` with default settings (LeanDojo's serialisation)."""
    return _ENCODER.encode(obj)


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only on success,
    so a reader never sees a half-written file and a failure leaves the old file untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = "b" in mode
        with os.fdopen(
            fd, mode, encoding=None if binary else "utf-8", newline=None if binary else ""
        ) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        fix_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_list(
    path: str | Path,
    items: Iterable[Any],
    to_dict: Callable[[Any], Any] = lambda x: x,
    *,
    encode: Callable[[Any], str] | None = None,
) -> int:
    """Stream a JSON list to ``path`` (same bytes as ``json.dumps(list)``) without building it in
    memory. ``encode`` (item → JSON text) replaces ``to_dict`` + encoding, e.g. to reuse text
    already encoded. Returns the number of items written."""
    if encode is None:
        encode = lambda item: _ENCODER.encode(to_dict(item))  # noqa: E731
    n = 0
    with atomic_write(path) as fh:
        fh.write("[")
        for item in items:
            if n:
                fh.write(", ")
            fh.write(encode(item))
            n += 1
        fh.write("]")
    return n


def write_jsonl(
    path: str | Path, items: Iterable[Any], to_dict: Callable[[Any], Any] = lambda x: x
) -> int:
    """Write one JSON object per line (LeanDojo's ``.jsonl``), atomically."""
    n = 0
    with atomic_write(path) as fh:
        for item in items:
            fh.write(_ENCODER.encode(to_dict(item)))
            fh.write("\n")
            n += 1
    return n


def write_json(path: str | Path, obj: object) -> None:
    with atomic_write(path) as fh:
        fh.write(_ENCODER.encode(obj))


def _require_file(path: Path) -> None:
    if path.is_dir():
        raise DataFormatError("is a directory, expected a file; give the file's path", file=path)
    if not path.is_file():
        raise DatasetNotFoundError(f"no such file: {path}")


def _decode_utf8(data: bytes, path: Path | None, offset: int = 0, record: int | None = None) -> str:
    """``data`` as text; on bad bytes a :class:`DataFormatError` with the file and the byte
    offset (``offset`` is where ``data`` starts in the file)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"not UTF-8 text ({exc.reason} at byte offset {offset + exc.start}); re-encode the "
            "file as UTF-8",
            file=path,
            record=record,
        ) from None


MAX_DEPTH = 1024
"""The deepest nesting of arrays and objects read (orjson's limit; Python's ``json`` would
exhaust the interpreter's recursion limit before it)."""


def loads(
    data: str | bytes,
    *,
    file: str | Path | None = None,
    record: int | None = None,
    offset: int = 0,
) -> Any:
    """Parse JSON text: the one JSON reader of the package. orjson does the common case (about
    twice as fast as ``json`` on large split files); on any failure the standard parser runs, so
    error messages and leniency (lone surrogates, which Python's json accepts) are those of
    ``json``. Every failure is a :class:`DataFormatError` naming ``file`` and ``record`` (a
    JSONL line: the message then gives the column only; ``offset``: where the line starts in the
    file, for bytes that are not UTF-8), nesting deeper than :data:`MAX_DEPTH` included (the
    standard parser would recurse until a ``RecursionError``)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise _too_deep(file, record) from None
    path = Path(file) if file is not None else None
    text = _decode_utf8(data, path, offset, record) if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = (
            f"line {exc.lineno}, column {exc.colno}" if record is None else f"column {exc.colno}"
        )
        raise DataFormatError(
            f"invalid JSON at {where}: {exc.msg}", file=file, record=record
        ) from None
    except RecursionError:
        raise _too_deep(file, record) from None


def _too_deep(file: str | Path | None, record: int | None) -> DataFormatError:
    return DataFormatError(
        f"JSON nested more than {MAX_DEPTH} levels deep; no file this library reads nests so "
        "deep: check what wrote it",
        file=file,
        record=record,
    )


def read_json(path: str | Path) -> object:
    """Parse a JSON file (:func:`loads`)."""
    path = Path(path)
    _require_file(path)
    return loads(path.read_bytes(), file=path)


def read_json_list(path: str | Path, parse: Callable[[Any], T]) -> list[T]:
    """Read a JSON list and turn each element into an object with ``parse``.

    Elements are replaced one by one so the raw dictionaries can be freed as we go (peak memory
    stays near that of the parsed objects). Errors name the file, the record index and the field.
    """
    path = Path(path)
    with gc_paused():
        return _parse_records(path, read_json(path), parse)


def _parse_records(path: Path, records: object, parse: Callable[[Any], T]) -> list[T]:
    if not isinstance(records, list):
        raise DataFormatError(
            f"expected a JSON list of records, got {type(records).__name__}", file=path
        )
    for i in range(len(records)):
        try:
            records[i] = parse(records[i])
        except DataFormatError as exc:
            raise exc.located(file=path, record=i) from None
    return records


def iter_jsonl_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line index, parsed JSON)`` for each non-blank line of a ``.jsonl`` file, lazily.

    Errors are :class:`DataFormatError` naming the file and the 0-based line (bad JSON, bytes
    that are not UTF-8 with their byte offset, a directory in place of the file).
    """
    path = Path(path)
    _require_file(path)
    with path.open("rb") as fh:
        offset = 0
        for i, line in enumerate(fh):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            yield i, loads(line, file=path, record=i, offset=start)


def iter_jsonl(path: str | Path, parse: Callable[[Any], T]) -> Iterator[T]:
    """Parse a ``.jsonl`` file lazily; the record index in errors is the 0-based line number."""
    path = Path(path)
    for i, raw in iter_jsonl_records(path):
        try:
            yield parse(raw)
        except DataFormatError as exc:
            raise exc.located(file=path, record=i) from None
