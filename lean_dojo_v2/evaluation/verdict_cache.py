"""Layer 4 (evaluation): verdicts kept by (verifier and Lean version, header, statement, proof),
so that a repeated sample or a re-run costs no call to Lean.

::

    cache = VerdictCache(Path("~/.cache/lean_dojo_v2/verdicts.sqlite"))  # None: in memory
    make_env = cached(make_verifier_env("lean", bench, project=p), cache)

:class:`VerdictCache` is a SQLite file (WAL, so worker processes share it) or a dict. Its key is a
hash of the verifier's identity (``lean:4.15.0``, ``recorded``: a verdict of one verifier never
answers for another), the header and statement (a LeanDojo theorem: its repository, commit, file
and name) and the proof, each in its comparison form (:mod:`.statements`: two proofs that differ
only in what cannot change Lean's verdict are one proof; a tab or a Unicode space is another).
A verdict that says Lean ran out of time is not kept: on a re-run, with more time or a quieter
machine, it may go the other way.

The file is checked when the cache is made (:func:`check_verdict_cache`): a directory, a file
that is not SQLite, a damaged one, another program's tables, or a newer schema is a one-line
:class:`VerdictCacheError` naming the file, before an evaluation writes anything. A file of
schema 1 (an older lean-dojo-v2, whose keys compared proofs up to any Unicode white space, so a
variant Lean rejects could take a clean proof's verdict) is emptied when first opened, with a
warning: its verdicts are checked again. A row that does not read back as a verdict is a miss
(logged once): the verdict is checked again and the row replaced, so a damaged entry costs one
Lean call instead of the run.

:func:`cached` wraps an environment factory: each environment it makes answers ``verify`` from
the cache where it can (the verdict says ``cached=True``) and asks the environment below (and
keeps its answer) where it cannot; every other call goes through unchanged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.model import Theorem
from ..interaction.base import AsyncProofEnv, ProofEnv
from ..interaction.standalone import standalone_header
from ..interaction.types import Verdict
from ..interaction.wrapped import WrappedEnv, wrap_each
from .errors import EvaluationError
from .statements import normalise_header, normalise_proof, normalise_statement

if TYPE_CHECKING:
    from ..prover.search_types import EnvFactory

log = logging.getLogger(__name__)

__all__ = [
    "SCHEMA_VERSION",
    "CachedEnv",
    "CachedEnvFactory",
    "VerdictCache",
    "VerdictCacheError",
    "cached",
    "check_verdict_cache",
    "verifier_id",
]

SCHEMA_VERSION = 2
"""The cache file's schema (SQLite's ``user_version``; 0 in files of schema 1). 2: proofs keyed
in :func:`~.statements.normalise_proof`'s exact form (schema 1 compared them up to any Unicode
white space)."""

_COLUMNS = ["key", "verifier", "verdict"]
_WHAT_TO_DO = (
    "delete it (it only keeps verdicts, which are then checked again) or give another "
    "--verdict-cache (none: no cache)"
)


class VerdictCacheError(EvaluationError, ValueError):
    """A verdict cache file that cannot be used: a directory, not a regular file, not SQLite,
    damaged, another program's tables, or a schema newer than this library's. The message names
    the file and what to do."""


def check_verdict_cache(path: str | Path) -> None:
    """Raise :class:`VerdictCacheError` unless ``path`` can be a verdict cache: a SQLite file
    of a known schema with the cache's table, an empty file, or a file that can be made. Reads
    only (SQLite's ``quick_check`` too, so that a damaged file is found here)."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise VerdictCacheError(
            f"verdict cache {p} is a directory: give the path of a file (made if missing), or "
            "--verdict-cache none"
        )
    if not p.exists():
        _check_creatable(p)
    elif not p.is_file():
        raise VerdictCacheError(
            f"verdict cache {p} is not a regular file (a device or a pipe): give the path of a "
            "file, or --verdict-cache none"
        )
    elif p.stat().st_size:  # an empty file is an empty database
        _check_database(p)


def _check_creatable(p: Path) -> None:
    above = p.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise VerdictCacheError(
            f"verdict cache {p} cannot be made: {above} is a file, not a directory; give another "
            "--verdict-cache (none: no cache)"
        )


def _check_database(p: Path) -> None:
    try:
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    except sqlite3.Error as exc:
        raise VerdictCacheError(
            f"verdict cache {p} cannot be opened ({exc}): {_WHAT_TO_DO}"
        ) from None
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = [r[1] for r in conn.execute("PRAGMA table_info(verdicts)")]
        damage = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        raise VerdictCacheError(
            f"verdict cache {p} is not a SQLite file that can be read ({exc}): {_WHAT_TO_DO}"
        ) from None
    finally:
        conn.close()
    if damage != ["ok"]:
        raise VerdictCacheError(
            f"verdict cache {p} is damaged (SQLite: {damage[0]}): {_WHAT_TO_DO}"
        )
    if tables and columns != _COLUMNS:
        held = (
            f"a verdicts table of columns {', '.join(columns)}" if columns else "no verdicts table"
        )
        raise VerdictCacheError(
            f"verdict cache {p} is not a verdict cache: it holds {held} (tables: "
            f"{', '.join(tables)}): {_WHAT_TO_DO}"
        )
    if version not in (0, SCHEMA_VERSION):
        raise VerdictCacheError(
            f"verdict cache {p} has schema {version}, which this lean-dojo-v2 does not read (it "
            f"reads {SCHEMA_VERSION}; a newer one wrote it?): upgrade, or {_WHAT_TO_DO}"
        )


