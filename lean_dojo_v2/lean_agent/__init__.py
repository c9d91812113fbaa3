"""LeanAgent (layer 4): the lifelong retrieval loop and the upstream import paths.

``from lean_dojo_v2.lean_agent import DynamicDatabase`` (and ``lean_agent.database``) give
:class:`lean_dojo_v2.database.DynamicDatabase` itself; ``TrainingConfig`` / ``ProverConfig`` (also
from ``lean_agent.config``) are the retriever's config and the seed's prover settings; ``python -m
lean_dojo_v2.lean_agent`` runs the retrieval loop (curriculum training with EWC, evaluation). All
are imported on first use.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {"DynamicDatabase": "lean_dojo_v2.database"}
# The seed's config names (lazy, like the rest); not in __all__, which lists the seed's
# original exports of this package.
_CONFIGS = {
    "TrainingConfig": "lean_dojo_v2.lean_agent.config",
    "ProverConfig": "lean_dojo_v2.lean_agent.config",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(), {**_EXPORTS, **_CONFIGS}, submodules=["database", "config"]
)
