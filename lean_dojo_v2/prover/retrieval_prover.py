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

**Upstream LeanDojo-v2's constructor**, ``RetrievalProver(ret_ckpt_path=..., gen_ckpt_path=...,
indexed_corpus_path=...)``, maps onto ours (:func:`upstream_retriever`): ``gen_ckpt_path`` is
``ckpt_path`` (the tactic generator); ``ret_ckpt_path`` is an exported retriever directory, or a
premise encoder (a directory or a Hugging Face id) whose premise index is ``indexed_corpus_path``
(a folder written by :meth:`~lean_dojo_v2.models.premise_index.PremiseIndex.save`). Upstream's
pickled ``IndexedCorpus`` files and Lightning ``.ckpt`` files are not read: each is refused with a
one-line :class:`~lean_dojo_v2.errors.ModelNotFoundError` that says what to pass instead.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ModelError, ModelNotFoundError
from ..models.generator import Candidate, check_generate_args
from ..models.loading import LoadedModel
from .hf_prover import HFProver

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..models.premise_index import DenseRetriever
    from ..models.proof_prompt import ProofRequest
    from ..models.retrieval import AccessibleAt, Retriever


def _resolve_retriever(
    retriever: Retriever | str | os.PathLike[str] | None, device: str
) -> Retriever:
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


def _not_a_file(path: Path, what: str, instead: str) -> None:
    if path.is_file():
        raise ModelNotFoundError(
            f"{what} {path} is a file (upstream's pickled/Lightning checkpoint?); this library "
            f"reads {instead}"
        )


def upstream_retriever(
    ret_ckpt_path: str | os.PathLike[str],
    indexed_corpus_path: str | os.PathLike[str] | None,
    device: str,
) -> DenseRetriever:
    """The retriever of upstream's ``RetrievalProver(ret_ckpt_path=..., indexed_corpus_path=...)``
    (see the module docstring): an exported retriever directory as it is (with its own index,
    or the index at ``indexed_corpus_path``), or the encoder at ``ret_ckpt_path`` over the index
    at ``indexed_corpus_path``. A path that is not what it must be is a one-line
    :class:`ModelNotFoundError`."""
    from ..models.premise_index import (
        INDEX_META,
        DenseRetriever,
        PremiseIndex,
        is_retriever_dir,
        load_retriever,
    )

    ret = Path(os.fspath(ret_ckpt_path)).expanduser()
    index_dir = None if indexed_corpus_path is None else Path(os.fspath(indexed_corpus_path))
    if index_dir is not None:
        index_dir = index_dir.expanduser()
        if is_retriever_dir(index_dir):
            index_dir = index_dir / "index"
        _not_a_file(index_dir, "indexed_corpus_path", "a premise index folder (PremiseIndex.save)")
        if not (index_dir / INDEX_META).is_file():
            raise ModelNotFoundError(
                f"indexed_corpus_path {index_dir} is not a premise index folder ({INDEX_META} is "
                "missing); build one with PremiseIndex.build(corpus, encoder).save(path), or "
                "pass an exported retriever directory"
            )
    if is_retriever_dir(ret):
        exported = load_retriever(ret, device=device)
        if index_dir is None or index_dir.resolve() == (ret / "index").resolve():
            return exported
        return DenseRetriever(exported.encoder, PremiseIndex.load(index_dir))
    _not_a_file(ret, "ret_ckpt_path", "an exported retriever directory (export_retriever)")
    if index_dir is None:
        raise ModelNotFoundError(
            f"ret_ckpt_path {ret} is not an exported retriever directory (retriever.json is "
            "missing) and no indexed_corpus_path was given; pass an export_retriever folder, or "
            "an encoder with indexed_corpus_path= its premise index folder"
        )
    from ..models.retrieval import load_encoder

    return DenseRetriever(
        load_encoder(os.fspath(ret_ckpt_path), device=device), PremiseIndex.load(index_dir)
    )


class RetrievalProver(HFProver):
    """Retrieval-augmented prover (see the module docstring).

    ``ckpt_path``/``use_lora``/``device`` and the keyword arguments: as :class:`HFProver` (the
    generator should have been trained with premises in its prompts). ``retriever``: a
    :class:`~lean_dojo_v2.models.retrieval.Retriever` or an exported retriever directory.
    ``num_premises``: premises per prompt (0: none, the prover then behaves as ``HFProver``).
    ``ret_ckpt_path``/``gen_ckpt_path``/``indexed_corpus_path``: upstream's names (see the
    module docstring), instead of ``retriever``/``ckpt_path``.
    """

    def __init__(
        self,
        ckpt_path: str | os.PathLike[str] | LoadedModel | None = None,
        retriever: Retriever | str | os.PathLike[str] | None = None,
        num_premises: int = 5,
        use_lora: bool = False,
        device: str = "auto",
        *,
        ret_ckpt_path: str | os.PathLike[str] | None = None,
        gen_ckpt_path: str | os.PathLike[str] | None = None,
        indexed_corpus_path: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(num_premises, bool) or not isinstance(num_premises, int) or num_premises < 0:
            raise ModelError(f"num_premises must be a whole number >= 0, got {num_premises!r}")
        if gen_ckpt_path is not None:
            if ckpt_path is not None:
                raise ModelError("pass ckpt_path or gen_ckpt_path (upstream's name), not both")
            ckpt_path = gen_ckpt_path
        if ret_ckpt_path is not None:
            if retriever is not None:
                raise ModelError("pass retriever or ret_ckpt_path (upstream's name), not both")
            retriever = upstream_retriever(ret_ckpt_path, indexed_corpus_path, device)
        elif indexed_corpus_path is not None:
            raise ModelError(
                "indexed_corpus_path is the premise index of ret_ckpt_path; pass ret_ckpt_path "
                "too (or retriever= an exported retriever directory)"
            )
        self.retriever = _resolve_retriever(retriever, device)
        super().__init__(ckpt_path, use_lora, device, **kwargs)
        self.num_premises = num_premises
        self.accessible: AccessibleAt | None = None
        """``(file_path, position)`` the retrieval is restricted to (set by :meth:`for_theorem`)."""
        self.theorem: Theorem | None = None

    def for_theorem(self, theorem: Theorem) -> RetrievalProver:
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

    def request_premises(self, requests: Sequence[ProofRequest]) -> list[list[str]]:
        """The premises of each whole-proof request: those ranked for its task's goal state
        (none for a task without one)."""
        states = [r.task.state or "" for r in requests]
        wanted = [s for s in states if s]
        ranked = dict(zip(wanted, self.premises(wanted), strict=True))
        return [list(ranked.get(s, [])) for s in states]

    def prompts(self, states: Sequence[str], *, whole_proof: bool = False) -> list[str]:
        """The exact model input of each state, premises included (for inspection and tests)."""
        table = dict(zip(states, self.premises(states), strict=True))
        return self._prompts(states, whole_proof, table)
