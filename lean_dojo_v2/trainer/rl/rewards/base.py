"""The reward-scorer contract: a :class:`Trajectory` in, ``(reward, info)`` out.

A custom scorer (upstream LeanDojo-v2's API) is a subclass with one method::

    class MyScorer(BaseRewardScorer):
        name = "my_scorer"            # optional; defaults to the class name in snake_case
        def score(self, trajectory, **kwargs):
            return reward, info       # a float, and a dict of whatever explains it

:meth:`BaseRewardScorer.score_batch` scores a group at once (the Lean-checked scorers override it
to check in parallel over the context's environment pool, with a cache). Scorers that need Lean
declare ``needs_context`` and get a :class:`RewardContext` (:func:`open_reward_context`) at
construction or through :meth:`BaseRewardScorer.bind`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ....data.model import Theorem
from .context import RewardContext, open_reward_context

OUTCOMES: tuple[str, ...] = ("proved", "progress", "no_progress", "error", "timeout", "crash")

RewardInfo = dict[str, object]
"""What explains a reward: JSON-like values by name (an outcome, counts, a part's own info)."""
Scored = tuple[float, RewardInfo]
"""A scorer's answer for one trajectory: the reward and what explains it."""


@dataclass
class StepRecord:
    """One tactic a Lean-checked scorer ran: ``outcome`` is one of :data:`OUTCOMES`;
    ``goals_before`` / ``goals_after`` count open goals (None where unknown); ``message`` is
    Lean's (or the environment's) message for an error."""

    tactic: str
    outcome: str
    goals_before: int | None = None
    goals_after: int | None = None
    message: str = ""


@dataclass
class Trajectory:
    """A completion and what it answers: the dataset row's columns (``prompt``, ``state``,
    ``step``, ``recorded_tactic``, ``difficulty``, ``mode``), the theorem (None where unknown),
    the Lean steps a scorer ran (``steps``) and anything else (``extra``; the TRL adapter puts
    ``theorem_key`` and ``completion_length``, in tokens, there)."""

    prompt: str = ""
    completion: str = ""
    state: str = ""
    theorem: Theorem | None = None
    step: int = 0
    recorded_tactic: str = ""
    difficulty: float = 0.0
    mode: str = "tactic"
    steps: list[StepRecord] = field(default_factory=list)
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def theorem_key(self) -> str:
        """``"file_path::full_name"`` of the theorem, else ``extra["theorem_key"]``, else ``""``."""
        if self.theorem is not None:
            return f"{self.theorem.file_path}::{self.theorem.full_name}"
        return str(self.extra.get("theorem_key", ""))


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class BaseRewardScorer(ABC):
    """Scores trajectories. ``name`` is what TRL logs (``rewards/<name>/mean``)."""

    name: str = ""
    # Whether scoring needs a RewardContext (Lean environments, theorems).
    needs_context: bool = False
    context: RewardContext | None = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "name", ""):
            cls.name = _snake(cls.__name__)

    @abstractmethod
    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        """The reward of one trajectory and a dict explaining it."""

    def score_batch(self, trajectories: list[Trajectory]) -> list[Scored]:
        """:meth:`score` of each, in order (override to share work across a group)."""
        return [self.score(t) for t in trajectories]

    def bind(self, context: RewardContext | None) -> None:
        """Use ``context`` from now on, unless this scorer was given its own."""
        if self.context is None:
            self.context = context

    def __call__(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        return self.score(trajectory, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


__all__ = [
    "OUTCOMES",
    "BaseRewardScorer",
    "RewardContext",
    "RewardInfo",
    "Scored",
    "StepRecord",
    "Trajectory",
    "open_reward_context",
]
