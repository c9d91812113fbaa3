"""Layer 2: the dynamic database of traced repositories (SQLite).

``DynamicDatabase(path)`` stores repository versions, theorems with their traced tactics and premise
uses, the premise corpus, sorry status, proofs found and training runs; it orders repositories by
LeanAgent's difficulty curriculum, exports LeanDojo-layout datasets and reads/writes the upstream
``dynamic_database.json``. See ``docs/database.md``.
"""

from .difficulty import (
    CATEGORIES,
    Curriculum,
    RepositoryDifficulty,
    Thresholds,
    categorize_steps,
    theorem_difficulty,
)
from .dynamic_database import DEFAULT_DB_NAME, DynamicDatabase, default_path
from .errors import (
    CorruptDatabaseError,
    DatabaseError,
    DatabaseNotFoundError,
    DatabasePermissionError,
    NotFoundError,
    RecordNotFoundError,
    RepositoryExistsError,
)
from .records import ProofRecord, RepositoryInfo, StoredTheorem, TrainingRun
from .schema import SCHEMA_VERSION, SORRY_STATUSES

__all__ = [
    "CATEGORIES",
    "CorruptDatabaseError",
    "Curriculum",
    "DEFAULT_DB_NAME",
    "DatabaseError",
    "DatabaseNotFoundError",
    "DatabasePermissionError",
    "DynamicDatabase",
    "NotFoundError",
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
