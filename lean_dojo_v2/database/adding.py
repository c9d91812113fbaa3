"""Adding repository versions: from dataset directories, traced repositories, or a trace run.

Every add is one write transaction (:meth:`_ingest`): the repository row and all of its rows
commit together or not at all. Whether the call added the version or found it already there is
decided inside that transaction, so two processes adding the same version learn which one did.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ..data import Repository
from ..data.jsonio import gc_paused
from ..errors import DataFormatError
from .errors import RepositoryExistsError
from .ingest import (
    Batch,
    DatasetPlan,
    Executor,
    Ingest,
    RepositoryOptions,
    SourceSorry,
    feed_dataset,
    plan_dataset,
    prepare_dataset,
    write_batches,
)
from .records import RepositoryInfo
from .repositories import RepositoryQueries, insert_repository, repository_id

if TYPE_CHECKING:
    from ..lean_dojo.tracing import TraceOptions

logger = logging.getLogger(__name__)

_SHOWN_MISSING = 5


def require_lean() -> None:
    """Raise :class:`~lean_dojo_v2.errors.LeanNotFoundError` (one line, nothing chained) when
    this machine has no Lean at all: neither elan nor ``lean`` on PATH, in ``$ELAN_HOME/bin`` or
    in ``~/.elan/bin``. Checked before anything is cloned, so that a machine without Lean learns
    that first; which toolchain the repository needs is checked by tracing once it is known."""
    from ..errors import LeanNotFoundError
    from ..system.toolchain import ELAN_INSTALL_COMMAND, find_elan, find_program

    if find_elan() is None and find_program("lean") is None:
        raise LeanNotFoundError(
            "tracing a repository needs Lean, and none was found (no elan and no lean on PATH, "
            f"in $ELAN_HOME/bin or in ~/.elan/bin); install elan with `{ELAN_INSTALL_COMMAND}` "
            "and trace again (elan installs the toolchain the repository names), or add a "
            "traced dataset with add_repository(DIR) instead"
        )


class RepositoryAdding(RepositoryQueries):
    """``add_repository``, ``add_repositories``, ``trace_repository``."""

    def add_repository(
        self,
        source: str | Path | Repository,
        *,
        url: str | None = None,
        commit: str | None = None,
        name: str | None = None,
        lean_version: str | None = None,
        lean_dojo_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_dir: str | Path | None = None,
        replace: bool = False,
        partial: bool = False,
        exist_ok: bool = True,
    ) -> RepositoryInfo:
        """Add a repository version from a LeanDojo dataset directory or a traced
        :class:`~lean_dojo_v2.data.Repository`, in one transaction.

        Url and commit come from the arguments, else the dataset's ``metadata.json``
        (``from_repo``), else the theorem records. Re-adding a url + commit already present changes
        nothing and returns it (``replace=True`` replaces it instead, dropping its recorded proofs);
        with ``exist_ok=False`` it raises :class:`~.errors.RepositoryExistsError` (carrying the
        stored version) instead, decided inside the write transaction, so of two processes adding
        the same version exactly one succeeds. A new commit of the same url is a new version.

        A dataset directory must hold the three split files of its strategy (``random``, else
        ``novel_premises``) and ``corpus.jsonl``; otherwise
        :class:`~lean_dojo_v2.errors.IncompleteDatasetError` names what is missing, unless
        ``partial=True``. Theorem files missing from the corpus are logged as a warning (see
        :meth:`theorem_files_missing_from_corpus`).

        Sorry status: a theorem is ``sorry_unproved`` when one of its tactics contains a ``sorry``
        token, or, with ``source_dir`` (the repository checkout), when its declaration in the source
        contains one (term-mode ``:= sorry``).

        Bad input raises :class:`~lean_dojo_v2.errors.DataFormatError` naming the file and record;
        the database is then unchanged.
        """
        options: RepositoryOptions = {
            "url": url,
            "commit": commit,
            "name": name,
            "lean_version": lean_version,
            "lean_dojo_version": lean_dojo_version,
            "metadata": metadata,
            "source_dir": source_dir,
        }
        if isinstance(source, Repository):
            info, added = self._add_traced(source, replace, options)
        elif isinstance(source, (str, Path)):
            plan = plan_dataset(Path(source), options, partial=partial)
            info, added = self._ingest_plan(
                plan,
                replace,
                lambda ex: feed_dataset(plan, Ingest(plan.url, plan.commit, ex, plan.source())),
            )
        else:
            raise TypeError(
                "add_repository takes a dataset directory or a Repository, not "
                f"{type(source).__name__}"
            )
        if not added and not exist_ok:
            raise RepositoryExistsError(
                f"{info.url} @ {info.commit} is already in {self.path}; pass replace=True "
                "(--replace) to replace it",
                info,
            )
        if added:
            self._warn_missing_corpus_files(info)
        return info

    def _warn_missing_corpus_files(self, info: RepositoryInfo) -> None:
        missing = self._missing_corpus_files(info.id)
        if missing:
            shown = ", ".join(missing[:_SHOWN_MISSING])
            more = (
                f" and {len(missing) - _SHOWN_MISSING} more"
                if len(missing) > _SHOWN_MISSING
                else ""
            )
            logger.warning(
                "%s @ %s: %d theorem files are not in corpus.jsonl (%s%s); their theorems have "
                "no accessible premises",
                info.url,
                info.commit,
                len(missing),
                shown,
                more,
            )

    def trace_repository(
        self,
        url: str | Path,
        commit: str | None = None,
        build_deps: bool = True,
        **trace_kwargs: Unpack[TraceOptions],
    ) -> RepositoryInfo:
        """Trace ``url`` at ``commit`` (see :func:`lean_dojo_v2.lean_dojo.trace`; needs Lean) and
        add it, with sorry status read from its checkout. Without any Lean on this machine it
        raises :class:`~lean_dojo_v2.errors.LeanNotFoundError` (:func:`require_lean`) before
        cloning anything."""
        require_lean()
        from ..lean_dojo import LeanGitRepo, trace

        traced = trace(LeanGitRepo(str(url), commit), build_deps=build_deps, **trace_kwargs)
        return self.add_repository(traced.to_repository(), source_dir=traced.root)

    def add_repositories(
        self,
        sources: Iterable[str | Path | Repository],
        *,
        workers: int | None = None,
        replace: bool = False,
        partial: bool = False,
    ) -> list[RepositoryInfo]:
        """Add several repository versions, each in its own transaction, in order.

        Dataset directories are read and checked by ``workers`` helper processes (default: one
        when the machine has more than one CPU) while this process writes the previous one, so
        adding many repositories takes about the time of writing them. ``workers=0`` reads them
        here, one after the other. The first bad input raises (as :meth:`add_repository`; an
        error raised in a helper comes back whole); the repositories before it stay added.
        """
        items = list(sources)
        if workers is None:
            workers = 1 if (os.cpu_count() or 1) > 1 else 0
        if workers <= 0 or sum(1 for x in items if not isinstance(x, Repository)) < 2:
            return [self.add_repository(x, replace=replace, partial=partial) for x in items]
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor

        # Fork is cheapest where it exists; workers never touch this process's connection and end
        # without running finalisers.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        out: list[RepositoryInfo] = []
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context(method)
        ) as pool:
            pending: list[tuple[Repository | DatasetPlan, Future[list[Batch]] | None]] = []
            queue = iter(items)

            def submit_next() -> None:
                for item in queue:
                    if isinstance(item, Repository):
                        pending.append((item, None))
                        return
                    plan = plan_dataset(Path(item), partial=partial)
                    if not replace and repository_id(self._conn, plan.url, plan.commit) is not None:
                        pending.append((plan, None))  # already present: nothing to read
                        return
                    pending.append((plan, pool.submit(prepare_dataset, plan)))
                    return

            for _ in range(workers + 1):
                submit_next()
            while pending:
                item, future = pending.pop(0)
                submit_next()
                if isinstance(item, Repository):
                    out.append(self.add_repository(item, replace=replace))
                    continue
                if future is None:
                    found = self.get_repository(item.url, item.commit)
                    if found is not None:
                        out.append(found)
                        continue
                    future = pool.submit(prepare_dataset, item)
                batches = future.result()  # a helper's exception is raised here, as it was
                info, added = self._ingest_plan(
                    item, replace, functools.partial(write_batches, batches)
                )
                if added:
                    self._warn_missing_corpus_files(info)
                out.append(info)
        return out

    def _add_traced(
        self, repo: Repository, replace: bool, options: RepositoryOptions
    ) -> tuple[RepositoryInfo, bool]:
        metadata = dict(repo.metadata)
        metadata.update(options["metadata"] or {})
        lean_dojo_version = options["lean_dojo_version"] or metadata.get("lean_dojo_version")
        url = options["url"] or repo.url
        commit = options["commit"] or repo.commit
        source_dir = options["source_dir"]

        def write(ex: Executor) -> None:
            ingest = Ingest(url, commit, ex, SourceSorry(source_dir) if source_dir else None)
            ingest.add_traced_files(repo.traced_files)
            ingest.add_premise_files(repo.premise_files)
            for i, t in enumerate(repo.theorems):
                ingest.add_theorem(t, record=i)
            ingest.flush()

        return self._ingest(
            url=url,
            commit=commit,
            name=options["name"] or repo.name,
            lean_version=options["lean_version"] or repo.lean_version,
            lean_dojo_version=lean_dojo_version if isinstance(lean_dojo_version, str) else None,
            metadata=metadata,
            replace=replace,
            write=write,
        )

    def _ingest_plan(
        self, plan: DatasetPlan, replace: bool, write: Callable[[Executor], object]
    ) -> tuple[RepositoryInfo, bool]:
        return self._ingest(
            url=plan.url,
            commit=plan.commit,
            name=plan.name,
            lean_version=plan.lean_version,
            lean_dojo_version=plan.lean_dojo_version,
            metadata=plan.metadata,
            replace=replace,
            write=write,
        )

    def _ingest(
        self,
        *,
        url: str,
        commit: str,
        name: str | None,
        lean_version: str | None,
        lean_dojo_version: str | None,
        metadata: dict[str, Any],
        replace: bool,
        write: Callable[[Executor], object],
    ) -> tuple[RepositoryInfo, bool]:
        """Insert the repository row and let ``write`` add the rest, in one transaction. Returns
        the stored version and whether this call added it (False: it was already there)."""
        if not isinstance(url, str) or not isinstance(commit, str):
            raise DataFormatError(f"repository url and commit must be text, got {url!r} {commit!r}")
        if not replace:
            found = repository_id(self._conn, url, commit)
            if found is not None:
                return self._stored(found), False
        with self.transaction() as conn, gc_paused():
            if replace:
                conn.execute(
                    "DELETE FROM repositories WHERE url = ? AND commit_hash = ?", (url, commit)
                )
            else:
                found = repository_id(conn, url, commit)  # another process may have added it
                if found is not None:
                    conn.execute("ROLLBACK")
                    return self._stored(found), False
            repo_id = insert_repository(
                conn,
                url=url,
                commit=commit,
                name=name,
                lean_version=lean_version,
                lean_dojo_version=lean_dojo_version,
                metadata=metadata,
            )
            write(Executor(conn, repo_id))
        return self._stored(repo_id), True

    def _stored(self, repo_id: int) -> RepositoryInfo:
        info = self._repository_by_id(repo_id)
        assert info is not None
        return info
