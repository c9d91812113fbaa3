"""Layer 3 (prover): proof search, the entry point — :func:`search_theorem` and the names around it.

Search is split by job; this module picks a mode and re-exports the public names, so every import
from ``lean_dojo_v2.prover.search`` keeps working:

============================  =====================================================================
module                        job
============================  =====================================================================
:mod:`.search_config`         :class:`SearchConfig`, the settings of one search
:mod:`.search_run`            what both modes share: clock, counters, crash log, generator call,
                              check of its answer, re-check, result, catch-all (``SearchRun``)
:mod:`.best_first`            :class:`BestFirstSearch`: best-first search over proof states
:mod:`.whole_proof`           :class:`WholeProofSearch`: sample whole proofs, re-check each
:mod:`.search_tree`           the tree best-first search builds (nodes, edges, frontier, stats)
:mod:`.verify`                :func:`verify_proof`: the whole-proof re-check with retries
:mod:`.threads`               :func:`run_sync` and the daemon threads of blocking model calls
============================  =====================================================================

How each mode works, its budgets and what it does when an environment fails: ``docs/search.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..data.model import Theorem
from ..interaction import AsyncProofEnv
from .best_first import BestFirstSearch
from .result import SearchResult, proof_text
from .search_config import SearchConfig
from .threads import run_sync
from .whole_proof import WholeProofSearch

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from .search_types import Envs, ProgressPredictor


def search_theorem(
    generator: TacticGenerator,
    env: Envs,
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: ProgressPredictor | None = None,
) -> SearchResult:
    """Search for a proof of ``theorem``: :class:`WholeProofSearch` when ``config.whole_proof``,
    else :class:`BestFirstSearch`. Blocking; see :func:`search_theorem_async` in a loop."""
    cfg = config if config is not None else SearchConfig()
    cls = WholeProofSearch if cfg.whole_proof else BestFirstSearch
    return cls(generator, cfg, progress_model).search(env, theorem)


async def search_theorem_async(
    generator: TacticGenerator,
    envs: AsyncProofEnv | Sequence[AsyncProofEnv],
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: ProgressPredictor | None = None,
) -> SearchResult:
    """The coroutine flavour of :func:`search_theorem`."""
    cfg = config if config is not None else SearchConfig()
    cls = WholeProofSearch if cfg.whole_proof else BestFirstSearch
    return await cls(generator, cfg, progress_model).search_async(envs, theorem)


__all__ = [
    "BestFirstSearch",
    "SearchConfig",
    "SearchResult",
    "WholeProofSearch",
    "proof_text",
    "run_sync",
    "search_theorem",
    "search_theorem_async",
]
