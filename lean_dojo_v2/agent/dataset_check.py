"""Layer 4 (agent): a traced dataset read in full, and refused, before the agent's database exists.

The database adds a dataset in one transaction, so bad data never lands in it; but opening it
creates the SQLite file, and a refused first dataset would leave an empty ``db.sqlite`` behind.
:func:`check_dataset` runs the database's own reader (:func:`~lean_dojo_v2.database.ingest.plan_dataset`
and :class:`~lean_dojo_v2.database.ingest.Ingest`, its rows thrown away) first, so every error
the database would raise, with its file, record and field, comes before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def check_dataset(path: Path, options: Mapping[str, Any], *, partial: bool = False) -> None:
    """Raise what adding the dataset at ``path`` (with the database's ``add_repository``
    ``options``) would raise, and :class:`~lean_dojo_v2.errors.EmptyDatasetError` when it holds
    no theorem; write nothing."""
    from ..data.dataset import read_theorems
    from ..data.splits import STRATEGIES
    from ..database.ingest import Ingest, feed_dataset, plan_dataset
    from ..errors import DataFormatError, EmptyDatasetError

    # Checked first, and without the metadata: a dataset of empty split files cannot even name
    # its repository, and "holds no theorem" is the line that tells the user what is wrong.
    split_files = sorted(f for s in STRATEGIES for f in (path / s).glob("*.json") if f.is_file())
    if split_files and not any(read_theorems(f) for f in split_files):
        raise EmptyDatasetError(f"dataset {path} holds no theorem: nothing to train on or prove")
    plan = plan_dataset(path, options, partial=partial)
    ingest = Ingest(plan.url, plan.commit, lambda kind, rows: None, plan.source())
    feed_dataset(plan, ingest)
    if ingest.num_theorems == 0:
        raise EmptyDatasetError(f"dataset {path} holds no theorem: nothing to train on or prove")
    if plan.corpus_path is not None and not _has_record(plan.corpus_path):
        # The database takes it (every theorem then lacks premises); for a traced dataset an
        # empty corpus is a copy cut short, and retrieval would silently learn nothing.
        raise DataFormatError(
            f"holds no record, yet the dataset has {ingest.num_theorems} theorems whose files it "
            "should list; restore it from where the dataset came from (trace or export it again)",
            file=plan.corpus_path,
        )


def _has_record(path: Path) -> bool:
    with open(path, "rb") as fh:
        return any(line.strip() for line in fh)


__all__ = ["check_dataset"]
