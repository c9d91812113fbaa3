"""``export_merged_data``: repositories of the database as one LeanDojo-layout dataset."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..data import Annotation, Corpus, Pos, PremiseFile, SplitSpec, Theorem, TracedTactic
from ..data.dataset import CORPUS_FILE
from ..data.jsonio import gc_paused, loads, write_jsonl
from ..data.output_dir import check_output_dir, staged_output_dir
from .common import RepositoriesArg, chunks, marks, parse_date
from .proofs import ProofsAndRuns
from .queries import THEOREM_COLUMNS, THEOREM_FROM
from .records import RepositoryInfo
from .repositories import corpus_rows, premise_dicts, traced_paths


class _Stub(Theorem):
    """Just enough of a theorem for ``split_theorems``: identity, premise names, sorry flag."""

    __slots__ = ("row_id",)
    row_id: int


_P0 = Pos(0, 0)
_STUB_SORRY = "sorry"


def _source_version(infos: Sequence[RepositoryInfo]) -> dict[str, str]:
    """``{"leandojo_version": V}`` where every repository's source dataset said ``V``; ``{}``
    (this library's version, :func:`default_metadata`'s) where one said none or they differ."""
    versions = {info.lean_dojo_version for info in infos}
    if len(versions) != 1:
        return {}
    (version,) = versions
    return {"leandojo_version": version} if version else {}


class DatasetExport(ProofsAndRuns):
    """``export_merged_data``."""

    def export_merged_data(
        self,
        repositories: RepositoriesArg,
        output_path: str | Path,
        *,
        spec: SplitSpec | None = None,
        use_found_proofs: bool = False,
        force: bool = False,
    ) -> dict[str, Any]:
        """Write the theorems, corpus and traced files of ``repositories`` (``None``: all) as one
        LeanDojo-layout dataset at ``output_path``, staged and swapped in atomically.

        ``output_path`` may be absent, an empty directory or a dataset this library wrote (which is
        replaced); anything else raises :class:`~lean_dojo_v2.errors.OutputExistsError` before
        anything is read, unless ``force=True``
        (see :func:`~lean_dojo_v2.data.output_dir.staged_output_dir`).

        - A theorem present in several repository versions (same file, name, start and end) is
          written once, from the most recently processed version.
        - Splits come from :func:`lean_dojo_v2.data.split_theorems` (``spec``, default 2 % / 2 %,
          hash-stable; unproved ``sorry`` theorems go to test, never train).
        - The corpus is the union by path (newest version wins), in dependency order.
        - Records are the stored ones exactly; with ``use_found_proofs``, a former ``sorry``
          proved by us is written with its best recorded proof as its tactics instead.
        - Theorems are streamed from the database a chunk at a time; only their identities and
          premise names are held for splitting.

        - ``metadata.json`` holds LeanDojo v1's keys (``dataset_name``, ``creation_time``,
          ``leandojo_version``; ``from_repo`` when one repository is exported), upstream
          LeanDojo-v2's (``repositories`` and the counts) and ``lean_dojo_v2_version``.
          ``leandojo_version`` is the one the repositories' source datasets said, where they
          all said the same (a dataset keeps its version through the database); else, and
          for a repository stored without one, this library's version.

        Returns the sizes written and the metadata.
        """
        from ..data import split_theorems, write_dataset
        from ..data.dataset import default_metadata

        output_path = Path(output_path)
        check_output_dir(output_path, force=force)  # before any work; checked again at the swap
        with self.snapshot(), gc_paused():
            infos = self.resolve_repositories(repositories)
            newest_first = sorted(
                infos,
                key=lambda i: (parse_date(i.date_processed)[1], i.id),
                reverse=True,
            )
            rank = {info.id: k for k, info in enumerate(newest_first)}
            stubs: list[_Stub | None] = []
            winner: dict[tuple, tuple[int, int]] = {}
            dedup = len(infos) > 1
            annotations: dict[str, Annotation] = {}
            counts = {"proven": 0, "sorry_unproved": 0, "sorry_proved": 0}
            status_of: dict[int, str] = {}
            for info in infos:
                for stub, status in self._stubs(info, annotations, use_found_proofs):
                    if dedup:
                        key = (stub.file_path, stub.full_name, stub.start, stub.end)
                        prev = winner.get(key)
                        if prev is not None:
                            if rank[info.id] < prev[0]:
                                old = stubs[prev[1]]
                                assert old is not None
                                counts[status_of.pop(old.row_id)] -= 1
                                stubs[prev[1]] = stub
                                winner[key] = (rank[info.id], prev[1])
                                counts[status] += 1
                                status_of[stub.row_id] = status
                            continue
                        winner[key] = (rank[info.id], len(stubs))
                    status_of[stub.row_id] = status
                    counts[status] += 1
                    stubs.append(stub)
            winner.clear()
            status_of.clear()
            theorems = [s for s in stubs if s is not None]
            del stubs
            splits = split_theorems(theorems, spec or SplitSpec())
            del theorems

            # Corpus: union by path, newest version first; only paths and imports in memory.
            corpus: dict[str, tuple[int, list[str]]] = {}
            for info in newest_first:
                for row in corpus_rows(self._conn, info.id):
                    if row["path"] not in corpus:
                        corpus[row["path"]] = (row["file_id"], loads(row["imports"]))
            # Dependency order (and a check of the import graph) from the foundation's Corpus.
            order = [
                f.path
                for f in Corpus(
                    PremiseFile(p, imports, []) for p, (_, imports) in corpus.items()
                ).files
            ]
            num_premises = 0
            file_ids = [fid for fid, _ in corpus.values()]
            for chunk in chunks(file_ids):
                num_premises += self._conn.execute(
                    f"SELECT COUNT(*) FROM premises WHERE file_id IN ({marks(len(chunk))})", chunk
                ).fetchone()[0]
            traced = list(self._traced_union(infos))

            total = sum(counts.values())
            metadata = default_metadata(
                **_source_version(infos),
                repositories=[
                    {
                        "url": i.url,
                        "name": i.name,
                        "commit": i.commit,
                        "lean_version": i.lean_version,
                        "lean_dojo_version": i.lean_dojo_version,
                        "metadata": i.metadata,
                    }
                    for i in infos
                ],
                total_theorems=total,
                num_proven_theorems=counts["proven"],
                num_sorry_theorems=counts["sorry_unproved"] + counts["sorry_proved"],
                num_sorry_theorems_unproved=counts["sorry_unproved"],
                num_sorry_theorems_proved=counts["sorry_proved"],
                num_premise_files=len(corpus),
                num_premises=num_premises,
                num_files_traced=len(traced),
            )
            if len(infos) == 1:
                metadata["from_repo"] = {"url": infos[0].url, "commit": infos[0].commit}
            written = {
                strategy: {
                    name: self._full_theorems(stubs_of_split, use_found_proofs)
                    for name, stubs_of_split in by_split.items()
                }
                for strategy, by_split in splits.items()
            }
            corpus_lines = (
                {
                    "path": p,
                    "imports": corpus[p][1],
                    "premises": premise_dicts(self._conn, corpus[p][0]),
                }
                for p in order
            )
            # write_dataset streams the splits; the corpus is then streamed into the staged
            # directory (write_dataset would hold every premise in memory), which is swapped in.
            with staged_output_dir(output_path, force=force) as stage:
                write_dataset(stage / "dataset", written, (), traced, metadata)
                for item in (stage / "dataset").iterdir():
                    item.rename(stage / item.name)
                (stage / "dataset").rmdir()
                write_jsonl(stage / CORPUS_FILE, corpus_lines)
        return {
            "path": str(output_path),
            "splits": {s: {k: len(v) for k, v in by.items()} for s, by in splits.items()},
            **{k: v for k, v in metadata.items() if k.startswith(("num_", "total_"))},
        }

    def _stubs(
        self, info: RepositoryInfo, annotations: dict[str, Annotation], use_found_proofs: bool
    ) -> Iterator[tuple[_Stub, str]]:
        """Light theorems of one repository (identity, distinct premise names, sorry flag), in
        database order, with their sorry status."""
        conn = self._conn
        names = conn.execute(
            "SELECT u.theorem_id, r.full_name FROM premise_uses u "
            "JOIN premise_refs r ON r.id = u.ref_id "
            "WHERE u.theorem_id IN (SELECT id FROM theorems WHERE repository_id = ?) "
            "ORDER BY u.theorem_id, u.tactic_idx, u.idx",
            (info.id,),
        )
        pending = next(names, None)
        rows = conn.execute(
            "SELECT t.id, COALESCE(t.url, r.url), COALESCE(t.commit_hash, r.commit_hash), f.path, "
            "t.full_name, t.start_line, t.start_col, t.end_line, t.end_col, t.sorry_status, "
            "t.sorry_source FROM theorems t JOIN files f ON f.id = t.file_id "
            "JOIN repositories r ON r.id = t.repository_id WHERE t.repository_id = ? ORDER BY t.id",
            (info.id,),
        )
        url_cache: dict[str, str] = {}
        for tid, url, commit, path, name, l1, c1, l2, c2, status, source in rows:
            used: dict[str, None] = {}
            while pending is not None and pending[0] < tid:
                pending = next(names, None)
            while pending is not None and pending[0] == tid:
                used[pending[1]] = None
                pending = next(names, None)
            replaced = use_found_proofs and status == "sorry_proved"
            sorry = status == "sorry_unproved" or (
                status == "sorry_proved" and source == "tactic" and not replaced
            )
            anns = []
            if not replaced:
                for n in used:
                    a = annotations.get(n)
                    if a is None:
                        a = annotations[n] = Annotation(n, "", _P0, _P0)
                    anns.append(a)
            tactic = TracedTactic(_STUB_SORRY if sorry else "", "", anns, "", "")
            stub = _Stub(
                url_cache.setdefault(url, url),
                url_cache.setdefault(commit, commit),
                path,
                name,
                Pos(l1, c1),
                Pos(l2, c2),
                [tactic],
            )
            stub.row_id = tid
            yield stub, status

    def _full_theorems(self, stubs: list[Theorem], use_found_proofs: bool) -> Iterator[Theorem]:
        """The stored records of ``stubs``, in their order, fetched a chunk at a time."""
        for chunk in chunks(stubs):
            ids = [s.row_id for s in chunk]
            rows = self._conn.execute(
                f"SELECT {THEOREM_COLUMNS} FROM {THEOREM_FROM} WHERE t.id IN ({marks(len(ids))})",
                ids,
            ).fetchall()
            built = {st.id: st for st in self._build(rows, True)}
            for tid in ids:
                st = built[tid]
                if use_found_proofs and st.sorry_status == "sorry_proved":
                    best = self.best_proof(tid)
                    if best is not None:
                        st.theorem.traced_tactics = [
                            TracedTactic.unannotated(
                                s["tactic"], s.get("state_before", ""), s.get("state_after", "")
                            )
                            for s in best.tactics
                        ]
                yield st.theorem

    def _traced_union(self, infos: Sequence[RepositoryInfo]) -> Iterator[str]:
        seen: set[str] = set()
        for info in infos:
            for path in traced_paths(self._conn, info.id):
                if path not in seen:
                    seen.add(path)
                    yield path
