"""Turning theorems, premise files and traced files into rows, a batch at a time.

:class:`Ingest` validates input and builds rows with *local* ids (0, 1, 2… within the repository
being added) and hands each batch to a sink. :class:`Executor` is the sink that writes: inside the
caller's write transaction it takes ``max(id) + 1`` of each table as the offset and inserts with the
offsets and the repository id written into the statements as numbers, so no row has to be rebuilt.
Because rows do not depend on the database, they can also be built in another process and written
later (:meth:`DynamicDatabase.add_repositories`). Memory stays at one batch (or, when built
elsewhere, at one repository).
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

import orjson

from ..data import DatasetDir, PremiseFile, Theorem, find_sorry_tokens, read_theorems
from ..data.dataset import CORPUS_FILE, TRACED_FILES_FILE, missing_dataset_parts
from ..data.jsonio import gc_paused, loads, read_json
from ..data.model import THEOREM_KEYS
from ..data.splits import SPLIT_NAMES
from ..errors import (
    DataFormatError,
    DatasetNotFoundError,
    DuplicateTheoremError,
    IncompleteDatasetError,
)

BATCH_THEOREMS = 512
_KNOWN = frozenset(THEOREM_KEYS)

# Statements with the repository id and the id offsets written in as numbers (``{repo}``,
# ``{file}``, ``{theorem}``, ``{ref}``, ``{premise}``): fewer values to bind per row, and local ids
# need no rewriting. Binding values dominates the cost of adding a repository.
_SQL = {
    "file": "INSERT INTO files (id, repository_id, path, traced_ord) VALUES (? + {file}, {repo}, ?, ?)",
    "theorem": (
        "INSERT INTO theorems (id, repository_id, file_id, full_name, start_line, start_col, "
        "end_line, end_col, num_tactics) VALUES (? + {theorem}, {repo}, ? + {file}, ?, ?, ?, ?, ?, ?)"
    ),
    "theorem_full": (
        "INSERT INTO theorems (id, repository_id, file_id, full_name, start_line, start_col, "
        "end_line, end_col, num_tactics, sorry_status, sorry_source, url, commit_hash, "
        "theorem_statement, has_statement, extra, upstream_difficulty) "
        "VALUES (? + {theorem}, {repo}, ? + {file}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ),
    "tactic": (
        "INSERT INTO tactics (theorem_id, idx, tactic, annotated_tactic, state_before, state_after) "
        "VALUES (? + {theorem}, ?, ?, ?, ?, ?)"
    ),
    "ref": (
        "INSERT INTO premise_refs (id, repository_id, full_name, def_path, def_line, def_col, "
        "def_end_line, def_end_col) VALUES (? + {ref}, {repo}, ?, ?, ?, ?, ?, ?)"
    ),
    "use": (
        "INSERT INTO premise_uses (theorem_id, tactic_idx, idx, ref_id) "
        "VALUES (? + {theorem}, ?, ?, ? + {ref})"
    ),
    "premise_file": (
        "INSERT INTO premise_files (file_id, repository_id, corpus_ord, imports) "
        "VALUES (? + {file}, {repo}, ?, ?)"
    ),
    "premise": (
        "INSERT INTO premises (id, file_id, idx, full_name, code, start_line, start_col, "
        "end_line, end_col, kind) VALUES (? + {premise}, ? + {file}, ?, ?, ?, ?, ?, ?, ?, ?)"
    ),
}
# Order in which a batch is written (parents before children).
KINDS = ("file", "ref", "premise_file", "premise", "theorem", "theorem_full", "tactic", "use")

Batch = tuple[str, list[tuple]]
Sink = Callable[[str, list[tuple]], None]
RefKey = tuple[str, str, int, int, int, int]
"""A premise reference (provenance): name, defining file, start line/column, end line/column."""
RawTactic = tuple[str, str, list[RefKey], str, str]
"""A traced tactic as rows are built from it: text, annotated text, references, states."""
RawPos = Sequence[int]
"""A position as ``[line, column]``: a raw record's list or a :class:`~lean_dojo_v2.data.Pos`."""
RawTheorem = tuple[
    str,
    str,
    list[int],
    list[int],
    list[RawTactic],
    str,
    str,
    str | None,
    bool,
    dict[str, Any] | None,
]
"""The leading arguments of :meth:`Ingest._queue` read from a well-formed raw theorem record."""
CorpusRow = tuple[str, str, int, int, int, int, str]
"""A premise as rows are built from it: name, code, start line/column, end line/column, kind."""


