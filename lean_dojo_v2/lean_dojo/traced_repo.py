"""A traced repository: every traced file of a checkout, and what the LeanDojo layout needs.

The trace of a checkout lives in ``<root>/.lake/build/lean_dojo_v2/``: one ``<path>.trace.json``
per traced file (``<path>`` is the file's LeanDojo path) and ``manifest.json``, which says what
was traced, with which Lean, and the status of every file (``ok``, ``failed``, ``timeout``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from ..data import PremiseFile, Repository, Theorem
from ..data.jsonio import read_json
from ..errors import DataFormatError
from .errors import ExtractionError, TraceFormatError
from .layout import CORE_DIR, ProjectLayout
from .traced_file import ModuleResolver, TracedFile, load_trace

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

TRACE_DIR = Path(".lake/build/lean_dojo_v2")
MANIFEST = "manifest.json"


def trace_path(root: Path, path: str) -> Path:
    """Where the extractor output of LeanDojo path ``path`` is kept."""
    return root / TRACE_DIR / (path.removesuffix(".lean") + ".trace.json")


def _headline(reason: str) -> str:
    """The line of Lean's output that says most: its first error, else the last line."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else "?"


def failure_summary(failed: dict[str, str], limit: int = 20) -> str:
    lines = [f"  {p}: {_headline(reason)}" for p, reason in sorted(failed.items())[:limit]]
    more = len(failed) - limit
    if more > 0:
        lines.append(f"  … and {more} more (see the manifest)")
    return "\n".join(lines)


class TracedFiles(Mapping[str, TracedFile]):
    """The traced files of a repository, read from disk when asked for.

    A repository the size of Mathlib does not fit in memory as parsed files, so only the
    ``cache_size`` most recently used stay loaded; iterating the theorems of the whole repository
    keeps memory at one file's worth. What the import graph needs (each file's imports) is kept
    for every file once seen.
    """

    def __init__(
        self,
        root: Path,
        sources: dict[str, Path],
        resolve: ModuleResolver,
        cache_size: int = 32,
    ) -> None:
        self.root = root
        self._sources = sources
        self._resolve = resolve
        self._cache: OrderedDict[str, TracedFile] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self.imports: dict[str, list[str]] = {}

    def __getitem__(self, path: str) -> TracedFile:
        hit = self._cache.get(path)
        if hit is not None:
            self._cache.move_to_end(path)
            return hit
        source = self._sources[path]  # KeyError for files that were not traced
        f = load_trace(trace_path(self.root, path), source, path, self._resolve)
        self.imports[path] = list(f.import_paths)
        self._cache[path] = f
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return f

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)

    def __contains__(self, path: object) -> bool:
        return path in self._sources

    def imports_of(self, path: str) -> list[str]:
        if path not in self.imports:
            self[path]
        return self.imports[path]


