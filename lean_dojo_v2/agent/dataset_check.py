"""Layer 4 (agent): a traced dataset checked, and refused, before the agent's database is touched.

The database adds a dataset in one transaction, so bad data never lands in it; but opening it
creates the SQLite file, and a refused first dataset would leave an empty ``db.sqlite`` behind.
Two guards keep that from happening without reading a dataset twice (a mathlib-size one is
gigabytes of JSON):

- :func:`check_dataset` runs what is cheap before the database is opened: the database's own
  plan of the dataset (:func:`~lean_dojo_v2.database.ingest.plan_dataset`: its parts, metadata,
  repository), that it holds a theorem, and that its corpus holds a record;
- :func:`new_database_removed_on_failure`: a database file that did not exist before the dataset
  was added (this call made it) is removed again when adding fails, whatever the reason (a bad
  record deep in a split file, with its file, record and field).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# SQLite's companions of a database file (write-ahead log, shared memory, rollback journal).
_SIDE_FILES = ("-wal", "-shm", "-journal")


def check_dataset(path: Path, options: Mapping[str, Any], *, partial: bool = False) -> None:
    """Raise, writing nothing, what can be known of the dataset at ``path`` without reading all
    of it: what :func:`~lean_dojo_v2.database.ingest.plan_dataset` raises (missing parts, bad
    metadata, no repository), :class:`~lean_dojo_v2.errors.EmptyDatasetError` when no split
    file holds a theorem, and :class:`~lean_dojo_v2.errors.DataFormatError` for an empty
    ``corpus.jsonl``."""
    from ..data.splits import STRATEGIES
    from ..database.ingest import plan_dataset
    from ..errors import DataFormatError, EmptyDatasetError

    # Checked first, and without the metadata: a dataset of empty split files cannot even name
    # its repository, and "holds no theorem" is the line that tells the user what is wrong.
    split_files = sorted(f for s in STRATEGIES for f in (path / s).glob("*.json") if f.is_file())
    if split_files and not any(_may_hold_a_record(f) for f in split_files):
        raise EmptyDatasetError(f"dataset {path} holds no theorem: nothing to train on or prove")
    plan = plan_dataset(path, options, partial=partial)
    if plan.corpus_path is not None and not _has_record(plan.corpus_path):
        # The database takes it (every theorem then lacks premises); for a traced dataset an
        # empty corpus is a copy cut short, and retrieval would silently learn nothing.
        raise DataFormatError(
            "holds no record, yet the dataset has theorems whose files it should list; restore "
            "it from where the dataset came from (trace or export it again)",
            file=plan.corpus_path,
        )


@contextmanager
def new_database_removed_on_failure(db_path: Path, close: Callable[[], None]) -> Iterator[None]:
    """Run the body; when it raises and ``db_path`` did not exist before it, ``close()`` the
    database and remove the file it made (and SQLite's side files, and the folders made for it
    that are empty again): nothing is left behind by a refused first dataset. An existing
    database is left to its transaction (unchanged)."""
    existed = db_path.exists()
    made = [p for p in db_path.parents if not p.exists()]  # deepest first
    try:
        yield
    except BaseException:
        if not existed:
            close()
            for suffix in ("", *_SIDE_FILES):
                try:
                    os.unlink(f"{db_path}{suffix}")
                except FileNotFoundError:
                    pass
                except OSError as exc:  # never hide the real error behind the clean-up's
                    log.warning("could not remove %s%s: %s", db_path, suffix, exc)
            for folder in made:
                try:
                    folder.rmdir()  # only while empty: never anything someone else put there
                except OSError:
                    break
        raise


def _may_hold_a_record(path: Path) -> bool:
    """False when the JSON array in ``path`` is empty (``[]``, or no text at all), read from its
    first bytes only; anything else is for the database's reader to judge in full."""
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip()
    if not head:
        return False
    return not (head[:1] == b"[" and head[1:].lstrip()[:1] == b"]")


def _has_record(path: Path) -> bool:
    with open(path, "rb") as fh:
        return any(line.strip() for line in fh)


__all__ = ["check_dataset", "new_database_removed_on_failure"]
