"""``RetrievalProver``: an :class:`~lean_dojo_v2.prover.HFProver` whose prompts carry premises.

For each goal state the retriever ranks the premises of the corpus, and the ``num_premises``
best are put in the prompt (:func:`~lean_dojo_v2.models.prompts.user_content`: ``Premises:`` then
``Goal:``), as ReProver does. Only premises *accessible at the theorem's position* are
candidates: :meth:`RetrievalProver.for_theorem` (which search calls once per theorem) returns a
copy bound to ``(theorem.file_path, theorem.start)``, and every ``retrieve`` call of that copy
passes it as ``accessible`` (a premise defined later in the same file, or in a file the theorem's
file does not import, is never shown). An unbound prover retrieves from the whole index.

The retriever is anything with ``retrieve(states, k, accessible)`` (the
:class:`~lean_dojo_v2.models.retrieval.Retriever` contract): a
:class:`~lean_dojo_v2.models.premise_index.DenseRetriever`, a BM25 retriever, or the directory
written by :func:`~lean_dojo_v2.models.premise_index.export_retriever` (loaded with
:func:`~lean_dojo_v2.models.premise_index.load_retriever`). A premise is shown as
:func:`~lean_dojo_v2.models.retrieval.premise_text` (its code when the corpus has it, else its
full name).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any

from ..errors import ModelError
from ..models.generator import Candidate, check_generate_args
from ..models.loading import LoadedModel
from .hf_prover import HFProver


def _resolve_retriever(retriever: Any, device: str) -> Any:
    if retriever is None:
        raise ModelError(
            "RetrievalProver needs a retriever: a Retriever (DenseRetriever, BM25Retriever) or "
            "the directory written by export_retriever; use HFProver for prompts without premises"
        )
    if isinstance(retriever, (str, os.PathLike)):
        from ..models.premise_index import load_retriever

        return load_retriever(retriever, device=device)
    if not callable(getattr(retriever, "retrieve", None)):
        raise ModelError(
            f"retriever must have retrieve(states, k, accessible) (a Retriever), not "
            f"{type(retriever).__name__}"
        )
    return retriever


class RetrievalProver(HFProver):
    """Retrieval-augmented prover (see the module docstring).

    ``ckpt_path``/``use_lora``/``device`` and the keyword arguments: as :class:`HFProver` (the
    generator should have been trained with premises in its prompts). ``retriever``: a
    :class:`~lean_dojo_v2.models.retrieval.Retriever` or an exported retriever directory.
    ``num_premises``: premises per prompt (0: none, the prover then behaves as ``HFProver``).
    """

    def __init__(
        self,
        ckpt_path: str | os.PathLike[str] | LoadedModel | None = None,
        retriever: Any = None,
        num_premises: int = 5,
        use_lora: bool = False,
        device: str = "auto",
        **kwargs: Any,
    ) -> None:
        if isinstance(num_premises, bool) or not isinstance(num_premises, int) or num_premises < 0:
            raise ModelError(f"num_premises must be a whole number >= 0, got {num_premises!r}")
        self.retriever = _resolve_retriever(retriever, device)
        super().__init__(ckpt_path, use_lora, device, **kwargs)
        self.num_premises = num_premises
        self.accessible: tuple[str, Any] | None = None
        """``(file_path, position)`` the retrieval is restricted to (set by :meth:`for_theorem`)."""
        self.theorem: Any = None

    def for_theorem(self, theorem: Any) -> RetrievalProver:
        """A copy (sharing the model and the retriever) that retrieves only premises accessible
        at ``(theorem.file_path, theorem.start)``."""
        file_path = getattr(theorem, "file_path", None)
        if not isinstance(file_path, str):
            raise ModelError(
                f"for_theorem needs a Theorem with a file_path, not {type(theorem).__name__}"
            )
        bound = copy.copy(self)
        bound.accessible = (file_path, getattr(theorem, "start", None))
        bound.theorem = theorem
        return bound

    def premises(self, states: Sequence[str]) -> list[list[str]]:
        """The premise texts put in the prompt of each state, best first."""
        from ..models.retrieval import premise_text

        if self.num_premises == 0 or not states:
            return [[] for _ in states]
        unique = list(dict.fromkeys(states))
        accessible = None if self.accessible is None else [self.accessible] * len(unique)
        ranked = self.retriever.retrieve(unique, self.num_premises, accessible)
        texts = {
            s: [premise_text(p) for p, _ in hits[: self.num_premises]]
            for s, hits in zip(unique, ranked, strict=True)
        }
        return [list(texts[s]) for s in states]

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, prefix)
        table = dict(zip(states, self.premises(states), strict=True))
        return self._generate(states, num_samples, prefix=prefix, premises=table)

    def generate_proofs(self, states: list[str], num_samples: int) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, None)
        table = dict(zip(states, self.premises(states), strict=True))
        return self._generate_proofs(states, num_samples, premises=table)

    def prompts(self, states: Sequence[str], *, whole_proof: bool = False) -> list[str]:
        """The exact model input of each state, premises included (for inspection and tests)."""
        table = dict(zip(states, self.premises(states), strict=True))
        return self._prompts(states, whole_proof, table)
