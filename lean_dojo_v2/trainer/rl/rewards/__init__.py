"""Layer 3 (trainer): GRPO rewards — scorers, their registry, and the TRL adapter.

    from lean_dojo_v2.trainer.rl.rewards import get_scorer, create_composite_scorer
    scorer = create_composite_scorer("algebra", "efficiency",
                                     weights={"algebra": 0.6, "efficiency": 0.4})

Lean-checked scorers (``lean_tactic``, ``lean_proof``) run completions in ``ProofEnv``s held by
a :class:`RewardContext` (:func:`open_reward_context`); :func:`reward_functions` turns scorers into
TRL reward functions and :func:`wrap_user_reward` a user's ``reward_func(completions, **kwargs)``.
``docs/rewards.md`` documents every reward. Importing this package loads none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...._lazy import reexport

if TYPE_CHECKING:
    from .base import (
        BaseRewardScorer,
        RewardContext,
        RewardInfo,
        Scored,
        StepRecord,
        Trajectory,
        open_reward_context,
    )
    from .difficulty import DifficultyScorer
    from .domain import (
        AlgebraScorer,
        AnalysisScorer,
        CombinatoricsScorer,
        DomainScorer,
        GeometryScorer,
        NumberTheoryScorer,
    )
    from .efficiency import EfficiencyScorer
    from .format import FormatScorer
    from .lean_proof import LeanProofScorer
    from .lean_tactic import LeanTacticScorer
    from .overlong import OverlongScorer
    from .registry import (
        DEFAULT_WEIGHTS,
        CompositeScorer,
        available_scorers,
        create_composite_scorer,
        default_scorer,
        get_scorer,
        register_scorer,
    )
    from .trl_adapter import reward_functions, wrap_user_reward

_LAZY = {
    "BaseRewardScorer": ".base",
    "RewardContext": ".base",
    "RewardInfo": ".base",
    "Scored": ".base",
    "StepRecord": ".base",
    "Trajectory": ".base",
    "open_reward_context": ".base",
    "DEFAULT_WEIGHTS": ".registry",
    "CompositeScorer": ".registry",
    "available_scorers": ".registry",
    "create_composite_scorer": ".registry",
    "default_scorer": ".registry",
    "get_scorer": ".registry",
    "register_scorer": ".registry",
    "reward_functions": ".trl_adapter",
    "wrap_user_reward": ".trl_adapter",
    "LeanTacticScorer": ".lean_tactic",
    "LeanProofScorer": ".lean_proof",
    "FormatScorer": ".format",
    "EfficiencyScorer": ".efficiency",
    "DifficultyScorer": ".difficulty",
    "OverlongScorer": ".overlong",
    "DomainScorer": ".domain",
    "AlgebraScorer": ".domain",
    "NumberTheoryScorer": ".domain",
    "AnalysisScorer": ".domain",
    "CombinatoricsScorer": ".domain",
    "GeometryScorer": ".domain",
}

__all__ = [
    "AlgebraScorer",
    "AnalysisScorer",
    "BaseRewardScorer",
    "CombinatoricsScorer",
    "CompositeScorer",
    "DEFAULT_WEIGHTS",
    "DifficultyScorer",
    "DomainScorer",
    "EfficiencyScorer",
    "FormatScorer",
    "GeometryScorer",
    "LeanProofScorer",
    "LeanTacticScorer",
    "NumberTheoryScorer",
    "OverlongScorer",
    "RewardContext",
    "RewardInfo",
    "Scored",
    "StepRecord",
    "Trajectory",
    "available_scorers",
    "create_composite_scorer",
    "default_scorer",
    "get_scorer",
    "open_reward_context",
    "register_scorer",
    "reward_functions",
    "wrap_user_reward",
]

__getattr__, __dir__ = reexport(globals(), _LAZY)
