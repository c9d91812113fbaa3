"""Layer 1: the Lean boundary.

Everything above this layer talks to Lean through :class:`ProofEnv` / :class:`AsyncProofEnv`:
``PantographEnv`` (a real Lean via the Pantograph REPL) or ``ReplayEnv`` (transitions recorded by
real Lean runs).
"""

from .base import AsyncProofEnv, ProofEnv
from .pantograph import AsyncPantographEnv, PantographConfig, PantographEnv, PantographPool
from .replay import AsyncReplayEnv, ReplayEnv, TransitionTable, normalize_tactic, split_tactics
from .types import (
    EnvCrashed,
    InteractionError,
    LeanNotFoundError,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticResult,
    TacticTimeout,
    UnknownTheoremError,
    Verdict,
    VersionMismatchError,
)

__all__ = [
    "AsyncPantographEnv",
    "AsyncProofEnv",
    "AsyncReplayEnv",
    "EnvCrashed",
    "InteractionError",
    "LeanNotFoundError",
    "PantographConfig",
    "PantographEnv",
    "PantographPool",
    "ProofEnv",
    "ProofFinished",
    "ProofState",
    "ReplayEnv",
    "StaleStateError",
    "TacticError",
    "TacticResult",
    "TacticTimeout",
    "TransitionTable",
    "UnknownTheoremError",
    "Verdict",
    "VersionMismatchError",
    "normalize_tactic",
    "split_tactics",
]
