"""Pantograph backend: our own asyncio client of the Pantograph ``repl`` binary.

- :class:`AsyncPantographClient`: typed low-level API, one method per REPL command;
- :class:`AsyncPantographEnv` / :class:`PantographEnv`: the ``ProofEnv`` contract on top;
- :class:`PantographPool`: N servers for parallel search;
- :class:`PantographConfig`: how to find, launch and drive the binary.

Importing this package starts nothing.
"""

from .async_env import AsyncPantographEnv, StateHandle
from .blocking import PantographEnv
from .client import AsyncPantographClient, ClientClosed, ClientClosedError
from .config import PantographConfig
from .lean_text import proof_file, statement_from_source
from .locate import (
    ENV_BINARY,
    ENV_CHECKOUT,
    Located,
    ReplVersion,
    locate_repl,
    module_name,
    parse_version,
)
from .pool import PantographPool
from .process import (
    ReplDied,
    ReplDiedError,
    ReplProcess,
    ReplProtocolError,
    ReplStartError,
    ReplTimeout,
    ReplTimeoutError,
)
from .protocol import (
    CompilationUnit,
    ContinuedGoal,
    DistilTarget,
    GoalInfo,
    GoalPrint,
    InspectResult,
    Message,
    PantographError,
    StartedGoal,
    TacticOutcome,
    Variable,
    canonical_goals,
    render_goals,
)

__all__ = [
    "ENV_BINARY",
    "ENV_CHECKOUT",
    "AsyncPantographClient",
    "AsyncPantographEnv",
    "ClientClosed",
    "ClientClosedError",
    "CompilationUnit",
    "ContinuedGoal",
    "DistilTarget",
    "GoalInfo",
    "GoalPrint",
    "InspectResult",
    "Located",
    "Message",
    "PantographConfig",
    "PantographEnv",
    "PantographError",
    "PantographPool",
    "ReplDied",
    "ReplDiedError",
    "ReplProcess",
    "ReplProtocolError",
    "ReplStartError",
    "ReplTimeout",
    "ReplTimeoutError",
    "ReplVersion",
    "StartedGoal",
    "StateHandle",
    "TacticOutcome",
    "Variable",
    "canonical_goals",
    "locate_repl",
    "module_name",
    "parse_version",
    "proof_file",
    "render_goals",
    "statement_from_source",
]
