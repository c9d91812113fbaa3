"""A traced repository: every traced file of a checkout, and what the LeanDojo layout needs.

The trace of a checkout lives in ``<root>/.lake/build/lean_dojo_v2/``: one ``<path>.trace.json``
per traced file (``<path>`` is the file's LeanDojo path) and ``manifest.json``, which says what
was traced, with which Lean, and the status of every file (``ok``, ``failed``, ``timeout``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from ..data import PremiseFile, Repository, Theorem
from ..data.jsonio import read_json
from ..errors import DataFormatError
from .errors import ExtractionError, TraceFormatError
from .layout import CORE_DIR, ProjectLayout
from .traced_file import TracedFile, load_trace

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


@dataclass
class TracedRepo:
    """The traced files of one repository at one commit."""

    root: Path
    url: str
    commit: str
    lean_version: str | None = None
    build_deps: bool = False
    files: dict[str, TracedFile] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        from ..data.model import repo_name_from_url

        return repo_name_from_url(self.url)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls, root: str | Path, *, on_error: str = "raise", progress: bool = False
    ) -> TracedRepo:
        """Read the trace of a checkout (``trace()`` calls this). ``on_error="raise"`` raises
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
        files: dict[str, TracedFile] = {}
        ok = [(p, s) for p, s in statuses.items() if s.get("status") == "ok"]
        iterator: Any = ok
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(ok, desc="parse traces", unit="file")
        for path, status in iterator:
            source = Path(status.get("source") or root / path)
            files[path] = load_trace(trace_path(root, path), source, path, layout.resolve)
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

    def traced_files(self) -> list[TracedFile]:
        return [self.files[p] for p in sorted(self.files)]

    def get_traced_file(self, path: str) -> TracedFile:
        return self.files[path]

    def import_graph(self) -> nx.DiGraph:
        """Edges from each traced file to each traced file it imports."""
        g = nx.DiGraph()
        for path, f in self.files.items():
            g.add_node(path)
            for imp in f.import_paths:
                if imp in self.files:
                    g.add_edge(path, imp)
        return g

    def files_in_dependency_order(self) -> list[TracedFile]:
        """Imports before importers (how LeanDojo writes ``corpus.jsonl``); ties by path."""
        g = self.import_graph()
        order = nx.lexicographical_topological_sort(g.reverse(copy=False))
        return [self.files[p] for p in order]

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
        return [f.premise_file(traced.__contains__) for f in self.files_in_dependency_order()]

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
