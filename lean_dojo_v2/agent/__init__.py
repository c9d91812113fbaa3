"""Layer 4: the agents — the seed's loop (set up a repository, train, prove) wired onto the
library's tracing, database, trainers and provers. Wiring only; nothing here is an algorithm.

``from lean_dojo_v2.agent import HFAgent, LeanAgent, ExternalAgent, BaseAgent`` (also at their
upstream paths ``lean_dojo_v2.agent.hf_agent`` etc.). Importing this package is cheap: every name
is resolved on first use. See ``docs/agents.md``.
"""

from __future__ import annotations

from .._lazy import reexport

_LAZY = {
    "BaseAgent": ".base",
    "AgentRepository": ".base",
    "ProofTarget": ".base",
    "HFAgent": ".hf_agent",
    "LeanAgent": ".lean_agent",
    "ExternalAgent": ".external_agent",
    "ProveReport": ".results",
    "TheoremOutcome": ".results",
    "LifelongResult": ".results",
    "AgentError": ".errors",
    "AgentConfigError": ".errors",
    "NoRepositoryError": ".errors",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = reexport(globals(), _LAZY)
