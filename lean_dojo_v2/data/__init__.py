"""Layer 0: the data model and formats (no torch, nothing heavy).

Everything a user needs to read, write, split and inspect LeanDojo-layout datasets.
"""

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
from .model import (
    Annotation,
    Pos,
    Premise,
    PremiseFile,
    Repository,
    Theorem,
    TracedTactic,
)
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
