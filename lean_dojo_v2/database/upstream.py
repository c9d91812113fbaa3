"""Reading and writing the upstream ``dynamic_database.json`` (LeanAgent / LeanDojo-v2 1.0.9).

The upstream file is ``json.dump({"repositories": [repo.to_dict(), ...]}, indent=2,
ensure_ascii=False)``. A repository object holds ``url, name, commit, lean_version,
lean_dojo_version, metadata`` (with ``date_processed`` in ISO form), its counts, three theorem lists
by sorry status (``proven_theorems``, ``sorry_theorems_proved``, ``sorry_theorems_unproved``),
``premise_files``, ``files_traced`` and ``pr_url``. Positions are strings ``"(line, column)"``; a
theorem carries ``url``/``commit`` (always its repository's) and ``difficulty_rating``.

Import keeps the bucket as the sorry status and the ``difficulty_rating`` as read, so exporting
the same repositories writes the same bytes. Export streams theorem by theorem; only import has to
parse the whole file (it is one JSON document).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..data import PremiseFile, Theorem
from ..data.jsonio import atomic_write, gc_paused, loads, read_json
from ..errors import DataFormatError, OutputExistsError
from .common import RepositoriesArg
from .ingest import Executor, Ingest
from .queries import TheoremQueries
from .records import RepositoryInfo, StoredTheorem
from .repositories import corpus_rows, insert_repository, premise_rows, traced_paths

# This module needs only the query part of the database (transactions, snapshots, repository and
# theorem look-ups) and names that class, ``TheoremQueries``: ``dynamic_database`` imports this
# module, never the other way round (no import circle, not even one behind TYPE_CHECKING).

BUCKETS = (
    ("proven_theorems", "proven"),
    ("sorry_theorems_proved", "sorry_proved"),
    ("sorry_theorems_unproved", "sorry_unproved"),
)
_REPO_KEYS = ("url", "name", "commit", "lean_version", "lean_dojo_version", "metadata")


def _path(p: str) -> str:
    # The upstream keeps paths as ``Path`` objects and writes ``str(path)``.
    return str(PurePosixPath(p)) if p else "."


# -- import -------------------------------------------------------------------------------------


def import_upstream_json(db: TheoremQueries, path: str | Path) -> list[RepositoryInfo]:
    path = Path(path)
    with gc_paused():
        data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("repositories"), list):
        raise DataFormatError('expected {"repositories": [...]}', file=path)
    added: list[int] = []
    with db.transaction() as conn, gc_paused():
        for i, repo in enumerate(data["repositories"]):
            try:
                rid = _import_repository(db, conn, repo)
            except DataFormatError as exc:
                raise exc.located(file=path, record=i) from None
            if rid is not None:
                added.append(rid)
            data["repositories"][i] = None  # free as we go
    return db.resolve_repositories(added) if added else []


def _import_repository(db: TheoremQueries, conn: sqlite3.Connection, repo: object) -> int | None:
    if not isinstance(repo, dict):
        raise DataFormatError(f"expected a repository object, got {type(repo).__name__}")
    for key in _REPO_KEYS:
        if key not in repo:
            raise DataFormatError("missing field", field=key)
    url, commit = repo["url"], repo["commit"]
    if not isinstance(url, str) or not isinstance(commit, str):
        raise DataFormatError("url and commit must be text", field="url")
    metadata = repo["metadata"]
    if not isinstance(metadata, dict) or "date_processed" not in metadata:
        raise DataFormatError("expected an object with date_processed", field="metadata")
    if conn.execute(
        "SELECT 1 FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
    ).fetchone():
        return None
    name = repo["name"]
    if not isinstance(name, str):
        raise DataFormatError("expected text", field="name")
    pr_url = repo.get("pr_url")
    rid = insert_repository(
        conn,
        url=url,
        commit=commit,
        name=name,
        lean_version=repo["lean_version"],
        lean_dojo_version=repo["lean_dojo_version"],
        metadata=metadata,
        pr_url=pr_url if isinstance(pr_url, str) else None,
    )
    ingest = Ingest(url, commit, Executor(conn, rid))
    traced = repo.get("files_traced", [])
    if not isinstance(traced, list):
        raise DataFormatError("expected a list", field="files_traced")
    ingest.add_traced_files(traced)
    ingest.add_premise_files(_premise_files(repo.get("premise_files", [])))
    for field, status in BUCKETS:
        items = repo.get(field, [])
        if not isinstance(items, list):
            raise DataFormatError("expected a list", field=field)
        for j, d in enumerate(items):
            try:
                thm, difficulty = _theorem(d, url, commit)
                # The bucket is the status; a sorry still in the tactics is noted as such, so
                # exports keep such a theorem out of training data.
                source = "tactic" if thm.has_sorry else "upstream"
                ingest.add_theorem(
                    thm, status=status, sorry_source=source, upstream_difficulty=difficulty
                )
            except DataFormatError as exc:
                raise exc.nested(f"{field}[{j}]") from None
    ingest.flush()
    return rid


def _premise_files(items: object) -> Iterator[PremiseFile]:
    if not isinstance(items, list):
        raise DataFormatError("expected a list", field="premise_files")
    for j, d in enumerate(items):
        try:
            yield PremiseFile.from_dict(d)
        except DataFormatError as exc:
            raise exc.nested(f"premise_files[{j}]") from None


def _theorem(d: object, url: str, commit: str) -> tuple[Theorem, str | None]:
    if not isinstance(d, dict):
        raise DataFormatError(f"expected a theorem object, got {type(d).__name__}")
    for key in ("full_name", "file_path", "start", "end"):
        if key not in d:
            raise DataFormatError("missing field", field=key)
    record: dict[str, Any] = {
        # As the upstream does, the theorem belongs to its repository's url and commit.
        "url": url,
        "commit": commit,
        "file_path": d["file_path"],
        "full_name": d["full_name"],
    }
    if "theorem_statement" in d:
        record["theorem_statement"] = d["theorem_statement"]
    record["start"] = d["start"]
    record["end"] = d["end"]
    record["traced_tactics"] = d.get("traced_tactics") or []
    thm = Theorem.from_dict(record)
    difficulty = json.dumps(d["difficulty_rating"]) if "difficulty_rating" in d else None
    return thm, difficulty


# -- export -------------------------------------------------------------------------------------


class _List:
    """A JSON list whose items are produced while writing."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


