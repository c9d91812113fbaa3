"""LeanAgent's upstream import paths (layer 4); the LeanAgent loop is
:class:`lean_dojo_v2.agent.LeanAgent`.

``from lean_dojo_v2.lean_agent import DynamicDatabase`` (and ``lean_agent.database``) give
:class:`lean_dojo_v2.database.DynamicDatabase` itself; ``TrainingConfig`` / ``ProverConfig`` (also
from ``lean_agent.config``) are the retriever's config and upstream LeanAgent's prover settings;
``python -m lean_dojo_v2.lean_agent`` runs the loop from the command line. All are imported on
first use.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {"DynamicDatabase": "lean_dojo_v2.database"}
# The config names (lazy, like the rest); not in __all__, which lists upstream's original
# exports of this package.
_CONFIGS = {
    "TrainingConfig": "lean_dojo_v2.lean_agent.config",
    "ProverConfig": "lean_dojo_v2.lean_agent.config",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(), {**_EXPORTS, **_CONFIGS}, submodules=["database", "config"]
)
