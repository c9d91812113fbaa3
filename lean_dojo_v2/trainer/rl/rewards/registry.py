"""The reward registry (names → scorer classes) and the weighted composite.

Built-in names (each module's docstring documents its reward): ``lean_tactic``, ``lean_proof``,
``format``, ``efficiency``, ``difficulty``, ``overlong``, ``algebra``, ``number_theory``,
``analysis``, ``combinatorics``, ``geometry``. Their modules are imported on first use.

    get_scorer("algebra")
    create_composite_scorer("algebra", "efficiency", weights={"algebra": 0.6, "efficiency": 0.4})
    register_scorer("mine", MyScorer)      # or @register_scorer("mine") on the class

An unknown name raises :class:`~lean_dojo_v2.trainer.errors.UnknownRewardError`, which lists the
valid names.
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar, overload

from ...errors import RewardFunctionError, UnknownRewardError
from .base import BaseRewardScorer, RewardContext, RewardInfo, Scored, Trajectory

_BUILTINS: dict[str, str] = {
    "lean_tactic": ".lean_tactic:LeanTacticScorer",
    "lean_proof": ".lean_proof:LeanProofScorer",
    "format": ".format:FormatScorer",
    "efficiency": ".efficiency:EfficiencyScorer",
    "difficulty": ".difficulty:DifficultyScorer",
    "overlong": ".overlong:OverlongScorer",
    "algebra": ".domain:AlgebraScorer",
    "number_theory": ".domain:NumberTheoryScorer",
    "analysis": ".domain:AnalysisScorer",
    "combinatorics": ".domain:CombinatoricsScorer",
    "geometry": ".domain:GeometryScorer",
}
# The contract's defaults: the Lean-checked reward of the mode, and a little format reward.
DEFAULT_WEIGHTS: dict[str, dict[str, float]] = {
    "tactic": {"lean_tactic": 1.0, "format": 0.1},
    "proof": {"lean_proof": 1.0, "format": 0.1},
}

Factory = Callable[..., BaseRewardScorer]
F = TypeVar("F", bound=Factory)

_registry: dict[str, Factory] = {}
_lock = threading.Lock()


@overload
def register_scorer(
    name: str, factory: None = None, *, replace: bool = False
) -> Callable[[F], F]: ...
@overload
def register_scorer(name: str, factory: F, *, replace: bool = False) -> F: ...
def register_scorer(
    name: str, factory: Factory | None = None, *, replace: bool = False
) -> Factory | Callable[[F], F]:
    """Register ``factory`` (a scorer class, or any callable returning a scorer) as ``name``;
    without ``factory``, a class decorator. A taken name needs ``replace=True``."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a reward name must be a non-empty str, got {name!r}")

    def add(f: F) -> F:
        with _lock:
            if not replace and (name in _registry or name in _BUILTINS):
                raise ValueError(
                    f"a reward named {name!r} is already registered; pass replace=True to "
                    "replace it"
                )
            _registry[name] = f
        return f

    return add if factory is None else add(factory)


def available_scorers() -> list[str]:
    """Every registered reward name, sorted."""
    with _lock:
        return sorted({*_BUILTINS, *_registry})


def _factory(name: str) -> Factory:
    with _lock:
        found = _registry.get(name)
    if found is not None:
        return found
    target = _BUILTINS.get(name)
    if target is None:
        raise UnknownRewardError(name, available_scorers())
    module, _, attribute = target.partition(":")
    factory: Factory = getattr(importlib.import_module(module, __package__), attribute)
    return factory


def get_scorer(
    name: str, *, context: RewardContext | None = None, **kwargs: object
) -> BaseRewardScorer:
    """A new scorer registered as ``name``, built with ``kwargs`` and bound to ``context`` (what
    a Lean-checked one checks in)."""
    if not isinstance(name, str):
        raise UnknownRewardError(repr(name), available_scorers())
    # Every scorer can be bound to a context, whether or not its constructor takes one.
    scorer = _factory(name)(**kwargs)
    if not isinstance(scorer, BaseRewardScorer):
        raise RewardFunctionError(
            f"the factory registered as {name!r} returned {type(scorer).__name__}, not a "
            "BaseRewardScorer"
        )
    if context is not None:
        scorer.bind(context)
    return scorer


