"""Layer 1: the Lean boundary.

Everything above this layer talks to Lean through :class:`ProofEnv` / :class:`AsyncProofEnv`:
``PantographEnv`` (a real Lean via the Pantograph REPL) or ``ReplayEnv`` (transitions recorded by
real Lean runs). The results and errors they share are those of :mod:`.types` (its ``__all__``);
:mod:`.async_adapter` turns any of them into the :class:`AsyncProofEnv` search runs on.
"""

from typing import TYPE_CHECKING

from .._lazy import reexport
from . import types as _types
from .base import AsyncProofEnv, ProofEnv
from .types import *  # noqa: F403 - the boundary's results and errors, listed once in types

if TYPE_CHECKING:
    from .async_adapter import (
        ThreadedProofEnv,
        as_async_env,
        as_async_envs,
        restarts_of,
        shares_states,
    )
    from .pantograph import AsyncPantographEnv, PantographConfig, PantographEnv, PantographPool
    from .replay import AsyncReplayEnv, ReplayEnv, TransitionTable, normalize_tactic, split_tactics

# The environments and the adapter load asyncio and the REPL client: imported on first use, so
# `import lean_dojo_v2.interaction` (every layer above imports it) stays cheap.
_LAZY = {
    "ThreadedProofEnv": ".async_adapter",
    "as_async_env": ".async_adapter",
    "as_async_envs": ".async_adapter",
    "restarts_of": ".async_adapter",
    "shares_states": ".async_adapter",
    "AsyncPantographEnv": ".pantograph",
    "PantographConfig": ".pantograph",
    "PantographEnv": ".pantograph",
    "PantographPool": ".pantograph",
    "AsyncReplayEnv": ".replay",
    "ReplayEnv": ".replay",
    "TransitionTable": ".replay",
    "normalize_tactic": ".replay",
    "split_tactics": ".replay",
}

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

__getattr__, __dir__ = reexport(globals(), _LAZY)