class _Object:
    """A JSON object whose members are produced while writing."""

    def __init__(self, pairs: Iterable[tuple[str, object]]) -> None:
        self.pairs = pairs


def _dump(value: object, level: int) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return text.replace("\n", "\n" + "  " * level) if level else text


def _write_list(w: Callable[[str], Any], items: Iterable[Any], level: int) -> None:
    indent = "\n" + "  " * (level + 1)
    first = True
    for item in items:
        w(("[" if first else ",") + indent)
        if isinstance(item, _Object):
            _write_object(w, item.pairs, level + 1)
        else:
            w(_dump(item, level + 1))
        first = False
    w("[]" if first else "\n" + "  " * level + "]")


def _write_object(
    w: Callable[[str], object], pairs: Iterable[tuple[str, object]], level: int
) -> None:
    indent = "\n" + "  " * (level + 1)
    first = True
    for key, value in pairs:
        w(("{" if first else ",") + indent + json.dumps(key, ensure_ascii=False) + ": ")
        first = False
        if isinstance(value, _List):
            _write_list(w, value.items, level + 1)
        else:
            w(_dump(value, level + 1))
    w("{}" if first else "\n" + "  " * level + "}")


def _pos(p: tuple[int, int]) -> str:
    return f"({p[0]}, {p[1]})"


