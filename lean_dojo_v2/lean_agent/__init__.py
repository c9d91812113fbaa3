"""LeanAgent (layer 4). For now: the upstream import path of its database.

``from lean_dojo_v2.lean_agent import DynamicDatabase`` and ``from
lean_dojo_v2.lean_agent.database import DynamicDatabase`` give
:class:`lean_dojo_v2.database.DynamicDatabase` itself (imported on first use).
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {"DynamicDatabase": "lean_dojo_v2.database"}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    submodules=["database"],
    not_provided={
        "TrainingConfig": "LeanAgent's configs are not part of lean-dojo-v2 yet",
        "ProverConfig": "LeanAgent's configs are not part of lean-dojo-v2 yet",
    },
)
