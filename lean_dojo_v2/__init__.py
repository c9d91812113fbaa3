"""lean-dojo-v2: trace Lean 4 repositories, store them, train provers, search for proofs.

The names a program starts from are importable from here::

    from lean_dojo_v2 import LeanGitRepo, trace, DynamicDatabase, SFTTrainer, HFProver, HFAgent

- tracing: :class:`LeanGitRepo`, :func:`trace` (:mod:`lean_dojo_v2.lean_dojo`);
- the database: :class:`DynamicDatabase` (:mod:`lean_dojo_v2.database`);
- Lean environments: :class:`PantographEnv`, :class:`ReplayEnv` (:mod:`lean_dojo_v2.interaction`);
- trainers: :class:`SFTTrainer`, :class:`GRPOTrainer`, :class:`RetrievalTrainer`,
  :class:`ProgressTrainer` (:mod:`lean_dojo_v2.trainer`);
- search and provers: :class:`BestFirstSearch`, :class:`HFProver`, :class:`RetrievalProver`,
  :class:`ExternalProver` (:mod:`lean_dojo_v2.prover`);
- agents: :class:`HFAgent`, :class:`LeanAgent`, :class:`ExternalAgent` (:mod:`lean_dojo_v2.agent`).

Each is the very object of its package, imported on first use: ``import lean_dojo_v2`` loads none
of them (no torch, no transformers). Code inside the package imports from the modules that define
a name, never from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import reexport

if TYPE_CHECKING:
    from .agent import ExternalAgent, HFAgent, LeanAgent
    from .database import DynamicDatabase
    from .interaction import PantographEnv, ReplayEnv
    from .lean_dojo import LeanGitRepo, trace
    from .prover import BestFirstSearch, ExternalProver, HFProver, RetrievalProver
    from .trainer import GRPOTrainer, ProgressTrainer, RetrievalTrainer, SFTTrainer
    from .version import __version__ as __version__

_EXPORTS = {
    "ExternalAgent": ".agent",
    "HFAgent": ".agent",
    "LeanAgent": ".agent",
    "DynamicDatabase": ".database",
    "PantographEnv": ".interaction",
    "ReplayEnv": ".interaction",
    "LeanGitRepo": ".lean_dojo",
    "trace": ".lean_dojo",
    "BestFirstSearch": ".prover",
    "ExternalProver": ".prover",
    "HFProver": ".prover",
    "RetrievalProver": ".prover",
    "GRPOTrainer": ".trainer",
    "ProgressTrainer": ".trainer",
    "RetrievalTrainer": ".trainer",
    "SFTTrainer": ".trainer",
    "__version__": ".version",
}
__all__ = [
    "BestFirstSearch",
    "DynamicDatabase",
    "ExternalAgent",
    "ExternalProver",
    "GRPOTrainer",
    "HFAgent",
    "HFProver",
    "LeanAgent",
    "LeanGitRepo",
    "PantographEnv",
    "ProgressTrainer",
    "ReplayEnv",
    "RetrievalProver",
    "RetrievalTrainer",
    "SFTTrainer",
    "trace",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