def theorem_to_upstream(st: StoredTheorem) -> dict[str, Any]:
    """The upstream ``Theorem.to_dict()`` of a stored theorem. ``difficulty_rating`` is the one
    imported from an upstream file, else LeanAgent's difficulty of the theorem."""
    t = st.theorem
    if st.upstream_difficulty is not None:
        difficulty = loads(st.upstream_difficulty)
    else:
        difficulty = st.difficulty
    return {
        "full_name": t.full_name,
        "theorem_statement": t.theorem_statement,
        "file_path": _path(t.file_path),
        "start": _pos(t.start),
        "end": _pos(t.end),
        "url": t.url,
        "commit": t.commit,
        "traced_tactics": [
            {
                "tactic": tac.tactic,
                "annotated_tactic": [
                    tac.annotated_tactic,
                    [
                        {
                            "full_name": a.full_name,
                            "def_path": a.def_path,
                            "def_pos": _pos(a.def_pos),
                            "def_end_pos": _pos(a.def_end_pos),
                        }
                        for a in tac.annotations
                    ],
                ],
                "state_before": tac.state_before,
                "state_after": tac.state_after,
            }
            for tac in t.traced_tactics
        ],
        "difficulty_rating": difficulty,
    }


def export_upstream_json(
    db: TheoremQueries,
    path: str | Path,
    repositories: RepositoriesArg = None,
) -> Path:
    path = Path(path)
    if path.is_dir():
        raise OutputExistsError(
            f"{path} is a directory; give the path of the JSON file to write (e.g. "
            f"{path / 'dynamic_database.json'})"
        )
    with db.snapshot() as conn, gc_paused(), atomic_write(path) as fh:
        infos = db.resolve_repositories(repositories)
        w = fh.write
        w('{\n  "repositories": ')
        _write_list(w, (_Object(_repository_pairs(db, conn, info)) for info in infos), 1)
        w("\n}")
    return path


def _repository_pairs(
    db: TheoremQueries, conn: sqlite3.Connection, info: RepositoryInfo
) -> Iterator[tuple[str, object]]:
    metadata: Mapping[str, Any] = info.metadata
    yield "url", info.url
    yield "name", info.name
    yield "commit", info.commit
    yield "lean_version", info.lean_version
    yield "lean_dojo_version", info.lean_dojo_version
    yield "metadata", dict(metadata)
    yield "total_theorems", info.total_theorems
    yield "num_proven_theorems", info.num_proven_theorems
    yield "num_sorry_theorems", info.num_sorry_theorems
    yield "num_sorry_theorems_proved", info.num_sorry_theorems_proved
    yield "num_sorry_theorems_unproved", info.num_sorry_theorems_unproved
    yield "num_premise_files", info.num_premise_files
    yield "num_premises", info.num_premises
    yield "num_files_traced", info.num_files_traced
    for field, status in BUCKETS:
        yield field, _List(_bucket(db, conn, info, status))
    yield "premise_files", _List(_premise_file_dicts(conn, info))
    yield "files_traced", [_path(p) for p in traced_paths(conn, info.id)]
    yield "pr_url", info.pr_url


def _bucket(
    db: TheoremQueries, conn: sqlite3.Connection, info: RepositoryInfo, status: str
) -> Iterator[dict[str, Any]]:
    for st in db.stored_theorems(info, status=status):
        yield theorem_to_upstream(st)


def _premise_file_dicts(conn: sqlite3.Connection, info: RepositoryInfo) -> Iterator[dict[str, Any]]:
    for row in corpus_rows(conn, info.id):
        yield {
            "path": _path(row["path"]),
            "imports": loads(row["imports"]),
            "premises": [
                {
                    "full_name": p["full_name"],
                    "code": p["code"],
                    "start": _pos((p["start_line"], p["start_col"])),
                    "end": _pos((p["end_line"], p["end_col"])),
                    "kind": p["kind"],
                }
                for p in premise_rows(conn, row["file_id"])
            ],
        }
