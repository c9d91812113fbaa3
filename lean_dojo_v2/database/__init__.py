"""Layer 2: the dynamic database of traced repositories (SQLite).

``DynamicDatabase(path)`` stores repository versions, theorems with their traced tactics and premise
uses, the premise corpus, sorry status, proofs found and training runs; it orders repositories by
LeanAgent's difficulty curriculum, exports LeanDojo-layout datasets and reads/writes the upstream
``dynamic_database.json``. See ``docs/database.md``.

Names are imported on first use: importing this package loads none of its modules (sqlite3
included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .connection import DEFAULT_DB_NAME, default_path
    from .difficulty import (
        CATEGORIES,
        Curriculum,
        RepositoryDifficulty,
        Thresholds,
        categorize_steps,
        theorem_difficulty,
    )
    from .dynamic_database import DynamicDatabase
    from .errors import (
        CorruptDatabaseError,
        DatabaseError,
        DatabaseNotFoundError,
        DatabasePermissionError,
        RecordNotFoundError,
        RepositoryExistsError,
    )
    from .records import ProofRecord, RepositoryInfo, StoredTheorem, TrainingRun
    from .schema import SCHEMA_VERSION, SORRY_STATUSES

_EXPORTS = {
    "CATEGORIES": ".difficulty",
    "Curriculum": ".difficulty",
    "RepositoryDifficulty": ".difficulty",
    "Thresholds": ".difficulty",
    "categorize_steps": ".difficulty",
    "theorem_difficulty": ".difficulty",
    "DEFAULT_DB_NAME": ".connection",
    "default_path": ".connection",
    "DynamicDatabase": ".dynamic_database",
    "CorruptDatabaseError": ".errors",
    "DatabaseError": ".errors",
    "DatabaseNotFoundError": ".errors",
    "DatabasePermissionError": ".errors",
    "RecordNotFoundError": ".errors",
    "RepositoryExistsError": ".errors",
    "ProofRecord": ".records",
    "RepositoryInfo": ".records",
    "StoredTheorem": ".records",
    "TrainingRun": ".records",
    "SCHEMA_VERSION": ".schema",
    "SORRY_STATUSES": ".schema",
}
__all__ = [
    "CATEGORIES",
    "CorruptDatabaseError",
    "Curriculum",
    "DEFAULT_DB_NAME",
    "DatabaseError",
    "DatabaseNotFoundError",
    "DatabasePermissionError",
    "DynamicDatabase",
    "ProofRecord",
    "RecordNotFoundError",
    "RepositoryDifficulty",
    "RepositoryExistsError",
    "RepositoryInfo",
    "SCHEMA_VERSION",
    "SORRY_STATUSES",
    "StoredTheorem",
    "Thresholds",
    "TrainingRun",
    "categorize_steps",
    "default_path",
    "theorem_difficulty",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
