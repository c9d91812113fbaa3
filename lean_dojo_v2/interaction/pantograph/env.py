"""Layer 1 (interaction): the :class:`ProofEnv` contract over a Pantograph REPL, in one place.

One job per module; this face keeps the names importable from here:

- :mod:`.async_env`: :class:`AsyncPantographEnv` (``start``, ``run_tactic``, ``verify`` over one
  REPL) and the :class:`StateHandle` its states carry;
- :mod:`.blocking`: :class:`PantographEnv`, the blocking twin on a private event loop;
- :mod:`.lean_text`: the Lean text both elaborate (:class:`TheoremSource`,
  :func:`file_check_text`, :func:`context_check_text`, :func:`proof_file`,
  :func:`statement_from_source`, :func:`set_option_prefix`).
"""

from __future__ import annotations

from ...data.lean_lexer import find_top_level_assign
from ..types import EnvCrashed, EnvCrashedError
from .async_env import BACKEND, AsyncPantographEnv, StateHandle
from .blocking import PantographEnv
from .lean_text import (
    RENAME_SUFFIX,
    CheckedText,
    TheoremSource,
    context_check_text,
    file_check_text,
    proof_file,
    set_option_prefix,
    statement_from_source,
)

# The one Lean scanner lives in the data layer; the old private name stays for callers.
_find_top_level_assign = find_top_level_assign

__all__ = [
    "BACKEND",
    "RENAME_SUFFIX",
    "AsyncPantographEnv",
    "CheckedText",
    "EnvCrashed",  # deprecated alias of EnvCrashedError
    "EnvCrashedError",
    "PantographEnv",
    "StateHandle",
    "TheoremSource",
    "context_check_text",
    "file_check_text",
    "proof_file",
    "set_option_prefix",
    "statement_from_source",
]
