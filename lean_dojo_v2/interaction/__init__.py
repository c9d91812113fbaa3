"""Layer 1: the Lean boundary.

Everything above this layer talks to Lean through :class:`ProofEnv` / :class:`AsyncProofEnv`:
``PantographEnv`` (a real Lean via the Pantograph REPL) or ``ReplayEnv`` (transitions recorded by
real Lean runs). The results and errors they share are those of :mod:`.types` (its ``__all__``);
:mod:`.async_adapter` turns any of them into the :class:`AsyncProofEnv` search runs on.
"""

from . import types as _types
from .async_adapter import (
    ThreadedProofEnv,
    as_async_env,
    as_async_envs,
    restarts_of,
    shares_states,
)
from .base import AsyncProofEnv, ProofEnv
from .pantograph import AsyncPantographEnv, PantographConfig, PantographEnv, PantographPool
from .replay import AsyncReplayEnv, ReplayEnv, TransitionTable, normalize_tactic, split_tactics
from .types import *  # noqa: F403 - the boundary's results and errors, listed once in types

__all__ = [
    "AsyncPantographEnv",
    "AsyncProofEnv",
    "AsyncReplayEnv",
    "PantographConfig",
    "PantographEnv",
    "PantographPool",
    "ProofEnv",
    "ReplayEnv",
    "ThreadedProofEnv",
    "TransitionTable",
    "as_async_env",
    "as_async_envs",
    "normalize_tactic",
    "restarts_of",
    "shares_states",
    "split_tactics",
    *_types.__all__,
]
