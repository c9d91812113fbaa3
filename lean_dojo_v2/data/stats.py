"""Counts over a set of theorems and its corpus (what ``lean-dojo-v2 data stats`` prints).

:class:`CorpusStats` answers a question a newcomer meets late otherwise: can a retriever be
trained on this dataset? ReProver's loader (and LeanDojo's ``Corpus``) drops every premise whose
``code`` is empty, then finds each tactic's premises by ``(def_path, def_pos)`` among the rest:
a corpus without code gives it no training example at all. ``retrieval_examples`` counts what such
a loader gets, so ``data stats`` can say so before anyone trains.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from .corpus import theorem_files_missing_from_corpus
from .dataset import CORPUS_FILE, DatasetDir, read_theorems
from .model import Pos, PremiseFile, Theorem


@dataclass(frozen=True)
class DatasetStats:
    theorems: int
    tactic_proofs: int  # theorems with a non-empty traced_tactics
    tactics: int
    premise_uses: int  # provenance entries of all annotated tactics, repeats included
    distinct_premises: int  # distinct full names among those entries
    sorry_theorems: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def compute_stats(theorems: Iterable[Theorem]) -> DatasetStats:
    n = proofs = tactics = uses = sorry = 0
    names: set[str] = set()
    for thm in theorems:
        n += 1
        if thm.traced_tactics:
            proofs += 1
            tactics += len(thm.traced_tactics)
            for tac in thm.traced_tactics:
                uses += len(tac.annotations)
                names.update(a.full_name for a in tac.annotations)
        if thm.has_sorry:
            sorry += 1
    return DatasetStats(n, proofs, tactics, uses, len(names), sorry)


def stats_of_path(
    path: str | Path, strategy: str = "random", *, partial: bool = False
) -> DatasetStats:
    """Stats of a split file, or of a dataset directory (every theorem once; an incomplete
    directory is refused unless ``partial``)."""
    path = Path(path)
    if path.is_dir():
        return compute_stats(DatasetDir(path, partial=partial).all_theorems(strategy))
    return compute_stats(read_theorems(path))


@dataclass(frozen=True)
class CorpusStats:
    """What a dataset's ``corpus.jsonl`` offers retrieval training.

    ``premises_with_code``: premises a loader that needs each declaration's text keeps (ReProver's
    rule: ``code`` not empty, not an auto-generated ``user__.n`` name, not a ``[mutual]`` block).
    ``retrieval_examples``: over the theorems counted, per tactic the distinct kept premises its
    provenances point into (the first kept premise of ``def_path`` whose ``start <= def_pos <=
    end``), summed; one training example each in ReProver, had every theorem been in train."""

    premise_files: int
    premises: int
    premises_with_code: int
    retrieval_examples: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class DatasetReport:
    """``lean-dojo-v2 data stats``: the counts, the theorem files ``corpus.jsonl`` lacks, and what
    the corpus offers retrieval (``None`` for a split file or a partial dataset without one)."""

    stats: DatasetStats
    missing_from_corpus: list[str]
    corpus: CorpusStats | None

    def retrieval_warning(self, where: str | Path) -> str | None:
        """One line when the theorems use premises but a loader that needs premise code gets no
        training example from them (the bundled sample: its corpus has no code); else None."""
        c = self.corpus
        if c is None or self.stats.premise_uses == 0 or c.retrieval_examples > 0:
            return None
        has = (
            f"none of the {c.premises:,} premises"
            if c.premises_with_code == 0
            else f"only {c.premises_with_code:,} of the {c.premises:,} premises, none used here,"
        )
        return (
            f"{has} in {Path(where) / CORPUS_FILE} has its code (the declaration's text), so "
            "ReProver's retrieval loader, which drops premises without code, gets 0 training "
            "examples from this dataset (lean-dojo-v2's own `train retrieval` falls back to "
            "premise names); to train ReProver, trace the repository with `lean-dojo-v2 trace`, "
            "whose corpus carries each declaration's code"
        )


def dataset_report(
    path: str | Path, strategy: str = "random", *, partial: bool = False
) -> DatasetReport:
    """:func:`stats_of_path`, and for a dataset directory with a ``corpus.jsonl`` the theorem files
    it lacks (see :func:`~lean_dojo_v2.data.corpus.theorem_files_missing_from_corpus`) and its
    :class:`CorpusStats`. The corpus is read first, once; the theorems are streamed."""
    path = Path(path)
    if not path.is_dir():
        return DatasetReport(stats_of_path(path, strategy), [], None)
    d = DatasetDir(path, partial=partial)
    theorems = d.all_theorems(strategy)  # checks completeness before the corpus is read
    if not (d.path / CORPUS_FILE).is_file():
        return DatasetReport(compute_stats(theorems), [], None)
    index = _PremiseIndex(d.corpus_files())
    files: set[str] = set()

    def noting(theorems: Iterable[Theorem]) -> Iterator[Theorem]:
        for t in theorems:
            files.add(t.file_path)
            index.count(t)
            yield t

    stats = compute_stats(noting(theorems))
    missing = theorem_files_missing_from_corpus(files, index.paths)
    return DatasetReport(stats, missing, index.stats())


def stats_and_corpus_gaps(
    path: str | Path, strategy: str = "random", *, partial: bool = False
) -> tuple[DatasetStats, list[str]]:
    """:func:`stats_of_path`, and for a dataset directory the theorem files its ``corpus.jsonl``
    lacks (none for a split file or a partial dataset without a corpus)."""
    report = dataset_report(path, strategy, partial=partial)
    return report.stats, report.missing_from_corpus


class _PremiseIndex:
    """Per corpus file, the kept premises' ranges in file order, and the running example count."""

    def __init__(self, files: Iterable[PremiseFile]) -> None:
        self.paths: list[str] = []
        self._ranges: dict[str, list[tuple[Pos, Pos]]] = {}
        self.premises = self.with_code = self.examples = 0
        self._found: dict[tuple[str, Pos], int | None] = {}
        for f in files:
            self.paths.append(f.path)
            kept = [(p.start, p.end) for p in f.premises if _kept(p.full_name, p.code)]
            self.premises += len(f.premises)
            self.with_code += len(kept)
            self._ranges[f.path] = kept

    def _locate(self, path: str, pos: Pos) -> int | None:
        key = (path, pos)
        if key not in self._found:
            ranges = self._ranges.get(path, [])
            self._found[key] = next(
                (i for i, (start, end) in enumerate(ranges) if start <= pos <= end), None
            )
        return self._found[key]

    def count(self, theorem: Theorem) -> None:
        for tactic in theorem.traced_tactics:
            hits = {(a.def_path, self._locate(a.def_path, a.def_pos)) for a in tactic.annotations}
            self.examples += sum(1 for _, i in hits if i is not None)

    def stats(self) -> CorpusStats:
        return CorpusStats(len(self.paths), self.premises, self.with_code, self.examples)


def _kept(full_name: str, code: str) -> bool:
    return (
        code != ""
        and "user__.n" not in full_name
        and not (full_name.startswith("[") and full_name.endswith("]"))
    )