@dataclass
class TracedRepo:
    """The traced files of one repository at one commit."""

    root: Path
    url: str
    commit: str
    lean_version: str | None = None
    build_deps: bool = False
    files: Mapping[str, TracedFile] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        from ..data.model import repo_name_from_url

        return repo_name_from_url(self.url)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        root: str | Path,
        *,
        on_error: str = "raise",
        progress: bool = False,
        check: bool = True,
    ) -> TracedRepo:
        """Open the trace of a checkout (``trace()`` calls this). Files are parsed when used
        (see :class:`TracedFiles`); ``check`` reads each once now, so a broken output raises
        :class:`TraceFormatError` here rather than later. ``on_error="raise"`` raises
        :class:`ExtractionError` when files of the repository itself failed to trace;
        ``"warn"`` logs them and goes on (dependency failures only ever warn)."""
        if on_error not in ("raise", "warn"):
            raise ValueError(f"on_error must be 'raise' or 'warn', not {on_error!r}")
        root = Path(root).resolve()
        manifest_path = root / TRACE_DIR / MANIFEST
        try:
            manifest = read_json(manifest_path)
        except (FileNotFoundError, DataFormatError) as exc:
            raise TraceFormatError(
                f"{root} has no readable trace manifest ({manifest_path}): trace it first with "
                f"lean_dojo_v2.lean_dojo.trace() ({exc})"
            ) from exc
        if not isinstance(manifest, dict):
            raise TraceFormatError(
                f"{manifest_path} is not a trace manifest (a JSON object): trace {root} again "
                "with lean_dojo_v2.lean_dojo.trace()"
            )
        layout = ProjectLayout(root, manifest.get("core_prefix"))
        statuses: dict[str, dict[str, Any]] = manifest.get("files", {})
        failures = {
            p: str(s.get("error") or s.get("status"))
            for p, s in statuses.items()
            if s.get("status") != "ok"
        }
        own_failures = {p: r for p, r in failures.items() if not p.startswith(".lake/")}
        if failures:
            logger.warning(
                "%d file(s) of %s failed to trace:\n%s",
                len(failures),
                root,
                failure_summary(failures),
            )
        if own_failures and on_error == "raise":
            raise ExtractionError(
                f"{len(own_failures)} file(s) of the repository failed to trace:\n"
                f"{failure_summary(own_failures)}\nFix them (or their build) and trace again, or "
                "pass on_error='warn' to use the files that did trace.",
                own_failures,
            )
        ok = sorted(p for p, st in statuses.items() if st.get("status") == "ok")
        files = TracedFiles(
            root,
            {p: Path(statuses[p].get("source") or root / p) for p in ok},
            layout.resolve,
        )
        if check:
            # One pass over every file (memory: one file at a time): schema errors surface now,
            # and the import graph is known.
            iterator: Iterable[str] = ok
            if progress:
                from tqdm.auto import tqdm

                iterator = tqdm(ok, desc="check traces", unit="file")
            for path in iterator:
                files.imports_of(path)
        return cls(
            root=root,
            url=manifest.get("url", ""),
            commit=manifest.get("commit", ""),
            lean_version=manifest.get("lean_version"),
            build_deps=bool(manifest.get("build_deps", False)),
            files=files,
            failures=failures,
            manifest=manifest,
        )

    # -- contents --------------------------------------------------------------------------

    def traced_files(self) -> Iterator[TracedFile]:
        """Every traced file, by path (parsed one at a time)."""
        for p in sorted(self.files):
            yield self.files[p]

    def get_traced_file(self, path: str) -> TracedFile:
        return self.files[path]

    def imports_of(self, path: str) -> list[str]:
        files = self.files
        if isinstance(files, TracedFiles):
            return files.imports_of(path)
        return list(files[path].import_paths)

    def import_graph(self) -> nx.DiGraph[str]:
        """Edges from each traced file to each traced file it imports."""
        g: nx.DiGraph[str] = nx.DiGraph()
        for path in self.files:
            g.add_node(path)
            for imp in self.imports_of(path):
                if imp in self.files:
                    g.add_edge(path, imp)
        return g

    def paths_in_dependency_order(self) -> list[str]:
        """Imports before importers (how LeanDojo writes ``corpus.jsonl``); ties by path."""
        g = self.import_graph()
        return list(nx.lexicographical_topological_sort(g.reverse(copy=False)))

    def theorems(self, include_dependencies: bool | None = None) -> Iterator[Theorem]:
        """Theorems of the traced files, in file order. Lean's own files never count;
        dependencies count when they were traced (``build_deps``) unless told otherwise."""
        deps = self.build_deps if include_dependencies is None else include_dependencies
        for f in self.traced_files():
            if f.path.startswith(CORE_DIR) or (f.path.startswith(".lake/") and not deps):
                continue
            yield from f.theorems(self.url, self.commit)

    def premise_files(self) -> list[PremiseFile]:
        """The corpus: every traced file in dependency order; imports of files that were not
        traced are left out, so the corpus is closed (without ``build_deps`` it covers the
        repository's own files only)."""
        traced = set(self.files)
        return [
            self.files[p].premise_file(traced.__contains__)
            for p in self.paths_in_dependency_order()
        ]

    def sorry_theorems(self) -> list[tuple[str, str]]:
        """(file path, full name) of theorems whose proof uses ``sorry``."""
        out = []
        for f in self.traced_files():
            for d in f.sorry_declarations():
                if d.kind == "theorem":
                    out.append((f.path, d.name))
        return out

    def to_repository(self) -> Repository:
        return Repository(
            url=self.url,
            commit=self.commit,
            lean_version=self.lean_version,
            theorems=list(self.theorems()),
            premise_files=self.premise_files(),
            traced_files=sorted(self.files),
            metadata={
                "build_deps": self.build_deps,
                "traced_at": self.manifest.get("finished_at"),
                "failed_files": sorted(self.failures),
            },
        )
