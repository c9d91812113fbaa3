"""Layer 3 (prover): proof search, the entry point — :func:`search_theorem` and the names around it.

Search is split by job; this module picks a mode and re-exports the public names, so every import
from ``lean_dojo_v2.prover.search`` keeps working:

============================  =====================================================================
module                        job
============================  =====================================================================
:mod:`.search_config`         :class:`SearchConfig`, the settings of one search
:mod:`.search_run`            what every mode shares: clock, counters, crash log, generator call,
                              check of its answer, re-check, result, catch-all (``SearchRun``)
:mod:`.best_first`            :class:`BestFirstSearch`: best-first search over proof states
:mod:`.whole_proof`           :class:`WholeProofSearch`: sample whole proofs, re-check each
:mod:`.refine`                :class:`RefineSearch`: whole proofs, then rounds with Lean's error
:mod:`.attempt`               :class:`Attempt`, :class:`TreeNode`: what a result records
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
from .refine import RefineSearch
from .result import SearchResult, proof_text
from .search_config import SearchConfig
from .threads import run_sync
from .whole_proof import WholeProofSearch

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from .search_types import Envs, ProgressPredictor


def search_class(config: SearchConfig) -> type[BestFirstSearch] | type[WholeProofSearch]:
    """The search of ``config.search_mode``: :class:`BestFirstSearch` (``"tactic"``),
    :class:`WholeProofSearch` (``"whole"``) or :class:`RefineSearch` (``"refine"``)."""
    mode = config.search_mode
    if mode == "refine":
        return RefineSearch
    return WholeProofSearch if mode == "whole" else BestFirstSearch


def search_theorem(
    generator: TacticGenerator,
    env: Envs,
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: ProgressPredictor | None = None,
) -> SearchResult:
    """Search for a proof of ``theorem`` with the mode ``config`` names
    (:func:`search_class`). Blocking; see :func:`search_theorem_async` in a loop."""
    cfg = config if config is not None else SearchConfig()
    return search_class(cfg)(generator, cfg, progress_model).search(env, theorem)


async def search_theorem_async(
    generator: TacticGenerator,
    envs: AsyncProofEnv | Sequence[AsyncProofEnv],
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: ProgressPredictor | None = None,
) -> SearchResult:
    """The coroutine flavour of :func:`search_theorem`."""
    cfg = config if config is not None else SearchConfig()
    return await search_class(cfg)(generator, cfg, progress_model).search_async(envs, theorem)


__all__ = [
    "BestFirstSearch",
    "RefineSearch",
    "SearchConfig",
    "SearchResult",
    "WholeProofSearch",
    "proof_text",
    "run_sync",
    "search_class",
    "search_theorem",
    "search_theorem_async",
]
