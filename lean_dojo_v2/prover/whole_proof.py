"""Layer 3 (prover): whole-proof search — sample whole proofs, re-check each, keep the first.

:class:`WholeProofSearch` asks ``generator.generate_proofs([first state], num_samples)`` for whole
tactic proofs, re-checks each with ``env.verify`` (in the generator's order, across the
environments) and stops at the first accepted one. ``config.whole_proof_rounds`` requests at
most, each one expansion; a proof already checked is not checked again. The clock, counters,
generator call, re-check and result are the shared ones of :class:`~.search_run.SearchRun`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, split_tactics
from ..interaction.async_adapter import as_async_envs
from ..interaction.types import (
    EnvClosedError,
    InteractionError,
    ProofState,
    UnknownTheoremError,
    Verdict,
)
from .result import SearchResult, proof_text
from .search_config import SearchConfig
from .search_run import BlockingSearch, SearchRun, SearchStop, check_theorem, own_config

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from .search_types import ProgressPredictor


class WholeProofSearch(BlockingSearch):
    """Whole-proof mode: ask ``generator.generate_proofs([first state], num_samples)`` for
    whole tactic proofs, re-check each with ``env.verify`` (in the generator's order, across the
    environments), and stop at the first accepted one. ``config.whole_proof_rounds`` requests at
    most (each counts as one expansion); proofs already checked are not checked again."""

    def __init__(
        self,
        generator: TacticGenerator,
        config: SearchConfig | None = None,
        progress_model: ProgressPredictor | None = None,
    ) -> None:
        self.generator = generator
        self.config = own_config(config, whole_proof=True)
        if not callable(getattr(generator, "generate_proofs", None)):
            raise ConfigError(
                f"{type(generator).__name__} cannot propose whole proofs: whole-proof search "
                "needs a generator with generate_proofs(states, num_samples)"
            )
        self.progress_model = progress_model  # unused: every proof is checked in model order

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        run = _WholeProofRun(self, as_async_envs(envs), check_theorem(theorem))
        return await run.execute()


class _WholeProofRun(SearchRun):
    """The state of one whole-proof search of one theorem."""

    label = "whole-proof search"

    def __init__(
        self, owner: WholeProofSearch, envs: list[AsyncProofEnv], theorem: Theorem
    ) -> None:
        super().__init__(owner.config, envs, theorem)
        self.owner = owner
        self.checked = 0  # proofs whose re-check was started

    async def _search(self) -> None:
        cfg = self.cfg
        generator = self.owner.generator.for_theorem(self.theorem)
        generate_proofs = getattr(generator, "generate_proofs", None)
        if not callable(generate_proofs):
            raise SearchStop(
                "error",
                "generator_error",
                f"{type(generator).__name__} has no generate_proofs()",
            )
        root = await self._start()
        tried: set[str] = set()
        rounds = min(cfg.whole_proof_rounds, cfg.max_expansions)
        for _ in range(rounds):
            if self.clock.remaining() <= 0:
                raise SearchStop("timeout", "timeout")
            raw = await self._call_generator(generate_proofs, [root.text], "proof generator")
            # counted before the answer is checked: a malformed answer still used a request
            self.expansions += 1
            cands = self._candidates(raw, 1, "generate_proofs()")[0]
            fresh = []
            for cand in cands:
                tactics = split_tactics(cand.tactic)
                text = proof_text(tactics)
                if text and text not in tried:
                    tried.add(text)
                    fresh.append((tactics, text))
            self.c.candidates += len(fresh)
            if await self._check_all(fresh):
                raise SearchStop("proved", "proved")
        raise SearchStop(
            "failed",
            "max_expansions"
            if rounds == cfg.max_expansions and rounds < cfg.whole_proof_rounds
            else "rounds",
        )

    async def _start(self) -> ProofState:
        """The theorem's first state, on the first environment."""
        t = time.perf_counter()
        try:
            root = await self.envs[0].start(self.theorem)
        except UnknownTheoremError as exc:
            raise SearchStop("error", "unknown_theorem", str(exc)) from None
        except EnvClosedError:
            raise
        except InteractionError as exc:
            raise SearchStop(
                "error",
                "start_failed",
                f"starting {self.theorem.full_name} failed: {type(exc).__name__}: {exc}",
            ) from None
        finally:
            self.c.env_wall_seconds += time.perf_counter() - t
        if not isinstance(root, ProofState):
            raise SearchStop("error", "no_goals", "the environment says the theorem has no goals")
        return root

    async def _check_all(self, proofs: list[tuple[list[str], str]]) -> bool:
        """Verify ``proofs`` in order, one at a time per environment, the environments in
        parallel; stop starting new checks once one is accepted (the earliest in the
        generator's order among those accepted is kept)."""
        queue = list(enumerate(proofs))
        accepted: list[tuple[int, list[str], Verdict]] = []
        t = time.perf_counter()

        async def worker(i: int) -> None:
            while queue and not accepted:
                k, (tactics, text) = queue.pop(0)
                self.checked += 1
                verdict = await self._check(text, i)
                if verdict is not None and verdict.ok:
                    accepted.append((k, tactics, verdict))

        try:
            await asyncio.gather(*(worker(i) for i in range(len(self.envs))))
        finally:
            self.c.env_wall_seconds += time.perf_counter() - t
        if accepted:
            _, self.proof, self.verdict = min(accepted, key=lambda a: a[0])
            return True
        return False

    def _stats(self, reason: str, seconds: float) -> dict[str, Any]:
        stats: dict[str, Any] = {"stop_reason": reason, "mode": "whole_proof"}
        stats.update(self.c.as_dict())
        stats["proofs_checked"] = self.checked
        stats["envs"] = len(self.envs)
        stats["env_restarts"] = self._env_restarts()
        return stats


__all__ = ["WholeProofSearch"]
