"""Layer 4 (evaluation): verdicts kept by (verifier and Lean version, header, statement, proof),
so that a repeated sample or a re-run costs no call to Lean.

::

    cache = VerdictCache(Path("~/.cache/lean_dojo_v2/verdicts.sqlite"))  # None: in memory
    make_env = cached(make_verifier_env("lean", bench, project=p), cache)

:class:`VerdictCache` is a SQLite file (WAL, so worker processes share it) or a dict. Its key is a
hash of the verifier's identity (``lean:4.15.0``, ``recorded``: a verdict of one verifier never
answers for another), the header and statement (a LeanDojo theorem: its repository, commit, file
and name) and the proof, each in its comparison form (:mod:`.statements`: two proofs that differ
only in white space are one proof). A verdict that says Lean ran out of time is not kept: on a
re-run, with more time or a quieter machine, it may go the other way.

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
from .statements import normalise_header, normalise_proof, normalise_statement

if TYPE_CHECKING:
    from ..prover.search_types import EnvFactory

log = logging.getLogger(__name__)

__all__ = ["CachedEnv", "CachedEnvFactory", "VerdictCache", "cached", "verifier_id"]


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
    process's lookups. Picklable: a worker process opens the file again."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._open(Path(path).expanduser() if path is not None else None)

    def _open(self, path: Path | None) -> None:
        self.path = path
        self.hits = 0
        self.misses = 0
        self._memory: dict[str, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

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
        parts = [verifier, header, statement, normalise_proof(proof)]
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
            conn.execute(
                "CREATE TABLE IF NOT EXISTS verdicts "
                "(key TEXT PRIMARY KEY, verifier TEXT NOT NULL, verdict TEXT NOT NULL)"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    def get(self, verifier: str, theorem: Theorem, proof: str) -> Verdict | None:
        """The kept verdict (``cached=True``), or None (counted as a miss)."""
        key = self.key(verifier, theorem, proof)
        with self._lock:
            text = self._memory.get(key)
            if text is None and self.path is not None:
                row = (
                    self._db()
                    .execute("SELECT verdict FROM verdicts WHERE key = ?", (key,))
                    .fetchone()
                )
                text = row[0] if row else None
            if text is None:
                self.misses += 1
                return None
            self.hits += 1
        return replace(Verdict.from_dict(json.loads(text)), cached=True)

    def put(self, verifier: str, theorem: Theorem, proof: str, verdict: Verdict) -> bool:
        """Keep ``verdict``; False (nothing kept) for a verdict that Lean ran out of time."""
        if _timed_out(verdict):
            return False
        key = self.key(verifier, theorem, proof)
        text = json.dumps(verdict.to_dict(), ensure_ascii=False)
        with self._lock:
            if self.path is None:
                self._memory[key] = text
            else:
                db = self._db()
                db.execute(
                    "INSERT OR REPLACE INTO verdicts (key, verifier, verdict) VALUES (?, ?, ?)",
                    (key, verifier, text),
                )
                db.commit()
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