def verifier_id(thing: object) -> str:
    """Who checks, and with which Lean: a factory's or environment's ``verifier_id`` where it
    declares one (looking through wrappers' ``make_env``/``env``/``aenv``), else its backend
    and the Lean version of its project (``pantograph:4.15.0``), read from the
    project's ``lean-toolchain`` without starting anything."""
    seen = 0
    current: object = thing
    while current is not None and seen < 8:
        declared = getattr(current, "verifier_id", None)
        if isinstance(declared, str) and declared:
            return declared
        inner = None
        for attr in ("make_env", "env", "aenv"):
            inner = getattr(current, attr, None)
            if inner is not None:
                break
        if inner is None:
            break
        current, seen = inner, seen + 1
    backend = getattr(current, "backend", None)
    if not isinstance(backend, str):
        # A factory of your own that says nothing: its qualified name, so that two different
        # ones never answer for each other.
        named = current if callable(current) and hasattr(current, "__qualname__") else None
        kind = named if named is not None else type(current)
        return f"{kind.__module__}.{kind.__qualname__}"
    config = getattr(current, "config", None)
    project = getattr(config, "project_path", None)
    if project is not None:
        from ..interaction.pantograph.locate import read_toolchain

        return f"{backend}:{read_toolchain(project) or 'unknown'}"
    return backend


def _statement_of(theorem: Theorem) -> tuple[str, str]:
    """(header, statement) of the cache key: a standalone statement's own; a repository's
    theorem is named by where it lives (its statement text alone may repeat)."""
    header = standalone_header(theorem)
    statement = normalise_statement(theorem.theorem_statement or "")
    if header is not None:
        return normalise_header(header), statement
    where = f"{theorem.url}@{theorem.commit}:{theorem.file_path}:{theorem.full_name}"
    return "", f"{where}\n{statement}"


def _timed_out(verdict: Verdict) -> bool:
    return any(m.startswith("timeout") for m in verdict.messages)


