"""Pantograph backend: our own asyncio client of the Pantograph ``repl`` binary.

- :class:`AsyncPantographClient`: typed low-level API, one method per REPL command;
- :class:`AsyncPantographEnv` / :class:`PantographEnv`: the ``ProofEnv`` contract on top;
- :class:`PantographPool`: N servers for parallel search;
- :class:`PantographConfig`: how to find, launch and drive the binary.

Names are imported on first use: importing this package starts nothing and loads none of its
modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import reexport

if TYPE_CHECKING:
    from .async_env import AsyncPantographEnv, StateHandle
    from .blocking import PantographEnv
    from .client import AsyncPantographClient, ClientClosedError
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
        ReplDiedError,
        ReplProcess,
        ReplProtocolError,
        ReplStartError,
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

_EXPORTS = {
    "AsyncPantographEnv": ".async_env",
    "StateHandle": ".async_env",
    "PantographEnv": ".blocking",
    "AsyncPantographClient": ".client",
    "ClientClosedError": ".client",
    "PantographConfig": ".config",
    "proof_file": ".lean_text",
    "statement_from_source": ".lean_text",
    "ENV_BINARY": ".locate",
    "ENV_CHECKOUT": ".locate",
    "Located": ".locate",
    "ReplVersion": ".locate",
    "locate_repl": ".locate",
    "module_name": ".locate",
    "parse_version": ".locate",
    "PantographPool": ".pool",
    "ReplDiedError": ".process",
    "ReplProcess": ".process",
    "ReplProtocolError": ".process",
    "ReplStartError": ".process",
    "ReplTimeoutError": ".process",
    "CompilationUnit": ".protocol",
    "ContinuedGoal": ".protocol",
    "DistilTarget": ".protocol",
    "GoalInfo": ".protocol",
    "GoalPrint": ".protocol",
    "InspectResult": ".protocol",
    "Message": ".protocol",
    "PantographError": ".protocol",
    "StartedGoal": ".protocol",
    "TacticOutcome": ".protocol",
    "Variable": ".protocol",
    "canonical_goals": ".protocol",
    "render_goals": ".protocol",
}
__all__ = [
    "AsyncPantographClient",
    "AsyncPantographEnv",
    "ClientClosedError",
    "CompilationUnit",
    "ContinuedGoal",
    "DistilTarget",
    "ENV_BINARY",
    "ENV_CHECKOUT",
    "GoalInfo",
    "GoalPrint",
    "InspectResult",
    "Located",
    "Message",
    "PantographConfig",
    "PantographEnv",
    "PantographError",
    "PantographPool",
    "ReplDiedError",
    "ReplProcess",
    "ReplProtocolError",
    "ReplStartError",
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

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
