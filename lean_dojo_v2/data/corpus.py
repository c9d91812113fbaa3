"""The premise corpus (``corpus.jsonl``): files, their imports as a DAG, and the premises each defines.

A premise is *accessible* at a position of a file when it is defined in a file that the file imports
(directly or transitively), or earlier in the same file. Retrieval uses this to rank only premises
that Lean would let the proof use.
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorpusError
from .jsonio import iter_jsonl
from .model import Pos, Premise, PremiseFile

if TYPE_CHECKING:
    import networkx as nx


class Corpus:
    """Premise files with their import DAG.

    Edges go from a file to each file it imports. ``files`` keeps dependency order (every file after
    all its imports), the order in which LeanDojo writes ``corpus.jsonl``.
    """

    def __init__(self, files: Iterable[PremiseFile]) -> None:
        # networkx costs ~0.25 s to import: load it when a corpus is built, not with the package.
        import networkx as nx

        self._files: dict[str, PremiseFile] = {}
        self.graph: nx.DiGraph = nx.DiGraph()
        for f in files:
            if f.path in self._files:
                raise CorpusError(f"file {f.path!r} appears twice in the corpus")
            self._files[f.path] = f
            self.graph.add_node(f.path)
        for f in self._files.values():
            for imp in f.imports:
                if imp not in self._files:
                    raise CorpusError(f"{f.path!r} imports {imp!r}, which is not in the corpus")
                self.graph.add_edge(f.path, imp)
        if not nx.is_directed_acyclic_graph(self.graph):
            cycle = nx.find_cycle(self.graph)
            raise CorpusError(f"import cycle: {' -> '.join(a for a, _ in cycle)}")
        # Premises per file sorted by start, for "earlier in the same file" lookups.
        self._starts: dict[str, list[Pos]] = {}
        self._by_start: dict[str, list[Premise]] = {}
        self._by_name: dict[str, Premise] = {}
        self._by_location: dict[tuple[str, Pos], Premise] = {}
        for f in self._files.values():
            ordered = sorted(f.premises, key=lambda p: p.start)
            self._by_start[f.path] = ordered
            self._starts[f.path] = [p.start for p in ordered]
            for p in f.premises:
                self._by_name.setdefault(p.full_name, p)
                self._by_location[(f.path, p.start)] = p
        self._closure: dict[str, frozenset[str]] = {}

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Corpus:
        return cls(iter_jsonl(path, PremiseFile.from_dict))

    def __len__(self) -> int:
        return sum(len(f.premises) for f in self._files.values())

    def __contains__(self, path: object) -> bool:
        return path in self._files

    @property
    def files(self) -> list[PremiseFile]:
        """Files in dependency order (imports first); ties keep corpus order."""
        import networkx as nx

        position = {p: i for i, p in enumerate(self._files)}
        order = nx.lexicographical_topological_sort(
            self.graph.reverse(copy=False), key=position.get
        )
        return [self._files[p] for p in order]

    @property
    def premises(self) -> Iterator[Premise]:
        for f in self._files.values():
            yield from f.premises

    def get_file(self, path: str) -> PremiseFile:
        try:
            return self._files[path]
        except KeyError:
            raise CorpusError(f"no file {path!r} in the corpus") from None

    def imports_of(self, path: str) -> frozenset[str]:
        """Every file ``path`` imports, directly or transitively."""
        self.get_file(path)
        if path not in self._closure:
            import networkx as nx

            self._closure[path] = frozenset(nx.descendants(self.graph, path))
        return self._closure[path]

    def accessible_premises(self, path: str, pos: Pos | None = None) -> list[Premise]:
        """Premises usable at ``pos`` in ``path``: all of the imported files', plus those of
        ``path`` itself that start before ``pos`` (all of them when ``pos`` is None)."""
        result: list[Premise] = []
        for dep in sorted(self.imports_of(path)):
            result.extend(self._files[dep].premises)
        own = self._by_start[path]
        if pos is None:
            result.extend(own)
        else:
            result.extend(own[: bisect.bisect_left(self._starts[path], pos)])
        return result

    def locate_premise(self, def_path: str, def_pos: Pos) -> Premise | None:
        """The premise whose definition covers ``def_pos`` in ``def_path`` (a tactic's provenance
        points at the name inside the declaration, not at its start)."""
        if def_path not in self._files:
            return None
        exact = self._by_location.get((def_path, def_pos))
        if exact is not None:
            return exact
        starts = self._starts[def_path]
        i = bisect.bisect_right(starts, def_pos) - 1
        if i >= 0:
            candidate = self._by_start[def_path][i]
            if candidate.start <= def_pos <= candidate.end:
                return candidate
        return None

    def get_premise(self, full_name: str) -> Premise | None:
        return self._by_name.get(full_name)


def theorem_files_missing_from_corpus(
    theorem_paths: Iterable[str], corpus: Corpus | Iterable[PremiseFile] | Iterable[str]
) -> list[str]:
    """The distinct files among ``theorem_paths`` that the corpus lacks, sorted.

    A theorem whose file is not in ``corpus.jsonl`` has no accessible premises:
    :meth:`Corpus.accessible_premises` raises for it and LeanDojo's own loaders (ReProver's
    ``get_accessible_premises``) fail with ``KeyError``. ``corpus`` is a :class:`Corpus`, its
    files, or their paths.
    """
    if isinstance(corpus, Corpus):
        known: Container[str] = corpus
    else:
        known = {f.path if isinstance(f, PremiseFile) else f for f in corpus}
    return sorted({p for p in theorem_paths if p not in known})
