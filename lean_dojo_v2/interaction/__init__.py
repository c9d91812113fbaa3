"""Layer 1: the Lean boundary.

Everything above this layer talks to Lean through :class:`ProofEnv` / :class:`AsyncProofEnv`:
``PantographEnv`` (a real Lean via the Pantograph REPL) or ``ReplayEnv`` (transitions recorded by
real Lean runs). The results and errors they share are those of :mod:`.types`;
:mod:`.async_adapter` turns any of them into the :class:`AsyncProofEnv` search runs on.

Names are imported on first use: every layer above imports this package, and importing it loads
none of its modules (asyncio and the REPL client load with the environments).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..errors import InteractionError, LeanNotFoundError
    from .async_adapter import (
        ThreadedProofEnv,
        as_async_env,
        as_async_envs,
        restarts_of,
        shares_states,
    )
    from .base import AsyncProofEnv, ProofEnv
    from .messages import LeanMessage
    from .pantograph import AsyncPantographEnv, PantographConfig, PantographEnv, PantographPool
    from .replay import AsyncReplayEnv, ReplayEnv, TransitionTable, normalize_tactic, split_tactics
    from .standalone import standalone_header, standalone_theorem
    from .types import (
        STANDARD_AXIOMS,
        EnvClosedError,
        EnvCrashedError,
        InvalidRequestError,
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
    from .wrapped import WrappedEnv, wrap_each

_EXPORTS = {
    "InteractionError": "..errors",
    "LeanNotFoundError": "..errors",
    "ThreadedProofEnv": ".async_adapter",
    "as_async_env": ".async_adapter",
    "as_async_envs": ".async_adapter",
    "restarts_of": ".async_adapter",
    "shares_states": ".async_adapter",
    "AsyncProofEnv": ".base",
    "ProofEnv": ".base",
    "LeanMessage": ".messages",
    "AsyncPantographEnv": ".pantograph",
    "PantographConfig": ".pantograph",
    "PantographEnv": ".pantograph",
    "PantographPool": ".pantograph",
    "AsyncReplayEnv": ".replay",
    "ReplayEnv": ".replay",
    "TransitionTable": ".replay",
    "normalize_tactic": ".replay",
    "split_tactics": ".replay",
    "standalone_header": ".standalone",
    "standalone_theorem": ".standalone",
    "WrappedEnv": ".wrapped",
    "wrap_each": ".wrapped",
    "STANDARD_AXIOMS": ".types",
    "EnvClosedError": ".types",
    "EnvCrashedError": ".types",
    "InvalidRequestError": ".types",
    "ProofFinished": ".types",
    "ProofState": ".types",
    "StaleStateError": ".types",
    "TacticError": ".types",
    "TacticResult": ".types",
    "TacticTimeout": ".types",
    "UnknownTheoremError": ".types",
    "Verdict": ".types",
    "VersionMismatchError": ".types",
}
__all__ = [
    "AsyncPantographEnv",
    "AsyncProofEnv",
    "AsyncReplayEnv",
    "EnvClosedError",
    "EnvCrashedError",
    "InteractionError",
    "InvalidRequestError",
    "LeanMessage",
    "LeanNotFoundError",
    "PantographConfig",
    "PantographEnv",
    "PantographPool",
    "ProofEnv",
    "ProofFinished",
    "ProofState",
    "ReplayEnv",
    "STANDARD_AXIOMS",
    "StaleStateError",
    "TacticError",
    "TacticResult",
    "TacticTimeout",
    "ThreadedProofEnv",
    "TransitionTable",
    "UnknownTheoremError",
    "Verdict",
    "VersionMismatchError",
    "WrappedEnv",
    "as_async_env",
    "as_async_envs",
    "normalize_tactic",
    "restarts_of",
    "shares_states",
    "split_tactics",
    "standalone_header",
    "standalone_theorem",
    "wrap_each",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
