"""``efficiency``: shorter proofs, fewer steps.

The number of steps ``n`` is the tactics a Lean-checked scorer ran for this trajectory
(``trajectory.steps``) when there are any, else the completion's top-level tactics. The
reference ``r`` is the recorded proof's length (proof mode: the tactics of ``recorded_tactic``;
tactic mode: 1). Reward: ``min(1, r / n)`` — 1.0 at or below the recorded length, ``r/n``
beyond it — and 0 for an empty completion. It says nothing about correctness: combine it with a
Lean-checked reward (``create_composite_scorer("lean_proof", "efficiency", ...)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import BaseRewardScorer, Scored, Trajectory
from .text import END_MARKERS, clean_completion, completion_tactics


class EfficiencyScorer(BaseRewardScorer):
    """See the module docstring."""

    name = "efficiency"

    def __init__(self, *, end_markers: Sequence[str] = END_MARKERS) -> None:
        self.end_markers = tuple(end_markers)

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        text = clean_completion(trajectory.completion, self.end_markers)
        n = len(trajectory.steps) or len(completion_tactics(text))
        if n == 0:
            return 0.0, {"steps": 0}
        reference = 1
        if trajectory.mode == "proof" and trajectory.recorded_tactic.strip():
            reference = max(1, len(completion_tactics(trajectory.recorded_tactic)))
        return min(1.0, reference / n), {"steps": n, "reference_steps": reference}


__all__ = ["EfficiencyScorer"]
