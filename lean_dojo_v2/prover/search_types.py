"""Layer 3 (prover): the types of what proving is given, named once for every signature.

- :data:`Envs`: one environment or several, blocking (``ProofEnv``) or async (``AsyncProofEnv``),
  as search takes them;
- :class:`ProgressPredictor`: what search asks of a progress model
  (:class:`~lean_dojo_v2.models.progress.ProgressModel`, or any object with its ``predict``);
- :data:`EnvFactory` / :data:`GeneratorFactory`: callables without arguments that a worker calls
  once to build its environment(s) and its tactic generator (picklable for worker processes and
  Ray actors);
- :data:`ResultObserver`: called with each search result in the process that started the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias

from ..interaction.base import AsyncProofEnv, ProofEnv
from ..models.generator import TacticGenerator
from .result import SearchResult

AnyEnv: TypeAlias = ProofEnv | AsyncProofEnv
Envs: TypeAlias = AnyEnv | Sequence[AnyEnv]
EnvFactory: TypeAlias = Callable[[], Envs]
GeneratorFactory: TypeAlias = Callable[[], TacticGenerator]
ResultObserver: TypeAlias = Callable[[SearchResult], object]


class ProgressPredictor(Protocol):
    """A steps-remaining model as search uses it: one prediction (>= 0) per goal state, given the
    tactics that led there (``prefixes``, one text per goal)."""

    def predict(
        self, goals: Sequence[str], *, prefixes: Sequence[str | None] | None = None
    ) -> float | list[float]: ...


__all__ = [
    "AnyEnv",
    "EnvFactory",
    "Envs",
    "GeneratorFactory",
    "ProgressPredictor",
    "ResultObserver",
]
