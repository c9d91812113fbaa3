"""``difficulty``: a base reward scaled up on hard problems.

``reward = base * (1 + bonus * d) / (1 + bonus)`` with ``d`` the row's ``difficulty`` in [0, 1]
(the database's Easy/Medium/Hard as 0/0.5/1, else from the recorded proof's length) clipped to
[0, 1]. With the default ``bonus=1`` a hard problem keeps the whole base reward and an easy one
half of it, so rewards stay in the base's range and solving a hard problem is worth up to
``1 + bonus`` times an easy one. The base is a scorer or a registered name; None (default)
takes the Lean-checked reward of the row's mode (``lean_tactic`` or ``lean_proof``).
"""

from __future__ import annotations

from ....errors import ConfigValueError
from .base import BaseRewardScorer, RewardContext, Scored, Trajectory


class DifficultyScorer(BaseRewardScorer):
    """See the module docstring."""

    name = "difficulty"

    def __init__(
        self,
        base: str | BaseRewardScorer | None = None,
        *,
        bonus: float = 1.0,
        context: RewardContext | None = None,
    ) -> None:
        if not bonus >= 0:
            raise ConfigValueError(f"difficulty bonus must be >= 0, got {bonus!r}")
        self.bonus = float(bonus)
        self.context = context
        self._bases: dict[str, BaseRewardScorer] = {}
        self._fixed = self._resolve(base) if base is not None else None

    @property
    def needs_context(self) -> bool:  # type: ignore[override]
        return self._fixed.needs_context if self._fixed is not None else True

    def _resolve(self, base: str | BaseRewardScorer) -> BaseRewardScorer:
        from .registry import get_scorer

        scorer = get_scorer(base) if isinstance(base, str) else base
        scorer.bind(self.context)
        return scorer

    def _base_for(self, mode: str) -> BaseRewardScorer:
        if self._fixed is not None:
            return self._fixed
        name = "lean_proof" if mode == "proof" else "lean_tactic"
        if name not in self._bases:
            self._bases[name] = self._resolve(name)
        return self._bases[name]

    def bind(self, context: RewardContext | None) -> None:
        super().bind(context)
        for scorer in [self._fixed, *self._bases.values()]:
            if scorer is not None:
                scorer.bind(self.context)

    def scale(self, difficulty: float) -> float:
        d = min(1.0, max(0.0, float(difficulty)))
        return (1.0 + self.bonus * d) / (1.0 + self.bonus)

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        return self.score_batch([trajectory])[0]

    def score_batch(self, trajectories: list[Trajectory]) -> list[Scored]:
        results: list[Scored | None] = [None] * len(trajectories)
        by_base: dict[int, tuple[BaseRewardScorer, list[int]]] = {}
        for i, t in enumerate(trajectories):
            base = self._base_for(t.mode)
            by_base.setdefault(id(base), (base, []))[1].append(i)
        for base, indices in by_base.values():
            scored = base.score_batch([trajectories[i] for i in indices])
            for i, (reward, info) in zip(indices, scored, strict=True):
                factor = self.scale(trajectories[i].difficulty)
                results[i] = (reward * factor, {"base": base.name, "base_reward": reward,
                                                "scale": factor, **info})  # fmt: skip
        return [r for r in results if r is not None]


__all__ = ["DifficultyScorer"]