class RepositoryOptions(TypedDict, total=False):
    """What :meth:`DynamicDatabase.add_repository` is told about a repository (None: not given)."""

    url: str | None
    commit: str | None
    name: str | None
    lean_version: str | None
    lean_dojo_version: str | None
    metadata: Mapping[str, Any] | None
    source_dir: str | Path | None


class Executor:
    """Writes batches of one repository inside the caller's open write transaction.

    Rows go in as multi-row ``INSERT … VALUES (…), (…), …`` statements of up to 64 rows (standard
    SQL): per statement, not per row, is where a driver spends its time.
    """

    ROWS_PER_STATEMENT = 64

    def __init__(self, conn: sqlite3.Connection, repository_id: int) -> None:
        self.conn = conn
        offsets = {
            "repo": int(repository_id),
            "file": _next_id(conn, "files"),
            "theorem": _next_id(conn, "theorems"),
            "ref": _next_id(conn, "premise_refs"),
            "premise": _next_id(conn, "premises"),
        }
        self._one: dict[str, str] = {}
        self._many: dict[str, tuple[str, int]] = {}
        for kind, sql in _SQL.items():
            sql = sql.format(**offsets)
            self._one[kind] = sql
            head, values = sql.split(" VALUES ", 1)
            per_row = values.count("?")
            k = max(1, min(self.ROWS_PER_STATEMENT, 999 // per_row))
            self._many[kind] = (head + " VALUES " + ", ".join([values] * k), k)

    def __call__(self, kind: str, rows: list[tuple]) -> None:
        n = len(rows)
        if not n:
            return
        sql, k = self._many[kind]
        execute = self.conn.execute
        flat = chain.from_iterable
        i = 0
        while i + k <= n:
            execute(sql, tuple(flat(rows[i : i + k])))
            i += k
        if i < n:
            self.conn.executemany(self._one[kind], rows[i:])


def encode_json(value: object) -> str:
    """JSON text for values kept verbatim (``extra`` keys, metadata); ``json.loads`` gives back an
    equal value."""
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _json_default(value: object) -> object:
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store a {type(value).__name__} in the database: {value!r}")


class SourceSorry:
    """Finds ``sorry`` tokens in the Lean sources of a checkout (``root/<file_path>``).

    A theorem counts as sorry when a real ``sorry`` token (not in a comment, string or identifier;
    see :mod:`lean_dojo_v2.data.sorry`) lies between its start and end. Files are scanned once;
    missing files (e.g. dependencies not checked out) have no sorry.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DataFormatError(f"source directory {self.root} does not exist")
        self._cache: dict[str, list[tuple[int, int]]] = {}

    def positions(self, file_path: str) -> list[tuple[int, int]]:
        hit = self._cache.get(file_path)
        if hit is None:
            path = self.root / file_path
            try:
                text = path.read_text(encoding="utf-8")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                hit = []
            except UnicodeDecodeError as exc:
                raise DataFormatError(f"not UTF-8 text: {exc.reason}", file=path) from exc
            else:
                hit = sorted(find_sorry_tokens(text)) if "sorry" in text else []
            self._cache[file_path] = hit
        return hit

    def covers(self, file_path: str, start: RawPos, end: RawPos) -> bool:
        positions = self.positions(file_path)
        if not positions:
            return False
        i = bisect.bisect_left(positions, (start[0], start[1]))
        return i < len(positions) and positions[i] <= (end[0], end[1])


class Ingest:
    """Validates one repository version's input and builds its rows with local ids, handing them to
    ``sink(kind, rows)`` a batch at a time (see :data:`KINDS`; parents before children)."""

    def __init__(
        self,
        url: str,
        commit: str,
        sink: Sink,
        source: SourceSorry | None = None,
    ) -> None:
        self.url = url
        self.commit = commit
        self.sink = sink
        self.source = source
        self._files: dict[str, int] = {}
        self._next_file = 0
        self._next_theorem = 0
        self._next_premise = 0
        self._next_ref = 0
        self._refs: dict[tuple[str, str, int, int, int, int], int] = {}
        self._ref_rows: list[tuple] = []
        self._theorem_rows_full: list[tuple] = []
        self._seen: dict[tuple[str, str, int, int], tuple[str | None, int | None]] = {}
        self._file_rows: list[tuple] = []
        self._theorem_rows: list[tuple] = []
        self._tactic_rows: list[tuple] = []
        self._use_rows: list[tuple] = []
        self._corpus_ord = 0
        self._corpus_paths: set[str] = set()
        self._premise_file_rows: list[tuple] = []
        self._premise_rows: list[tuple] = []
        self.num_theorems = 0

    def _send(self, kind: str, rows: list[tuple]) -> None:
        if rows:
            self.sink(kind, rows)

    # -- files ---------------------------------------------------------------------------------

    def file_id(self, path: str, traced_ord: int | None = None) -> int:
        fid = self._files.get(path)
        if fid is None:
            fid = self._next_file
            self._next_file += 1
            self._files[path] = fid
            self._file_rows.append((fid, path, traced_ord))
        return fid

    def add_traced_files(self, paths: Iterable[str], where: str | None = None) -> None:
        seen: set[str] = set()
        for i, path in enumerate(paths):
            if not isinstance(path, str):
                raise DataFormatError(
                    f"expected a file path, got {type(path).__name__}", file=where, record=i
                )
            if path in seen:
                continue
            seen.add(path)
            self.file_id(path, i)
        self._flush_files()

    def _flush_files(self) -> None:
        if self._file_rows:
            self._send("file", self._file_rows)
            self._file_rows = []

    # -- corpus --------------------------------------------------------------------------------

    def add_premise_files(self, files: Iterable[PremiseFile], where: str | None = None) -> int:
        """Add corpus entries in order; returns how many. A path given twice is an error."""
        n = 0
        for i, pf in enumerate(files):
            self._corpus_entry(*_corpus_entry_of(pf), where, i)
            n += 1
        self._flush_corpus()
        return n

    def add_corpus_file(self, path: str | Path) -> int:
        """Add the entries of a ``corpus.jsonl``, line by line (well-formed lines go straight to
        rows; others are parsed by :meth:`PremiseFile.from_dict` for a precise error)."""
        n = 0
        with open(path, "rb") as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    d = orjson.loads(line)
                except orjson.JSONDecodeError:
                    d = _parse_json_line(line, path, i)
                entry = _raw_corpus_entry(d)
                if entry is None:
                    try:
                        entry = _corpus_entry_of(PremiseFile.from_dict(d))
                    except DataFormatError as exc:
                        raise exc.located(file=path, record=i) from None
                self._corpus_entry(*entry, str(path), i)
                n += 1
        self._flush_corpus()
        return n

    def _corpus_entry(
        self,
        path: str,
        imports: list[str],
        premises: list[CorpusRow],
        where: str | None,
        record: int,
    ) -> None:
        if path in self._corpus_paths:
            raise DataFormatError(
                f"file {path!r} appears twice in the corpus", file=where, record=record
            )
        self._corpus_paths.add(path)
        fid = self.file_id(path)
        self._premise_file_rows.append((fid, self._corpus_ord, encode_json(imports)))
        self._corpus_ord += 1
        pid = self._next_premise
        rows = self._premise_rows
        for j, p in enumerate(premises):
            rows.append((pid, fid, j, *p))
            pid += 1
        self._next_premise = pid
        if len(rows) >= 4096:
            self._flush_corpus()

    def _flush_corpus(self) -> None:
        self._flush_files()
        self._send("premise_file", self._premise_file_rows)
        self._premise_file_rows = []
        self._send("premise", self._premise_rows)
        self._premise_rows = []

    # -- theorems ------------------------------------------------------------------------------
    #
    # One path builds a theorem's rows, whatever it came from: ``add_theorem`` (a Theorem) and
    # ``add_records`` (raw split-file records, checked without building Theorem objects) both put
    # its tactics in the same plain form and hand them to ``_queue``.

    def add_theorem(
        self,
        t: Theorem,
        *,
        file: str | None = None,
        record: int | None = None,
        status: str | None = None,
        sorry_source: str | None = None,
        upstream_difficulty: str | None = None,
    ) -> None:
        """Queue one theorem. ``status`` None means: detect (a tactic with a ``sorry`` token, or a
        ``sorry`` in the source between the theorem's start and end)."""
        tactics = [
            (
                tac.tactic,
                tac.annotated_tactic,
                [(a.full_name, a.def_path, *a.def_pos, *a.def_end_pos) for a in tac.annotations],
                tac.state_before,
                tac.state_after,
            )
            for tac in t.traced_tactics
        ]
        self._queue(
            t.file_path,
            t.full_name,
            t.start,
            t.end,
            tactics,
            t.url,
            t.commit,
            t.theorem_statement,
            t.has_statement_field or t.theorem_statement is not None,
            t.extra or None,
            status,
            sorry_source,
            upstream_difficulty,
            file,
            record,
        )

    def add_records(self, records: object, file: str) -> None:
        """Queue the raw records of one split file (a JSON list, as parsed).

        Well-formed records (the LeanDojo shape with ``[line, column]`` lists) are queued as they
        are; anything else is handed to :meth:`Theorem.from_dict`, which either accepts it (other
        position forms) or raises the error naming the record and field.
        """
        if not isinstance(records, list):
            raise DataFormatError(
                f"expected a JSON list of records, got {type(records).__name__}", file=file
            )
        for i, d in enumerate(records):
            raw = _raw_theorem(d)
            if raw is not None:
                self._queue(*raw, None, None, None, file, i)
                continue
            try:
                t = Theorem.from_dict(d)
            except DataFormatError as exc:
                raise exc.located(file=file, record=i) from None
            self.add_theorem(t, file=file, record=i)

    def _queue(
        self,
        file_path: str,
        full_name: str,
        start: RawPos,
        end: RawPos,
        tactics: list[RawTactic],
        url: str,
        commit: str,
        statement: str | None,
        has_statement: bool,
        extra: dict[str, Any] | None,
        status: str | None,
        sorry_source: str | None,
        upstream_difficulty: str | None,
        file: str | None,
        record: int | None,
    ) -> None:
        """The rows of one theorem: duplicate check, sorry status, theorem, tactic and premise-use
        rows."""
        key = (file_path, full_name, start[0], start[1])
        first = self._seen.get(key)
        if first is not None:
            where = f" (first at file {first[0]}, record {first[1]})" if first[0] else ""
            raise DuplicateTheoremError(
                f"duplicate theorem {full_name!r} at {file_path}:{start[0]}:{start[1]}{where}",
                file=file,
                record=record,
            )
        self._seen[key] = (file, record)
        if status is None:
            if any("sorry" in tac[0] and find_sorry_tokens(tac[0]) for tac in tactics):
                status, sorry_source = "sorry_unproved", "tactic"
            elif self.source is not None and self.source.covers(file_path, start, end):
                status, sorry_source = "sorry_unproved", "source"
            else:
                status, sorry_source = "proven", None
        tid = self._next_theorem
        self._next_theorem += 1
        tactic_rows = self._tactic_rows
        use_rows = self._use_rows
        refs_get = self._refs.get
        prev_after = None
        for i, (text, marked, refs, before, after) in enumerate(tactics):
            tactic_rows.append(
                (
                    tid,
                    i,
                    text,
                    None if marked == text else marked,
                    None if before == prev_after else before,
                    after,
                )
            )
            prev_after = after
            for j, rkey in enumerate(refs):
                rid = refs_get(rkey)
                if rid is None:
                    rid = self._new_ref(rkey)
                use_rows.append((tid, i, j, rid))

        fid = self.file_id(file_path)
        url_o = None if url == self.url else url
        commit_o = None if commit == self.commit else commit
        n = len(tactics)
        if (
            status == "proven"
            and url_o is None
            and commit_o is None
            and not has_statement
            and extra is None
            and upstream_difficulty is None
        ):
            # The common case binds 8 values instead of 16.
            self._theorem_rows.append((tid, fid, full_name, start[0], start[1], end[0], end[1], n))
        else:
            self._theorem_rows_full.append(
                (
                    tid,
                    fid,
                    full_name,
                    start[0],
                    start[1],
                    end[0],
                    end[1],
                    n,
                    status,
                    sorry_source,
                    url_o,
                    commit_o,
                    statement,
                    1 if has_statement else 0,
                    encode_json(extra) if extra else None,
                    upstream_difficulty,
                )
            )
        self.num_theorems += 1
        if len(self._theorem_rows) + len(self._theorem_rows_full) >= BATCH_THEOREMS:
            self.flush()

    def _new_ref(self, key: RefKey) -> int:
        rid = self._refs[key] = self._next_ref
        self._next_ref += 1
        self._ref_rows.append((rid, *key))
        return rid

    def flush(self) -> None:
        """Hand the queued rows to the sink (files and references first: rows refer to them)."""
        self._flush_files()
        self._send("ref", self._ref_rows)
        self._ref_rows = []
        self._send("theorem", self._theorem_rows)
        self._theorem_rows = []
        self._send("theorem_full", self._theorem_rows_full)
        self._theorem_rows_full = []
        self._send("tactic", self._tactic_rows)
        self._tactic_rows = []
        self._send("use", self._use_rows)
        self._use_rows = []


@dataclass
class DatasetPlan:
    """What adding a dataset directory needs, resolved before reading any theorem."""

    path: Path
    url: str
    commit: str
    name: str | None
    lean_version: str | None
    lean_dojo_version: str | None
    metadata: dict[str, Any]
    split_files: list[Path]
    corpus_path: Path | None
    traced_path: Path | None
    source_dir: Path | None = None

    def source(self) -> SourceSorry | None:
        return SourceSorry(self.source_dir) if self.source_dir is not None else None


def plan_dataset(
    path: Path, options: Mapping[str, Any] | None = None, *, partial: bool = False
) -> DatasetPlan:
    """What adding the dataset at ``path`` needs. ``options`` are the keyword arguments of
    :meth:`DynamicDatabase.add_repository` that describe the repository (``url``, ``commit``,
    ``name``, ``lean_version``, ``lean_dojo_version``, ``metadata``, ``source_dir``; absent or None:
    not given). Url and commit come from the options, else ``metadata.json`` (``from_repo``), else
    the first theorem record; the Lean and LeanDojo versions from the options or the metadata.

    The split files of one strategy (``random``, else ``novel_premises``) and ``corpus.jsonl`` are
    read; when one of them is missing, :class:`~lean_dojo_v2.errors.IncompleteDatasetError` names
    it, unless ``partial`` (then what is there is read)."""
    options = options or {}
    url, commit = options.get("url"), options.get("commit")
    lean_version, lean_dojo_version = options.get("lean_version"), options.get("lean_dojo_version")
    source_dir = options.get("source_dir")
    d = DatasetDir(path)
    strategy = "novel_premises" if _has_only_novel_premises(d.path) else "random"
    missing = [
        part
        for part in missing_dataset_parts(d.path)
        if part.startswith(f"{strategy}/") or part == CORPUS_FILE
    ]
    if missing and not partial:
        raise IncompleteDatasetError(d.path, missing, [m for m in missing if (d.path / m).exists()])
    meta = d.metadata()
    split_files = [d.split_path(strategy, s) for s in SPLIT_NAMES]
    split_files = [f for f in split_files if _optional_file(f) is not None]
    if not split_files:
        raise DatasetNotFoundError(f"{path}/{strategy} has no train/val/test.json")
    origin = meta.get("from_repo")
    if not isinstance(origin, dict):
        origin = {}
    url = url or origin.get("url")
    commit = commit or origin.get("commit")
    if not url or not commit:
        first = next((t for f in split_files for t in read_theorems(f)), None)
        if first is None:
            raise DataFormatError(
                "cannot tell the repository: no url/commit given, none in metadata.json and "
                "no theorem records",
                file=path,
            )
        url, commit = url or first.url, commit or first.commit
    if not isinstance(url, str) or not isinstance(commit, str):
        raise DataFormatError(
            "from_repo url and commit must be text", file=d.path / "metadata.json"
        )
    lean_dojo_version = lean_dojo_version or next(
        (
            meta[k]
            for k in ("lean_dojo_version", "leandojo_version", "lean_dojo_v2_version")
            if isinstance(meta.get(k), str)
        ),
        None,
    )
    if lean_version is None and isinstance(meta.get("lean_version"), str):
        lean_version = meta["lean_version"]
    merged = dict(meta)
    merged.update(options.get("metadata") or {})
    return DatasetPlan(
        path=d.path,
        url=url,
        commit=commit,
        name=options.get("name"),
        lean_version=lean_version,
        lean_dojo_version=lean_dojo_version,
        metadata=merged,
        split_files=split_files,
        corpus_path=_optional_file(d.path / CORPUS_FILE),
        traced_path=_optional_file(d.path / TRACED_FILES_FILE),
        source_dir=Path(source_dir) if source_dir is not None else None,
    )


def _has_only_novel_premises(path: Path) -> bool:
    def has(strategy: str) -> bool:
        return any((path / strategy / f"{s}.json").exists() for s in SPLIT_NAMES)

    return not has("random") and has("novel_premises")


def _optional_file(path: Path) -> Path | None:
    """``path`` when it is a file, None when absent; anything else (a directory) is an error."""
    if not path.exists():
        return None
    if not path.is_file():
        raise DataFormatError("not a file (a directory?); it must be a file", file=path)
    return path


def feed_dataset(plan: DatasetPlan, ingest: Ingest) -> None:
    """Traced files, corpus and theorems of a dataset directory, in that order."""
    if plan.traced_path is not None:
        ingest.add_traced_files(DatasetDir(plan.path).traced_files(), str(plan.traced_path))
    if plan.corpus_path is not None:
        ingest.add_corpus_file(plan.corpus_path)
    for f in plan.split_files:
        ingest.add_records(read_json(f), str(f))
    ingest.flush()


def prepare_dataset(plan: DatasetPlan) -> list[Batch]:
    """The rows of a dataset directory, built without a database (in a helper process of
    :meth:`DynamicDatabase.add_repositories`; an error raised here is pickled back whole, with
    its file, record and field)."""
    batches: list[Batch] = []
    with gc_paused():
        feed_dataset(
            plan,
            Ingest(
                plan.url,
                plan.commit,
                lambda kind, rows: batches.append((kind, rows)),
                plan.source(),
            ),
        )
    return batches


def write_batches(batches: list[Batch], sink: Sink) -> None:
    """Hand the batches :func:`prepare_dataset` made to ``sink`` (an :class:`Executor`), in order."""
    for kind, rows in batches:
        sink(kind, rows)


def _raw_theorem(d: object) -> RawTheorem | None:
    """The leading arguments of :meth:`Ingest._queue` (identity, tactics, url, commit, statement,
    extra keys) for a well-formed raw theorem record, else None (it takes the careful path)."""
    if type(d) is not dict:
        return None
    url = d.get("url")
    commit = d.get("commit")
    file_path = d.get("file_path")
    full_name = d.get("full_name")
    start = d.get("start")
    end = d.get("end")
    raw_tactics = d.get("traced_tactics")
    if not (
        type(url) is str
        and type(commit) is str
        and type(file_path) is str
        and type(full_name) is str
        and _is_pos(start)
        and _is_pos(end)
        and type(raw_tactics) is list
    ):
        return None
    has_statement = "theorem_statement" in d
    statement = d["theorem_statement"] if has_statement else None
    if statement is not None and type(statement) is not str:
        return None
    tactics = _raw_tactics(raw_tactics)
    if tactics is None:
        return None
    extra = None
    if len(d) != 7 + has_statement:
        extra = {k: v for k, v in d.items() if k not in _KNOWN}
    return (file_path, full_name, start, end, tactics, url, commit, statement, has_statement, extra)


def _raw_tactics(items: list[Any]) -> list[RawTactic] | None:
    """Raw traced tactics in the form :meth:`Ingest._queue` takes; None when one is not exactly
    the LeanDojo shape (a missing key, another type, a position that is not two integers)."""
    out: list[RawTactic] = []
    try:
        for tac in items:
            if type(tac) is not dict:
                return None
            text = tac["tactic"]
            marked, provenances = tac["annotated_tactic"]
            before = tac["state_before"]
            after = tac["state_after"]
            if not (_all_str(text, marked, before, after) and type(provenances) is list):
                return None
            refs: list[RefKey] = []
            for a in provenances:
                if type(a) is not dict:
                    return None
                name = a["full_name"]
                path = a["def_path"]
                l1, c1 = a["def_pos"]
                l2, c2 = a["def_end_pos"]
                if not (
                    _all_str(name, path)
                    and type(l1) is int
                    and type(c1) is int
                    and type(l2) is int
                    and type(c2) is int
                ):
                    return None
                refs.append((name, path, l1, c1, l2, c2))
            out.append((text, marked, refs, before, after))
    except (KeyError, TypeError, ValueError):
        return None
    return out


def _parse_json_line(line: bytes, path: str | Path, record: int) -> object:
    """A JSON line orjson refused: parsed by ``json`` for its leniency and messages; bytes that
    are not UTF-8 are named as such (``json`` would guess another encoding)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line); the file must be "
            "UTF-8",
            file=path,
            record=record,
        ) from None
    return loads(text, file=path, record=record)


def _corpus_entry_of(pf: PremiseFile) -> tuple[str, list[str], list[CorpusRow]]:
    premises = [
        (p.full_name, p.code, p.start[0], p.start[1], p.end[0], p.end[1], p.kind)
        for p in pf.premises
    ]
    return pf.path, list(pf.imports), premises


def _raw_corpus_entry(d: object) -> tuple[str, list[str], list[CorpusRow]] | None:
    """(path, imports, premise rows) of a well-formed raw corpus line, else None."""
    if type(d) is not dict:
        return None
    path = d.get("path")
    imports = d.get("imports")
    premises = d.get("premises")
    if type(path) is not str or type(imports) is not list or type(premises) is not list:
        return None
    for imp in imports:
        if type(imp) is not str:
            return None
    rows = []
    for p in premises:
        if type(p) is not dict:
            return None
        name = p.get("full_name")
        code = p.get("code")
        start = p.get("start")
        end = p.get("end")
        kind = p.get("kind")
        if not (
            type(name) is str
            and type(code) is str
            and type(kind) is str
            and _is_pos(start)
            and _is_pos(end)
        ):
            return None
        rows.append((name, code, start[0], start[1], end[0], end[1], kind))
    return path, imports, rows


def _all_str(*values: object) -> bool:
    """Whether every value is exactly a ``str`` (the fast paths trust nothing else)."""
    for v in values:
        if type(v) is not str:
            return False
    return True


def _is_pos(v: object) -> TypeGuard[list[int]]:
    """A raw ``[line, column]`` position (exact types: the fast paths trust nothing else)."""
    return type(v) is list and len(v) == 2 and type(v[0]) is int and type(v[1]) is int


def _next_id(conn: sqlite3.Connection, table: str) -> int:
    row = conn.execute(f"SELECT MAX(id) FROM {table}").fetchone()
    return (row[0] or 0) + 1
