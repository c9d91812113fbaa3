"""BM25 premise retrieval (``bm25s``): the lexical baseline behind the same :class:`Retriever`
contract, with the same accessibility semantics as the dense retriever.

Documents are :func:`~lean_dojo_v2.models.retrieval.premise_text` (code, else the full name).
:func:`lean_tokens` lower-cases Lean text and keeps each identifier whole *and* split on ``.`` and
``_`` (``Nat.add_zero`` → ``nat.add_zero``, ``nat``, ``add``, ``zero``), so a goal mentioning
``n + 0`` and ``Nat`` can meet a premise named ``Nat.add_zero``; numbers and operator symbols
(``+``, ``≤``, ``∣``) are tokens of their own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np

from ..data.corpus import Corpus
from ..data.model import Premise
from .premise_index import AccessibilityMasks, top_k_rows
from .retrieval import AccessibleAt, Retriever, check_retrieve_args, premise_text

_TOKEN = re.compile(r"[^\W\d][\w.'!?]*|\d+|[^\w\s]")
_PARTS = re.compile(r"[._]+")


def lean_tokens(text: str) -> list[str]:
    """BM25 tokens of Lean text: identifiers (whole and split on ``.``/``_``), numbers, symbols;
    lower-cased."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        tok = tok.strip(".")
        if not tok:
            continue
        out.append(tok)
        parts = [p for p in _PARTS.split(tok) if p]
        if len(parts) > 1:
            out.extend(parts)
    return out


class BM25Retriever(Retriever):
    """BM25 (``bm25s``, Lucene variant, ``k1``/``b`` as usual) over a corpus' premises."""

    def __init__(self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        # bm25s sets its own logger to DEBUG when imported; leave its level to the application.
        if logging.getLogger("bm25s").level == logging.DEBUG:
            logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.corpus = corpus
        self.premises: list[Premise] = [p for f in corpus.files for p in f.premises]
        self._masks = AccessibilityMasks(corpus, self.premises)
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        if self.premises:
            self._bm25.index(
                [lean_tokens(premise_text(p)) for p in self.premises], show_progress=False
            )

    def mask(self, file_path: str, pos) -> np.ndarray:  # noqa: ANN001 - Pos | None
        """bool ``[N]`` over :attr:`premises`: accessible at ``pos`` in ``file_path``."""
        return self._masks.mask(file_path, pos)

    def scores(self, state: str) -> np.ndarray:
        """BM25 score of every premise for ``state`` (float32 ``[N]``)."""
        if not self.premises:
            return np.zeros(0, dtype=np.float32)
        tokens = lean_tokens(state)
        if not tokens:
            return np.zeros(len(self.premises), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def retrieve(
        self,
        states: list[str],
        k: int,
        accessible: Sequence[AccessibleAt | None] | None = None,
    ) -> list[list[tuple[Premise, float]]]:
        check_retrieve_args(states, k, accessible)
        masks: list[np.ndarray | None] = [None] * len(states)
        if accessible is not None:
            masks = [None if a is None else self.mask(a[0], a[1]) for a in accessible]
        if not states:
            return []
        if not self.premises:
            return [[] for _ in states]
        scores = np.vstack([self.scores(s) for s in states])
        for row, m in zip(scores, masks, strict=False):
            if m is not None:
                np.putmask(row, ~m, -np.inf)
        return [[(self.premises[r], s) for r, s in hits] for hits in top_k_rows(scores, k)]
