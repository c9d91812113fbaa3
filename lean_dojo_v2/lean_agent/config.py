"""LeanAgent's configs at their upstream path ``lean_dojo_v2.lean_agent.config``.

:class:`TrainingConfig` *is* :class:`lean_dojo_v2.trainer.retrieval_config.TrainingConfig` (the
retriever's config, with upstream LeanAgent's field names); :class:`ProverConfig` *is*
:class:`lean_dojo_v2.agent.prover_config.ProverConfig` (upstream LeanAgent's prover settings,
which the agents map onto the search's ``SearchConfig``). New code imports them from there.
"""

from __future__ import annotations

from ..agent.prover_config import ProverConfig
from ..trainer.retrieval_config import TrainingConfig

__all__ = ["ProverConfig", "TrainingConfig"]
