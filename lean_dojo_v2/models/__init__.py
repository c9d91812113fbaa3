"""The models layer: one loading path (:func:`load_model`), the prompt format shared by training
and inference (:mod:`.prompts`), and the :class:`TacticGenerator` contract with its Hugging Face
implementations.

Importing this package is cheap: torch and transformers are imported inside the functions that
use them.
"""

from __future__ import annotations

from ..errors import ModelError, ModelNotFoundError
from .loading import (
    DEFAULT_MODEL,
    LoadedModel,
    convert_gguf,
    default_gguf_path,
    load_model,
    resolve_model_path,
)
from .progress import ProgressModel, load_progress_model, progress_text
from .prompts import SYSTEM_PROMPT, end_marker, render_prompt, training_pair

__all__ = [
    "DEFAULT_MODEL",
    "LoadedModel",
    "ModelError",
    "ModelNotFoundError",
    "ProgressModel",
    "SYSTEM_PROMPT",
    "convert_gguf",
    "default_gguf_path",
    "end_marker",
    "load_model",
    "load_progress_model",
    "progress_text",
    "render_prompt",
    "resolve_model_path",
    "training_pair",
]

# Retrieval (issue 11): imported on first access (numpy, bm25s, torch stay out of `import`).
_RETRIEVAL = {
    "AccessibleAt": ".retrieval",
    "PremiseEncoder": ".retrieval",
    "Retriever": ".retrieval",
    "load_encoder": ".retrieval",
    "premise_text": ".retrieval",
    "DenseRetriever": ".premise_index",
    "PremiseIndex": ".premise_index",
    "export_retriever": ".premise_index",
    "load_retriever": ".premise_index",
    "BM25Retriever": ".bm25",
    "RetrievalQuery": ".retrieval_eval",
    "evaluate_retriever": ".retrieval_eval",
    "ranking_metrics": ".retrieval_eval",
    "retrieval_queries": ".retrieval_eval",
}
from .._lazy import reexport as _reexport  # noqa: E402

__getattr__, __dir__ = _reexport(globals(), {n: f"{m}:{n}" for n, m in _RETRIEVAL.items()})
__all__ += sorted(_RETRIEVAL)
