"""Layer 0: the data model and formats (no torch, nothing heavy).

Everything a user needs to read, write, split and inspect LeanDojo-layout datasets. Names are
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .corpus import Corpus, theorem_files_missing_from_corpus
    from .dataset import (
        Dataset,
        DatasetDir,
        load_theorems,
        missing_dataset_parts,
        read_dataset,
        read_theorems,
        require_complete_dataset,
        write_dataset,
        write_split_dataset,
        write_theorems,
    )
    from .goals import (
        NO_GOALS,
        Goal,
        Hypothesis,
        canonical_state,
        clean_state,
        goal_texts,
        is_no_goals,
        normalize_state,
        split_goals,
    )
    from .marks import marked_identifiers, remove_marks
    from .model import Annotation, Pos, Premise, PremiseFile, Repository, Theorem, TracedTactic
    from .sample import sample_dataset_path
    from .sorry import (
        Declaration,
        file_has_sorry,
        find_declarations,
        find_sorry_tokens,
        sorry_declarations,
        strip_comments,
    )
    from .splits import SplitSpec, split_novel_premises, split_random, split_theorems
    from .stats import DatasetStats, compute_stats, stats_of_path

_EXPORTS = {
    "Corpus": ".corpus",
    "theorem_files_missing_from_corpus": ".corpus",
    "Dataset": ".dataset",
    "DatasetDir": ".dataset",
    "load_theorems": ".dataset",
    "missing_dataset_parts": ".dataset",
    "read_dataset": ".dataset",
    "read_theorems": ".dataset",
    "require_complete_dataset": ".dataset",
    "write_dataset": ".dataset",
    "write_split_dataset": ".dataset",
    "write_theorems": ".dataset",
    "NO_GOALS": ".goals",
    "Goal": ".goals",
    "Hypothesis": ".goals",
    "canonical_state": ".goals",
    "clean_state": ".goals",
    "goal_texts": ".goals",
    "is_no_goals": ".goals",
    "normalize_state": ".goals",
    "split_goals": ".goals",
    "marked_identifiers": ".marks",
    "remove_marks": ".marks",
    "Annotation": ".model",
    "Pos": ".model",
    "Premise": ".model",
    "PremiseFile": ".model",
    "Repository": ".model",
    "Theorem": ".model",
    "TracedTactic": ".model",
    "sample_dataset_path": ".sample",
    "Declaration": ".sorry",
    "file_has_sorry": ".sorry",
    "find_declarations": ".sorry",
    "find_sorry_tokens": ".sorry",
    "sorry_declarations": ".sorry",
    "strip_comments": ".sorry",
    "SplitSpec": ".splits",
    "split_novel_premises": ".splits",
    "split_random": ".splits",
    "split_theorems": ".splits",
    "DatasetStats": ".stats",
    "compute_stats": ".stats",
    "stats_of_path": ".stats",
}
__all__ = [
    "Annotation",
    "Corpus",
    "Dataset",
    "DatasetDir",
    "DatasetStats",
    "Declaration",
    "Goal",
    "Hypothesis",
    "NO_GOALS",
    "Pos",
    "Premise",
    "PremiseFile",
    "Repository",
    "SplitSpec",
    "Theorem",
    "TracedTactic",
    "canonical_state",
    "clean_state",
    "compute_stats",
    "file_has_sorry",
    "find_declarations",
    "find_sorry_tokens",
    "goal_texts",
    "is_no_goals",
    "load_theorems",
    "marked_identifiers",
    "missing_dataset_parts",
    "normalize_state",
    "read_dataset",
    "read_theorems",
    "remove_marks",
    "require_complete_dataset",
    "sample_dataset_path",
    "sorry_declarations",
    "split_goals",
    "split_novel_premises",
    "split_random",
    "split_theorems",
    "stats_of_path",
    "strip_comments",
    "theorem_files_missing_from_corpus",
    "write_dataset",
    "write_split_dataset",
    "write_theorems",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
