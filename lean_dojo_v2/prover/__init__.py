"""Layer 3: proof search and provers.

Best-first and whole-proof search over a :class:`~lean_dojo_v2.interaction.ProofEnv`, the provers
(tactic generators behind that search), proof re-checking, recording and write-back. Importing
this package is cheap: every name below is resolved on first use.
"""

from __future__ import annotations

from .._lazy import reexport

_LAZY = {
    "SearchResult": ".result",
    "proof_text": ".result",
    "SearchConfig": ".search_config",
    "BestFirstSearch": ".best_first",
    "WholeProofSearch": ".whole_proof",
    "search_theorem": ".search",
    "verify_proof": ".verify",
    "verify_proof_async": ".verify",
    "BaseProver": ".base",
    "HFProver": ".hf_prover",
    "RetrievalProver": ".retrieval_prover",
    "ExternalProver": ".external_prover",
    "prove_theorems": ".parallel",
    "record_results": ".recording",
    "write_back": ".writeback",
    "WriteBackResult": ".writeback",
    "WriteBackError": ".writeback",
    "SorryNotFoundError": ".writeback",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = reexport(globals(), _LAZY)