class CompositeScorer(BaseRewardScorer):
    """A weighted sum of scorers: ``sum(w_i * r_i)``; ``info`` holds each part's reward (by
    name) and its info (under ``"<name>_info"``). Parts without a weight weigh 1.0."""

    name = "composite"

    def __init__(
        self,
        scorers: list[BaseRewardScorer],
        weights: Mapping[str, float] | None = None,
        *,
        name: str = "composite",
    ) -> None:
        if not scorers:
            raise ValueError("a composite needs at least one scorer")
        names = [s.name for s in scorers]
        if len(set(names)) != len(names):
            raise ValueError(f"a composite's parts need distinct names, got {names}")
        weights = dict(weights or {})
        for key, value in weights.items():
            if key not in names:
                raise UnknownRewardError(key, names, what="reward in the weights (not a part)")
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"the weight of {key!r} must be a finite number, got {value!r}")
        self.scorers = list(scorers)
        self.weights = {n: float(weights.get(n, 1.0)) for n in names}
        self.name = name
        self.context = None

    @property
    def needs_context(self) -> bool:  # type: ignore[override]
        return any(s.needs_context for s in self.scorers)

    def bind(self, context: RewardContext | None) -> None:
        super().bind(context)
        for scorer in self.scorers:
            scorer.bind(self.context)

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        return self.score_batch([trajectory])[0]

    def score_batch(self, trajectories: list[Trajectory]) -> list[Scored]:
        totals = [0.0] * len(trajectories)
        infos: list[RewardInfo] = [{} for _ in trajectories]
        for scorer in self.scorers:
            weight = self.weights[scorer.name]
            for i, (reward, info) in enumerate(scorer.score_batch(trajectories)):
                totals[i] += weight * float(reward)
                infos[i][scorer.name] = float(reward)
                infos[i][f"{scorer.name}_info"] = info
        return list(zip(totals, infos, strict=True))


def create_composite_scorer(
    *scorers: str | BaseRewardScorer,
    weights: Mapping[str, float] | None = None,
    name: str = "composite",
    context: RewardContext | None = None,
    **kwargs: object,
) -> CompositeScorer:
    """A :class:`CompositeScorer` of ``scorers`` (registered names or scorer objects);
    ``weights`` by part name (a name that is not a part raises :class:`UnknownRewardError`);
    every part built here by name is bound to ``context`` and gets those of ``kwargs`` it
    takes."""
    parts = [s if isinstance(s, BaseRewardScorer) else _build(s, kwargs, context) for s in scorers]
    return CompositeScorer(parts, weights, name=name)


def _build(
    name: str, kwargs: Mapping[str, object], context: RewardContext | None
) -> BaseRewardScorer:
    import inspect

    factory = _factory(name)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return get_scorer(name, context=context, **kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return get_scorer(name, context=context, **kwargs)
    taken = {k: v for k, v in kwargs.items() if k in params}
    return get_scorer(name, context=context, **taken)


def default_scorer(mode: str = "tactic", context: RewardContext | None = None) -> CompositeScorer:
    """The default reward of ``mode``: ``lean_tactic`` (or ``lean_proof``) 1.0 + ``format`` 0.1."""
    weights = DEFAULT_WEIGHTS.get(mode)
    if weights is None:
        raise ValueError(f"unknown mode {mode!r}; valid modes: {', '.join(DEFAULT_WEIGHTS)}")
    composite = create_composite_scorer(*weights, weights=weights, name=f"default_{mode}")
    composite.bind(context)
    return composite


__all__ = [
    "DEFAULT_WEIGHTS",
    "CompositeScorer",
    "available_scorers",
    "create_composite_scorer",
    "default_scorer",
    "get_scorer",
    "register_scorer",
]
