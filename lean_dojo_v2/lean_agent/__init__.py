"""LeanAgent's upstream import paths (layer 4); the LeanAgent loop is
:class:`lean_dojo_v2.agent.LeanAgent`.

``from lean_dojo_v2.lean_agent import DynamicDatabase`` (and ``lean_agent.database``) give
:class:`lean_dojo_v2.database.DynamicDatabase` itself; ``TrainingConfig`` / ``ProverConfig`` (also
from ``lean_agent.config``) are the retriever's config and upstream LeanAgent's prover settings;
``python -m lean_dojo_v2.lean_agent`` runs the loop from the command line. All are imported on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..agent.prover_config import ProverConfig as ProverConfig
    from ..database.dynamic_database import DynamicDatabase
    from ..trainer.retrieval_config import TrainingConfig as TrainingConfig

_EXPORTS = {
    "ProverConfig": "..agent.prover_config",
    "DynamicDatabase": "..database.dynamic_database",
    "TrainingConfig": "..trainer.retrieval_config",
}
# Upstream LeanAgent's config names are offered too (hence the explicit `as` above); __all__ keeps
# to DynamicDatabase, the name the upstream README imports from here.
__all__ = ["DynamicDatabase"]

__getattr__, __dir__ = reexport(globals(), _EXPORTS, submodules=("config", "database"))
