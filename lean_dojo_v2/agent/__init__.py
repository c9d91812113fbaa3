"""Layer 4: the agents — upstream LeanDojo-v2's loop (set up a repository, train, prove) wired onto
the library's tracing, database, trainers and provers. Wiring only; nothing here is an algorithm.

``from lean_dojo_v2.agent import HFAgent, LeanAgent, ExternalAgent, BaseAgent`` (also at their
upstream paths ``lean_dojo_v2.agent.hf_agent`` etc.). Names are imported on first use. See
``docs/agents.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..errors import AgentConfigError, AgentError
    from ..prover.outcome import TheoremOutcome
    from .base import AgentRepository, BaseAgent, ProofTarget
    from .errors import NoRepositoryError
    from .external_agent import ExternalAgent
    from .hf_agent import HFAgent
    from .lean_agent import LeanAgent
    from .results import LifelongResult, ProveReport

_EXPORTS = {
    "AgentConfigError": "..errors",
    "AgentError": "..errors",
    "TheoremOutcome": "..prover.outcome",
    "AgentRepository": ".base",
    "BaseAgent": ".base",
    "ProofTarget": ".base",
    "NoRepositoryError": ".errors",
    "ExternalAgent": ".external_agent",
    "HFAgent": ".hf_agent",
    "LeanAgent": ".lean_agent",
    "LifelongResult": ".results",
    "ProveReport": ".results",
}
__all__ = [
    "AgentConfigError",
    "AgentError",
    "AgentRepository",
    "BaseAgent",
    "ExternalAgent",
    "HFAgent",
    "LeanAgent",
    "LifelongResult",
    "NoRepositoryError",
    "ProofTarget",
    "ProveReport",
    "TheoremOutcome",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
