"""Counts over a set of theorems (what ``lean-dojo-v2 data stats`` prints)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from .corpus import theorem_files_missing_from_corpus
from .dataset import CORPUS_FILE, DatasetDir, read_theorems
from .model import Theorem


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


def stats_and_corpus_gaps(
    path: str | Path, strategy: str = "random", *, partial: bool = False
) -> tuple[DatasetStats, list[str]]:
    """:func:`stats_of_path`, and for a dataset directory the theorem files its ``corpus.jsonl``
    lacks (see :func:`~lean_dojo_v2.data.corpus.theorem_files_missing_from_corpus`; none for a
    split file or a partial dataset without a corpus)."""
    path = Path(path)
    if not path.is_dir():
        return stats_of_path(path, strategy), []
    d = DatasetDir(path, partial=partial)
    files: set[str] = set()

    def noting_files(theorems: Iterable[Theorem]) -> Iterator[Theorem]:
        for t in theorems:
            files.add(t.file_path)
            yield t

    stats = compute_stats(noting_files(d.all_theorems(strategy)))
    if not (d.path / CORPUS_FILE).is_file():
        return stats, []
    return stats, theorem_files_missing_from_corpus(files, d.corpus_paths())
