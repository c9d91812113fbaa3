"""Reading theorems: filters, pages, records rebuilt exactly, counts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypedDict, Unpack

from ..data import Annotation, Pos, Theorem, TracedTactic
from ..data.jsonio import loads
from .common import RepositoriesArg, StatusFilter, chunks, marks
from .curriculum import CurriculumQueries, difficulty_sql
from .difficulty import CATEGORIES
from .errors import RecordNotFoundError
from .records import StoredTheorem
from .schema import SORRY_STATUSES

_PAGE = 256

THEOREM_COLUMNS = (
    "t.id AS id, t.repository_id AS repository_id, COALESCE(t.url, r.url) AS url, "
    "COALESCE(t.commit_hash, r.commit_hash) AS commit_hash, f.path AS file_path, "
    "t.full_name AS full_name, t.start_line AS start_line, t.start_col AS start_col, "
    "t.end_line AS end_line, t.end_col AS end_col, t.theorem_statement AS theorem_statement, "
    "t.has_statement AS has_statement, t.extra AS extra, t.sorry_status AS sorry_status, "
    "t.sorry_source AS sorry_source, t.proof_steps AS proof_steps, "
    "t.upstream_difficulty AS upstream_difficulty"
)
"""The columns :meth:`TheoremQueries._build` unpacks (in this order), over :data:`THEOREM_FROM`."""
THEOREM_FROM = (
    "theorems t JOIN files f ON f.id = t.file_id JOIN repositories r ON r.id = t.repository_id"
)


class TheoremFilters(TypedDict, total=False):
    """The filters of :meth:`TheoremQueries.stored_theorems` besides the repository."""

    status: StatusFilter
    difficulty: str | Iterable[str] | None
    file_path: str | None
    full_name: str | None
    with_tactics: bool


class TheoremQueries(CurriculumQueries):
    """Theorems by repository, sorry status, difficulty, file or name; database statistics."""

    def _where(
        self,
        repository: RepositoriesArg,
        status: StatusFilter,
        difficulty: str | Iterable[str] | None,
        file_path: str | None,
        full_name: str | None,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if repository is not None:
            ids = [r.id for r in self.resolve_repositories(repository)]
            where.append(f"t.repository_id IN ({marks(len(ids))})")
            params.extend(ids)
        if status is not None:
            statuses = _statuses(status)
            where.append(f"t.sorry_status IN ({marks(len(statuses))})")
            params.extend(statuses)
        if file_path is not None:
            where.append("f.path = ?")
            params.append(file_path)
        if full_name is not None:
            where.append("t.full_name = ?")
            params.append(full_name)
        if difficulty is not None:
            cats = [difficulty] if isinstance(difficulty, str) else list(difficulty)
            for c in cats:
                if c not in CATEGORIES:
                    raise ValueError(f"difficulty must be one of {CATEGORIES}, got {c!r}")
            thresholds = self.thresholds()
            where.append("(" + " OR ".join(difficulty_sql(c, thresholds) for c in cats) + ")")
        return where, params

    def stored_theorems(
        self,
        repository: RepositoriesArg = None,
        *,
        status: StatusFilter = None,
        difficulty: str | Iterable[str] | None = None,
        file_path: str | None = None,
        full_name: str | None = None,
        with_tactics: bool = True,
    ) -> Iterator[StoredTheorem]:
        """Theorems with their database id and sorry status, in the order they were added.

        Filters: ``repository`` (reference or list, see :meth:`resolve_repositories`),
        ``status`` (``proven``, ``sorry_unproved``, ``sorry_proved``, or ``sorry`` for both),
        ``difficulty`` (``easy``, ``medium``, ``hard``, ``hard_no_proof``; LeanAgent's rule over the
        whole database), ``file_path``, ``full_name``. Rows are read a page at a time, so the
        database may be written (e.g. proofs recorded) while iterating.
        """
        where, params = self._where(repository, status, difficulty, file_path, full_name)
        last = 0
        sql = (
            f"SELECT {THEOREM_COLUMNS} FROM {THEOREM_FROM} WHERE "
            + " AND ".join(where + ["t.id > ?"])
            + f" ORDER BY t.id LIMIT {_PAGE}"
        )
        while True:
            rows = self._conn.execute(sql, [*params, last]).fetchall()
            if not rows:
                return
            yield from self._build(rows, with_tactics)
            last = rows[-1][0]  # the id (first of THEOREM_COLUMNS)

    def theorems(
        self, repository: RepositoriesArg = None, **filters: Unpack[TheoremFilters]
    ) -> Iterator[Theorem]:
        """Theorem records, with the filters of :meth:`stored_theorems` (``status``,
        ``difficulty``, ``file_path``, ``full_name``, ``with_tactics``)."""
        return (st.theorem for st in self.stored_theorems(repository, **filters))

    def sorry_theorems_unproved(self, repository: RepositoriesArg = None) -> Iterator[Theorem]:
        """Theorems with a ``sorry`` that no recorded proof has closed yet."""
        return self.theorems(repository, status="sorry_unproved")

    def sorry_theorems_proved(self, repository: RepositoriesArg = None) -> Iterator[Theorem]:
        return self.theorems(repository, status="sorry_proved")

    def proven_theorems(self, repository: RepositoriesArg = None) -> Iterator[Theorem]:
        return self.theorems(repository, status="proven")

    def count_theorems(
        self,
        repository: RepositoriesArg = None,
        *,
        status: StatusFilter = None,
        difficulty: str | Iterable[str] | None = None,
    ) -> int:
        where, params = self._where(repository, status, difficulty, None, None)
        sql = f"SELECT COUNT(*) FROM {THEOREM_FROM}" + (
            " WHERE " + " AND ".join(where) if where else ""
        )
        return self._conn.execute(sql, params).fetchone()[0]

    def get_theorem(self, theorem: Theorem | StoredTheorem | int) -> StoredTheorem:
        """The stored theorem for a record (matched on url, commit, file, name and start) or an
        id; :class:`RecordNotFoundError` when absent."""
        tid = self._theorem_id(theorem)
        rows = self._conn.execute(
            f"SELECT {THEOREM_COLUMNS} FROM {THEOREM_FROM} WHERE t.id = ?", (tid,)
        ).fetchall()
        return self._build(rows, True)[0]

    def _theorem_id(self, theorem: Theorem | StoredTheorem | int) -> int:
        if isinstance(theorem, StoredTheorem):
            theorem = theorem.id
        if isinstance(theorem, int) and not isinstance(theorem, bool):
            row = self._conn.execute("SELECT id FROM theorems WHERE id = ?", (theorem,)).fetchone()
            if row is None:
                raise RecordNotFoundError(f"no theorem with id {theorem}")
            return row[0]
        if not isinstance(theorem, Theorem):
            raise TypeError(f"expected a Theorem or a theorem id, got {type(theorem).__name__}")
        row = self._conn.execute(
            f"SELECT t.id FROM {THEOREM_FROM} WHERE t.full_name = ? AND f.path = ? "
            "AND t.start_line = ? AND t.start_col = ? "
            "AND COALESCE(t.url, r.url) = ? AND COALESCE(t.commit_hash, r.commit_hash) = ?",
            (
                theorem.full_name,
                theorem.file_path,
                theorem.start[0],
                theorem.start[1],
                theorem.url,
                theorem.commit,
            ),
        ).fetchone()
        if row is None:
            raise RecordNotFoundError(
                f"no theorem {theorem.full_name!r} at {theorem.file_path}:{theorem.start[0]}:"
                f"{theorem.start[1]} of {theorem.url} @ {theorem.commit}"
            )
        return row[0]

    def _build(self, rows: Sequence[Sequence[Any]], with_tactics: bool) -> list[StoredTheorem]:
        """Theorem rows (:data:`THEOREM_COLUMNS`, unpacked into their names) → stored theorems,
        with their tactics."""
        tactics = self._tactics_for([r[0] for r in rows]) if with_tactics else {}
        out = []
        for (
            tid,
            repository_id,
            url,
            commit,
            file_path,
            full_name,
            start_line,
            start_col,
            end_line,
            end_col,
            statement,
            has_statement,
            extra,
            sorry_status,
            sorry_source,
            proof_steps,
            upstream_difficulty,
        ) in rows:
            thm = Theorem(
                url=url,
                commit=commit,
                file_path=file_path,
                full_name=full_name,
                start=Pos(start_line, start_col),
                end=Pos(end_line, end_col),
                traced_tactics=tactics.get(tid, []),
                theorem_statement=statement,
                has_statement_field=bool(has_statement),
                extra=loads(extra) if extra is not None else {},
            )
            out.append(
                StoredTheorem(
                    tid,
                    repository_id,
                    thm,
                    sorry_status,
                    sorry_source,
                    proof_steps,
                    upstream_difficulty,
                )
            )
        return out

    def _tactics_for(self, theorem_ids: Sequence[int]) -> dict[int, list[TracedTactic]]:
        conn = self._conn
        out: dict[int, list[TracedTactic]] = {}
        for chunk in chunks(theorem_ids):
            m = marks(len(chunk))
            uses: dict[tuple[int, int], list[Annotation]] = {}
            for tid, i, name, path, l1, c1, l2, c2 in conn.execute(
                "SELECT u.theorem_id, u.tactic_idx, r.full_name, r.def_path, r.def_line, "
                "r.def_col, r.def_end_line, r.def_end_col FROM premise_uses u "
                f"JOIN premise_refs r ON r.id = u.ref_id WHERE u.theorem_id IN ({m}) "
                "ORDER BY u.theorem_id, u.tactic_idx, u.idx",
                chunk,
            ):
                ann = Annotation(name, path, Pos(l1, c1), Pos(l2, c2))
                lst = uses.get((tid, i))
                if lst is None:
                    uses[(tid, i)] = [ann]
                else:
                    lst.append(ann)
            prev_after = ""
            for tid, i, text, annotated, before, after in conn.execute(
                "SELECT theorem_id, idx, tactic, annotated_tactic, state_before, state_after "
                f"FROM tactics WHERE theorem_id IN ({m}) ORDER BY theorem_id, idx",
                chunk,
            ):
                if before is None:  # the same as the previous tactic's state_after
                    before = prev_after
                prev_after = after
                tac = TracedTactic(
                    text,
                    text if annotated is None else annotated,
                    uses.get((tid, i), []) if uses else [],
                    before,
                    after,
                )
                lst2 = out.get(tid)
                if lst2 is None:
                    out[tid] = [tac]
                else:
                    lst2.append(tac)
        return out

    def stats(self) -> dict[str, int]:
        """Counts over the whole database."""
        with self.snapshot() as conn:

            def one(sql: str) -> int:
                return conn.execute(sql).fetchone()[0] or 0

            by_status = dict(
                conn.execute("SELECT sorry_status, COUNT(*) FROM theorems GROUP BY sorry_status")
            )
            return {
                "repositories": one("SELECT COUNT(*) FROM repositories"),
                "theorems": sum(by_status.values()),
                "proven": by_status.get("proven", 0),
                "sorry_unproved": by_status.get("sorry_unproved", 0),
                "sorry_proved": by_status.get("sorry_proved", 0),
                "tactics": one("SELECT COUNT(*) FROM tactics"),
                "premise_uses": one("SELECT COUNT(*) FROM premise_uses"),
                "premise_files": one("SELECT COUNT(*) FROM premise_files"),
                "premises": one("SELECT COUNT(*) FROM premises"),
                "files_traced": one("SELECT COUNT(*) FROM files WHERE traced_ord IS NOT NULL"),
                "proofs": one("SELECT COUNT(*) FROM proofs"),
                "training_runs": one("SELECT COUNT(*) FROM training_runs"),
            }


def _statuses(status: str | Iterable[str]) -> list[str]:
    items = [status] if isinstance(status, str) else list(status)
    out: list[str] = []
    for s in items:
        if s == "sorry":
            out += ["sorry_unproved", "sorry_proved"]
        elif s in SORRY_STATUSES:
            out.append(s)
        else:
            raise ValueError(f"status must be one of {SORRY_STATUSES} or 'sorry', got {s!r}")
    return out
