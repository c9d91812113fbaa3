"""Layer 3: proof search and provers.

Best-first, whole-proof and refinement search over a :class:`~lean_dojo_v2.interaction.ProofEnv`, the provers
(tactic generators behind that search), proof re-checking, recording and write-back, and the
proving pipeline that runs them in order (:class:`ProveRun`). Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .attempt import Attempt, TreeNode
    from .base import BaseProver
    from .best_first import BestFirstSearch
    from .external_prover import ExternalProver
    from .hf_prover import HFProver
    from .outcome import TheoremOutcome
    from .parallel import prove_theorems
    from .pipeline import ProofJob, ProveRun, ProveRunReport, WriteBackRequest
    from .recording import record_results
    from .refine import RefineSearch
    from .result import SearchResult, proof_text
    from .retrieval_prover import RetrievalProver
    from .search import search_theorem
    from .search_config import SearchConfig
    from .verify import verify_proof, verify_proof_async
    from .whole_proof import WholeProofSearch
    from .writeback import SorryNotFoundError, WriteBackError, WriteBackResult, write_back

_EXPORTS = {
    "Attempt": ".attempt",
    "TreeNode": ".attempt",
    "BaseProver": ".base",
    "BestFirstSearch": ".best_first",
    "ExternalProver": ".external_prover",
    "HFProver": ".hf_prover",
    "TheoremOutcome": ".outcome",
    "prove_theorems": ".parallel",
    "ProofJob": ".pipeline",
    "ProveRun": ".pipeline",
    "ProveRunReport": ".pipeline",
    "WriteBackRequest": ".pipeline",
    "record_results": ".recording",
    "RefineSearch": ".refine",
    "SearchResult": ".result",
    "proof_text": ".result",
    "RetrievalProver": ".retrieval_prover",
    "search_theorem": ".search",
    "SearchConfig": ".search_config",
    "verify_proof": ".verify",
    "verify_proof_async": ".verify",
    "WholeProofSearch": ".whole_proof",
    "SorryNotFoundError": ".writeback",
    "WriteBackError": ".writeback",
    "WriteBackResult": ".writeback",
    "write_back": ".writeback",
}
__all__ = [
    "Attempt",
    "BaseProver",
    "BestFirstSearch",
    "ExternalProver",
    "HFProver",
    "ProofJob",
    "ProveRun",
    "ProveRunReport",
    "RefineSearch",
    "RetrievalProver",
    "SearchConfig",
    "SearchResult",
    "SorryNotFoundError",
    "TheoremOutcome",
    "TreeNode",
    "WholeProofSearch",
    "WriteBackError",
    "WriteBackRequest",
    "WriteBackResult",
    "proof_text",
    "prove_theorems",
    "record_results",
    "search_theorem",
    "verify_proof",
    "verify_proof_async",
    "write_back",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
