"""The models layer: one loading path (:func:`load_model`), the prompt format shared by training
and inference (:mod:`.prompts`), the :class:`TacticGenerator` contract's Hugging Face
implementations, retrieval (encoders, the premise index, BM25, ranking metrics) and the progress
model.

Names are imported on first use, and torch and transformers only inside the functions that use
them: importing this package loads none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..errors import ModelError, ModelNotFoundError
    from .bm25 import BM25Retriever
    from .loading import (
        DEFAULT_MODEL,
        LoadedModel,
        convert_gguf,
        default_gguf_path,
        load_model,
        resolve_model_path,
    )
    from .premise_index import DenseRetriever, PremiseIndex, export_retriever, load_retriever
    from .progress import ProgressModel, load_progress_model, progress_text
    from .prompts import SYSTEM_PROMPT, end_marker, render_prompt, training_pair
    from .proof_prompt import ProofPrompt, ProofRequest, ProofTask
    from .retrieval import AccessibleAt, PremiseEncoder, Retriever, load_encoder, premise_text
    from .retrieval_eval import (
        RetrievalQuery,
        evaluate_retriever,
        ranking_metrics,
        retrieval_queries,
    )

_EXPORTS = {
    "ModelError": "..errors",
    "ModelNotFoundError": "..errors",
    "BM25Retriever": ".bm25",
    "DEFAULT_MODEL": ".loading",
    "LoadedModel": ".loading",
    "convert_gguf": ".loading",
    "default_gguf_path": ".loading",
    "load_model": ".loading",
    "resolve_model_path": ".loading",
    "DenseRetriever": ".premise_index",
    "PremiseIndex": ".premise_index",
    "export_retriever": ".premise_index",
    "load_retriever": ".premise_index",
    "ProgressModel": ".progress",
    "load_progress_model": ".progress",
    "progress_text": ".progress",
    "ProofPrompt": ".proof_prompt",
    "ProofRequest": ".proof_prompt",
    "ProofTask": ".proof_prompt",
    "SYSTEM_PROMPT": ".prompts",
    "end_marker": ".prompts",
    "render_prompt": ".prompts",
    "training_pair": ".prompts",
    "AccessibleAt": ".retrieval",
    "PremiseEncoder": ".retrieval",
    "Retriever": ".retrieval",
    "load_encoder": ".retrieval",
    "premise_text": ".retrieval",
    "RetrievalQuery": ".retrieval_eval",
    "evaluate_retriever": ".retrieval_eval",
    "ranking_metrics": ".retrieval_eval",
    "retrieval_queries": ".retrieval_eval",
}
__all__ = [
    "AccessibleAt",
    "BM25Retriever",
    "DEFAULT_MODEL",
    "DenseRetriever",
    "LoadedModel",
    "ModelError",
    "ModelNotFoundError",
    "PremiseEncoder",
    "PremiseIndex",
    "ProgressModel",
    "ProofPrompt",
    "ProofRequest",
    "ProofTask",
    "RetrievalQuery",
    "Retriever",
    "SYSTEM_PROMPT",
    "convert_gguf",
    "default_gguf_path",
    "end_marker",
    "evaluate_retriever",
    "export_retriever",
    "load_encoder",
    "load_model",
    "load_progress_model",
    "load_retriever",
    "premise_text",
    "progress_text",
    "ranking_metrics",
    "render_prompt",
    "resolve_model_path",
    "retrieval_queries",
    "training_pair",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
