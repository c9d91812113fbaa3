"""Upstream's search, for comparison: a random-choice depth-first loop without scores.

:class:`RandomDFS` follows upstream v2's ``BaseProver.search`` (a copy of PyPantograph's
``Agent.search``, ``shared/docs/upstream_notes.md`` §6.1): a stack of states; each step asks the
generator for tactics for the state on top, picks **one uniformly at random** (log-probs are
ignored), and runs it; success pushes the new state, a failure counts a trial of that state,
and a state that used ``max_trials_per_goal`` trials (or has no untried tactic left) is popped
(backtracking). No dedup, no priorities. Each step is one generator request, which is what
``SearchResult.expansions`` counts here, as for :class:`~.search.BestFirstSearch` (where one
expansion is one state's generator request and all its tactics).

Two things differ from upstream, both in the baseline's favour: it never picks the same tactic
twice for one stack entry (``avoid_repeats``), and a proof still has to pass ``verify`` (upstream
only printed it).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from ..interaction import AsyncProofEnv, ProofEnv
from ..interaction.async_adapter import as_async_envs
from ..interaction.types import (
    EnvCrashedError,
    InteractionError,
    ProofFinished,
    ProofState,
    StaleStateError,
    UnknownTheoremError,
)
from .result import SearchResult, proof_text
from .search_run import check_theorem, checked_candidates
from .threads import run_sync

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator


@dataclass
class _Entry:
    state: ProofState
    tactics: list[str]
    trials: int = 0
    tried: set[str] = field(default_factory=set)


class RandomDFS:
    """Upstream-style random-choice depth-first search (see the module docstring).

    ``max_steps`` is upstream's hard-coded 100 by default; ``max_trials_per_goal`` its 5."""

    def __init__(
        self,
        generator: TacticGenerator,
        *,
        max_steps: int = 100,
        max_trials_per_goal: int = 5,
        num_samples: int = 8,
        tactic_timeout: float = 30.0,
        seed: int = 0,
        avoid_repeats: bool = True,
    ) -> None:
        self.generator = generator
        self.max_steps = max_steps
        self.max_trials_per_goal = max_trials_per_goal
        self.num_samples = num_samples
        self.tactic_timeout = tactic_timeout
        self.seed = seed
        self.avoid_repeats = avoid_repeats

    def search(
        self, env: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        envs = as_async_envs(env)
        return run_sync(self.search_async(envs[0], check_theorem(theorem)))

    async def search_async(self, env: AsyncProofEnv, theorem: Theorem) -> SearchResult:
        env = as_async_envs(env)[0]
        rng = random.Random(f"{self.seed}:{theorem.full_name}")
        t0 = time.perf_counter()
        steps = tactic_calls = 0
        stats: dict[str, Any] = {"mode": "random_dfs", "backtracks": 0, "verify_rejected": 0}

        def result(
            status: str,
            proof: list[str] | None = None,
            checked_by: str | None = None,
            error: str | None = None,
        ) -> SearchResult:
            stats["tactic_calls"] = tactic_calls
            return SearchResult(
                theorem.full_name,
                theorem.file_path,
                status,
                proof,
                steps,
                time.perf_counter() - t0,
                env.backend,
                checked_by,
                error,
                stats,
            )

        generator = self.generator.for_theorem(theorem)
        try:
            root = await env.start(theorem)
        except (UnknownTheoremError, InteractionError) as exc:
            return result("error", error=f"{type(exc).__name__}: {exc}")
        stack = [_Entry(root, [])]
        while stack and steps < self.max_steps:
            top = stack[-1]
            if top.trials >= self.max_trials_per_goal:
                stack.pop()
                stats["backtracks"] += 1
                continue
            try:
                raw = generator.generate([top.state.text], self.num_samples)
                cands = checked_candidates(raw, 1, self.num_samples, "generate()")[0]
            except Exception as exc:  # noqa: BLE001
                return result("error", error=f"{type(exc).__name__}: {exc}")
            steps += 1
            pool = [c for c in cands if not (self.avoid_repeats and c.tactic in top.tried)]
            if not pool:
                stack.pop()
                stats["backtracks"] += 1
                continue
            tactic = rng.choice(pool).tactic
            top.trials += 1
            top.tried.add(tactic)
            tactic_calls += 1
            try:
                out = await env.run_tactic(top.state, tactic, self.tactic_timeout)
            except (EnvCrashedError, StaleStateError):
                continue
            if isinstance(out, ProofFinished):
                tactics = [*top.tactics, tactic]
                verdict = await env.verify(theorem, proof_text(tactics))
                if verdict.ok:
                    return result("proved", tactics, verdict.checked_by)
                stats["verify_rejected"] += 1
            elif isinstance(out, ProofState):
                stack.append(_Entry(out, [*top.tactics, tactic]))
        stats["stop_reason"] = "max_steps" if stack else "exhausted"
        return result("failed")
