"""LeanDojo v1's interaction API on lean-dojo-v2's environments, so v1 research code runs unchanged.

``from lean_dojo_v2.v1 import Dojo, Theorem, LeanGitRepo, TacticState, ProofFinished, …`` gives
v1's names with v1's semantics (LeanDojo v1 4.20.0, and the older names ``TacticError``,
``TimeoutError``, ``DojoHardTimeoutError``, ``IncompleteSolve1``); a ``Dojo`` runs on
``PantographEnv`` where Lean and a built project are found, else on ``ReplayEnv`` over the traced
dataset named with :func:`use_dataset` or ``LEAN_DOJO_V2_V1_DATASET``. ``python -m
lean_dojo_v2.v1 SCRIPT.py [ARGS]`` (or ``lean-dojo-v2 v1-run``) runs a v1 script whose
``import lean_dojo`` then resolves here, for that run only. v1 names not provided (its tracing
internals, its constants) fail with one line naming our equivalent. See
``docs/migrating_from_v1.md``.

Names are imported on first use: importing this package loads nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

# The LeanDojo v1 release whose API this package follows (v1 code reads lean_dojo.__version__).
__version__ = "4.20.0"

if TYPE_CHECKING:
    from .backend import is_available_in_cache, use_dataset, use_project
    from .dojo import Dojo, check_proof
    from .errors import (
        DojoCrashError,
        DojoHardTimeoutError,
        DojoInitError,
        DojoTacticTimeoutError,
        InvalidStateError,
        UnknownStateError,
        UnsupportedV1NameError,
        V1ArgumentError,
        V1Error,
    )
    from .goals import Declaration, Goal, parse_goals
    from .repo import LeanGitRepo, Pos, Theorem
    from .results import (
        CommandResult,
        CommandState,
        IncompleteSolve1,
        LeanError,
        ProofFinished,
        ProofGivenUp,
        State,
        TacticError,
        TacticResult,
        TacticState,
        TimeoutError,
    )

_EXPORTS = {
    "is_available_in_cache": ".backend",
    "use_dataset": ".backend",
    "use_project": ".backend",
    "Dojo": ".dojo",
    "check_proof": ".dojo",
    "DojoCrashError": ".errors",
    "DojoHardTimeoutError": ".errors",
    "DojoInitError": ".errors",
    "DojoTacticTimeoutError": ".errors",
    "InvalidStateError": ".errors",
    "UnknownStateError": ".errors",
    "UnsupportedV1NameError": ".errors",
    "V1ArgumentError": ".errors",
    "V1Error": ".errors",
    "Declaration": ".goals",
    "Goal": ".goals",
    "parse_goals": ".goals",
    "LeanGitRepo": ".repo",
    "Pos": ".repo",
    "Theorem": ".repo",
    "CommandResult": ".results",
    "CommandState": ".results",
    "IncompleteSolve1": ".results",
    "LeanError": ".results",
    "ProofFinished": ".results",
    "ProofGivenUp": ".results",
    "State": ".results",
    "TacticError": ".results",
    "TacticResult": ".results",
    "TacticState": ".results",
    "TimeoutError": ".results",
}

_TRACING = "lean_dojo_v2.lean_dojo"
_SETTINGS = "lean_dojo_v2.config.get_settings() (cache_dir, num_workers; docs/cli.md)"

# v1 names deliberately left out → what to use instead (the one line their import fails with).
NOT_PROVIDED: dict[str, str] = {
    "trace": f"{_TRACING}.trace(url_or_path, commit=...) or `lean-dojo-v2 trace URL COMMIT`",
    "trace_local": f"{_TRACING}.trace(path) (a local path is traced the same way)",
    "get_traced_repo_path": f"{_TRACING}.get_traced_repo_path(repo)",
    "TracedRepo": f"{_TRACING}.TracedRepo (what {_TRACING}.trace returns)",
    "TracedFile": f"{_TRACING}.TracedFile",
    "TracedTheorem": f"the theorems of a {_TRACING}.TracedRepo, or lean_dojo_v2.data.Theorem",
    "TracedTactic": "lean_dojo_v2.data.TracedTactic",
    "LeanFile": f"{_TRACING}.TracedFile (a traced file with its source)",
    "get_latest_commit": f"{_TRACING}.LeanGitRepo(url).commit (the default branch's commit)",
    "set_lean_dojo_logger": "the standard logging module (logger 'lean_dojo_v2')",
    "Lean4Repl": "PantographEnv (docs/interaction.md): no REPL tactic is compiled into projects",
    "TACTIC_CPU_LIMIT": "PantographConfig.core_options (docs/interaction.md)",
    "TACTIC_MEMORY_LIMIT": "PantographConfig(max_rss_mb=...) (docs/interaction.md)",
    "TACTIC_TIMEOUT": "Dojo(theorem, timeout=...)",
    "CACHE_DIR": _SETTINGS,
    "TMP_DIR": _SETTINGS,
    "NUM_PROCS": _SETTINGS,
    "NUM_WORKERS": _SETTINGS,
    "REMOTE_CACHE_URL": "nothing: traces are built locally (`lean-dojo-v2 trace`)",
    "DISABLE_REMOTE_CACHE": "nothing: traces are built locally (`lean-dojo-v2 trace`)",
    "LEAN4_URL": "the URL https://github.com/leanprover/lean4",
    "LEAN4_PACKAGES_DIR": f"{_TRACING}.LeanGitRepo's checkout (.lake/packages)",
    "LEAN4_BUILD_DIR": f"{_TRACING}.LeanGitRepo's checkout (.lake/build)",
    "LOAD_USED_PACKAGES_ONLY": f"{_TRACING}.trace(..., build_deps=...)",
    "GITHUB_ACCESS_TOKEN": "nothing: no token is needed (plain git)",
}


def not_provided(module: str, name: str) -> Exception:
    """The one-line error for a v1 name of ``module`` that is not provided, else AttributeError."""
    hint = NOT_PROVIDED.get(name)
    if hint is None:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    from .errors import UnsupportedV1NameError

    return UnsupportedV1NameError(
        f"{module}.{name} is part of LeanDojo v1 that lean_dojo_v2.v1 does not provide; use {hint}"
    )


__getattr__, __dir__ = reexport(globals(), _EXPORTS, missing=not_provided)

__all__ = [
    "CommandResult",
    "CommandState",
    "Declaration",
    "Dojo",
    "DojoCrashError",
    "DojoHardTimeoutError",
    "DojoInitError",
    "DojoTacticTimeoutError",
    "Goal",
    "IncompleteSolve1",
    "InvalidStateError",
    "LeanError",
    "LeanGitRepo",
    "Pos",
    "ProofFinished",
    "ProofGivenUp",
    "State",
    "TacticError",
    "TacticResult",
    "TacticState",
    "Theorem",
    "TimeoutError",
    "UnknownStateError",
    "UnsupportedV1NameError",
    "V1ArgumentError",
    "V1Error",
    "check_proof",
    "is_available_in_cache",
    "parse_goals",
    "use_dataset",
    "use_project",
]
