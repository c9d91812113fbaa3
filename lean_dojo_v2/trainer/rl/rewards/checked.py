"""What the Lean-checked scorers share: a group of completions checked over the context's
environment pool, each distinct check once, failures of the environment turned into error
rewards.

A subclass says how to turn a trajectory into a check (:meth:`LeanCheckedScorer.prepare`: a
cache key and the work, or a verdict given without Lean), how to run it in one environment
(:meth:`LeanCheckedScorer.check`) and what an outcome is worth (:meth:`LeanCheckedScorer.reward`).
Environment failures never propagate: a crash (:class:`EnvCrashedError`), a timeout, a state
that cannot be reached or any other :class:`InteractionError` is an outcome of its own, counted in
:meth:`RewardContext.stats`, and not cached (the next batch tries again).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ....errors import InteractionError
from ....interaction.base import ProofEnv
from ....interaction.types import EnvClosedError, EnvCrashedError, StaleStateError
from ...errors import RewardFunctionError
from .base import BaseRewardScorer, RewardContext, RewardInfo, Scored, StepRecord, Trajectory
from .env_pool import UnreachableStateError

logger = logging.getLogger("lean_dojo_v2.trainer.rl.rewards")

W = TypeVar("W")
"""What a scorer's check runs (its own frozen dataclass: the theorem, the tactics ...)."""


@dataclass(frozen=True)
class Outcome:
    """The result of one check: ``outcome`` (``proved``, ``progress``, ``no_progress``,
    ``error``, ``timeout``, ``crash``), the steps run, a message, the backend that ran it, and
    scorer-specific ``details``. ``cacheable``: false for environment failures."""

    outcome: str
    steps: tuple[StepRecord, ...] = ()
    message: str = ""
    backend: str = ""
    cacheable: bool = True
    details: RewardInfo = field(default_factory=dict)


@dataclass(frozen=True)
class Check(Generic[W]):
    """A check to run: its cache ``key`` and the ``work`` given to :meth:`check`."""

    key: Hashable
    work: W


class LeanCheckedScorer(BaseRewardScorer, Generic[W]):
    """Base of the scorers that run completions in a ``ProofEnv`` (see the module docstring)."""

    needs_context = True

    def __init__(self, context: RewardContext | None = None) -> None:
        self.context = context

    # ------------------------------------------------------------------------ the subclass
    @abstractmethod
    def prepare(self, trajectory: Trajectory) -> Check[W] | Outcome:
        """The check for ``trajectory``, or its outcome when no Lean is needed (refused)."""

    @abstractmethod
    def check(self, env: ProofEnv, work: W) -> Outcome:
        """Run one check in ``env`` (which this thread alone holds meanwhile)."""

    @abstractmethod
    def reward(self, outcome: Outcome) -> float:
        """What ``outcome`` is worth."""

    # ------------------------------------------------------------------------------ scoring
    def require_context(self) -> RewardContext:
        if self.context is None:
            raise RewardFunctionError(
                f"the {self.name!r} scorer checks completions in Lean and needs a RewardContext: "
                f"pass context=open_reward_context(theorems) or use reward_functions(scorers, "
                "context)"
            )
        return self.context

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        return self.score_batch([trajectory])[0]

    def score_batch(self, trajectories: list[Trajectory]) -> list[Scored]:
        context = self.require_context()
        prepared = [self.prepare(t) for t in trajectories]
        results: dict[Hashable, Outcome] = {}
        to_run: dict[Hashable, W] = {}
        for item in prepared:
            if not isinstance(item, Check):
                continue
            if item.key in results or item.key in to_run:
                context.count("cache_hits")  # the same check twice in this batch
                continue
            hit = context.cached(item.key)
            if isinstance(hit, Outcome):  # what score_batch stored under a check's key
                results[item.key] = hit
            else:
                to_run[item.key] = item.work
        if to_run:
            chunks = _chunks(to_run, len(context.pool))
            done = context.pool.map(
                lambda env, keys: [self._run(context, env, to_run[k]) for k in keys], chunks
            )
            for keys, outcomes in zip(chunks, done, strict=True):
                for key, outcome in zip(keys, outcomes, strict=True):
                    results[key] = outcome
                    if outcome.cacheable:
                        context.store(key, outcome)
            context.scored_by(done[-1][-1].backend or context.backend, self.name)
        scored = []
        for trajectory, item in zip(trajectories, prepared, strict=True):
            outcome = item if isinstance(item, Outcome) else results[item.key]
            trajectory.steps = list(outcome.steps)
            info: RewardInfo = {"outcome": outcome.outcome, "backend": outcome.backend}
            if outcome.message:
                info["message"] = outcome.message
            info.update(outcome.details)
            scored.append((self.reward(outcome), info))
        return scored

    def _run(self, context: RewardContext, env: ProofEnv, work: W) -> Outcome:
        """:meth:`check`, with every environment failure made an outcome (and counted)."""
        backend = getattr(env, "backend", context.backend)
        context.count("checks")
        for attempt in (0, 1):
            try:
                outcome = self.check(env, work)
            except StaleStateError as exc:
                # A state from before a restart: forget this env's states and try once more.
                context.pool.forget(env)
                if attempt == 0:
                    continue
                return self._failure(context, "error", f"stale state: {exc}", backend)
            except EnvCrashedError as exc:
                context.pool.forget(env)
                logger.warning("a %s environment crashed during a reward check: %s", backend, exc)
                return self._failure(context, "crash", f"environment crashed: {exc}", backend)
            except UnreachableStateError as exc:
                return self._failure(context, "error", str(exc), backend)
            except EnvClosedError as exc:
                logger.warning("a reward environment is closed: %s", exc)
                return self._failure(context, "crash", f"environment closed: {exc}", backend)
            except InteractionError as exc:
                return self._failure(context, "error", f"{type(exc).__name__}: {exc}", backend)
            if outcome.outcome == "timeout":
                context.count("timeouts")
            elif outcome.outcome == "error":
                context.count("rejected")
            return outcome
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _failure(context: RewardContext, kind: str, message: str, backend: str) -> Outcome:
        context.count("crashes" if kind == "crash" else "errors")
        return Outcome(kind, (), message, backend, cacheable=False, details={"env_failure": True})


def _chunks(work: Mapping[Hashable, object], num_envs: int) -> list[list[Hashable]]:
    """The checks as jobs, each run in one environment: the checks of one prompt stay together
    (an environment reaches a prompt's state once, not once per check), split only as far as
    needed to give every environment something to do."""
    groups: dict[Hashable, list[Hashable]] = {}
    for key, item in work.items():
        groups.setdefault(getattr(item, "prompt_key", key), []).append(key)
    jobs = list(groups.values())
    while len(jobs) < num_envs:
        biggest = max(range(len(jobs)), key=lambda i: len(jobs[i]))
        if len(jobs[biggest]) < 2:
            break
        half = len(jobs[biggest]) // 2
        jobs[biggest : biggest + 1] = [jobs[biggest][:half], jobs[biggest][half:]]
    return jobs


__all__ = ["Check", "LeanCheckedScorer", "Outcome"]