class VerdictCache:
    """Verdicts by (verifier, header, statement, proof): a SQLite file at ``path`` (created with
    its parent directories), or in memory when ``path`` is None. ``hits``/``misses`` count this
    process's lookups. Picklable: a worker process opens the file again. A file that cannot be
    a verdict cache is refused here (:func:`check_verdict_cache`)."""

    def __init__(self, path: str | Path | None = None) -> None:
        if path is not None:
            check_verdict_cache(path)
        self._open(Path(path).expanduser() if path is not None else None)

    def _open(self, path: Path | None) -> None:
        self.path = path
        self.hits = 0
        self.misses = 0
        self._memory: dict[str, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._warned = False

    def __getstate__(self) -> dict[str, object]:
        # A connection and a lock do not travel: a worker process opens the file again. An
        # in-memory cache travels as a copy (what a worker adds stays in that worker).
        return {"path": self.path, "memory": dict(self._memory)}

    def __setstate__(self, state: dict[str, object]) -> None:
        path = state.get("path")
        self._open(path if isinstance(path, Path) else None)
        memory = state.get("memory")
        if isinstance(memory, dict):
            self._memory.update({str(k): str(v) for k, v in memory.items()})

    @staticmethod
    def key(verifier: str, theorem: Theorem, proof: str) -> str:
        """The key of ``proof`` of ``theorem`` checked by ``verifier`` (see the module
        docstring)."""
        header, statement = _statement_of(theorem)
        # The schema in the key: a row an older library writes into this file never answers.
        parts = [f"schema {SCHEMA_VERSION}", verifier, header, statement, normalise_proof(proof)]
        return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
            try:  # readers never wait for a writer; a file system without WAL still works
                conn.execute("PRAGMA journal_mode=WAL")
                # No fsync per verdict (a put took ~10 ms, as long as a Lean call): a killed run
                # keeps every verdict, a power cut may lose the last ones, which are re-checked.
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.DatabaseError as exc:
                log.debug("verdict cache %s without WAL: %s", self.path, exc)
            _upgrade(conn, self.path)
            self._conn = conn
        return self._conn

    def _read(self, key: str) -> str | None:
        """The kept text of ``key``; None when there is none or the file fails (logged once:
        a verdict the cache cannot give is checked again)."""
        text = self._memory.get(key)
        if text is not None or self.path is None:
            return text
        try:
            row = self._db().execute("SELECT verdict FROM verdicts WHERE key = ?", (key,))
            found = row.fetchone()
        except (sqlite3.DatabaseError, VerdictCacheError) as exc:
            self._warn(f"cannot be read ({exc})")
            return None
        return found[0] if found else None

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(
                "verdict cache %s: %s; such verdicts are checked again (delete the file if "
                "this repeats)",
                self.path,
                what,
            )

    def get(self, verifier: str, theorem: Theorem, proof: str) -> Verdict | None:
        """The kept verdict (``cached=True``), or None (counted as a miss). A row that does not
        read back as a verdict is a miss too (see the module docstring)."""
        key = self.key(verifier, theorem, proof)
        with self._lock:
            text = self._read(key)
            verdict = _verdict(text) if text is not None else None
            if text is not None and verdict is None:
                self._warn("a row holds no verdict (damaged)")
            if verdict is None:
                self.misses += 1
                return None
            self.hits += 1
        return replace(verdict, cached=True)

    def put(self, verifier: str, theorem: Theorem, proof: str, verdict: Verdict) -> bool:
        """Keep ``verdict``; False (nothing kept) for a verdict that Lean ran out of time, or
        when the file cannot be written (logged once)."""
        if _timed_out(verdict):
            return False
        key = self.key(verifier, theorem, proof)
        text = json.dumps(verdict.to_dict(), ensure_ascii=False)
        with self._lock:
            if self.path is None:
                self._memory[key] = text
                return True
            try:
                db = self._db()
                db.execute(
                    "INSERT OR REPLACE INTO verdicts (key, verifier, verdict) VALUES (?, ?, ?)",
                    (key, verifier, text),
                )
                db.commit()
            except (sqlite3.DatabaseError, VerdictCacheError) as exc:
                self._warn(f"cannot be written ({exc})")
                return False
        return True

    def __len__(self) -> int:
        if self.path is None:
            return len(self._memory)
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _upgrade(conn: sqlite3.Connection, path: Path) -> None:
    """Make the table; empty a file of schema 1 (its keys let a variant Lean rejects take a
    clean proof's verdict) and mark the file as of :data:`SCHEMA_VERSION`. One transaction, so
    two processes opening the file together upgrade it once."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS verdicts "
            "(key TEXT PRIMARY KEY, verifier TEXT NOT NULL, verdict TEXT NOT NULL)"
        )
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version not in (0, SCHEMA_VERSION):
            raise VerdictCacheError(
                f"verdict cache {path} has schema {version}, which this lean-dojo-v2 does not "
                f"read (it reads {SCHEMA_VERSION}): upgrade, or {_WHAT_TO_DO}"
            )
        if version == 0:
            dropped = conn.execute("DELETE FROM verdicts").rowcount
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if dropped > 0:
                log.warning(
                    "verdict cache %s: dropped %d verdicts of an older lean-dojo-v2 (schema 1 "
                    "compared proofs up to any Unicode white space); they are checked again",
                    path,
                    dropped,
                )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _verdict(text: str) -> Verdict | None:
    """The verdict a row holds, or None when it holds none (not JSON, not a verdict's dict)."""
    from ..data.jsonio import loads

    try:
        data = loads(text)
    except ValueError:
        return None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("ok"), bool)
        and isinstance(data.get("backend"), str)
        and isinstance(data.get("checked_by"), str)
    ):
        return None
    try:
        return Verdict.from_dict(data)
    except (TypeError, ValueError):
        return None


class CachedEnv(WrappedEnv):
    """An environment whose ``verify`` is answered from ``cache`` where it can (see the module
    docstring); ``verifier`` names who checks (:func:`verifier_id`)."""

    def __init__(self, env: ProofEnv | AsyncProofEnv, cache: VerdictCache, verifier: str) -> None:
        super().__init__(env)
        self.cache = cache
        self.verifier_id = verifier

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        kept = self.cache.get(self.verifier_id, theorem, proof)
        if kept is not None:
            return kept
        verdict = await self.env.verify(theorem, proof)
        self.cache.put(self.verifier_id, theorem, proof, verdict)
        return verdict


@dataclass(frozen=True)
class CachedEnvFactory:
    """``make_env`` with each environment it makes behind the verdict cache (picklable when
    ``make_env`` is); ``verifier``: the cache's name for the checker (None: ask
    :func:`verifier_id` of ``make_env``)."""

    make_env: EnvFactory
    cache: VerdictCache
    verifier: str | None = None

    @property
    def verifier_id(self) -> str:
        return self.verifier or verifier_id(self.make_env)

    def __call__(self) -> AsyncProofEnv | list[AsyncProofEnv]:
        name = self.verifier_id
        return wrap_each(self.make_env(), lambda env: CachedEnv(env, self.cache, name))


def cached(
    make_env: EnvFactory, cache: VerdictCache, *, verifier: str | None = None
) -> CachedEnvFactory:
    """``make_env`` whose environments answer ``verify`` from ``cache`` where they can: a
    repeated sample or a re-run costs no Lean call (see the module docstring)."""
    return CachedEnvFactory(make_env, cache, verifier)
