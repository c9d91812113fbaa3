"""A tiny randomly initialised BERT encoder (WordPiece vocabulary of Lean characters) for the
retrieval tests: built in about a second, saved as an ordinary HF folder that
``lean_dojo_v2.models.retrieval.load_encoder`` loads. The real default (MiniLM) is only used in
tests marked ``slow``."""

from __future__ import annotations

from pathlib import Path

import tiny_models  # tests/ is on sys.path (pytest's rootdir insertion)
from tiny_models import char_vocab

_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "_.,:;=+-*/^<>()[]{}|!?@#$%&'⊢ℕℤℚℝ∀∃→←↔∧∨¬≤≥≠∣∈∉⊆∑∏⁻¹•λαβγ"
)
_WORDS = ("nat", "int", "add", "zero", "comm", "mul", "theorem", "lemma", "eq", "succ", "list")


def build_tiny_bert(dst: str | Path, *, seed: int = 0) -> Path:
    """Save a 2-layer BERT (hidden 32) and its WordPiece tokenizer to ``dst``; returns ``dst``."""
    return tiny_models.build_tiny_bert(dst, seed=seed, vocab=char_vocab(_CHARS, _WORDS))


def assert_accessible(corpus, path: str, pos, hits) -> int:  # noqa: ANN001 - Corpus, Pos | None
    """Assert every ``(premise, score)`` hit for ``(path, pos)`` may be used there: defined before
    ``pos`` in the same file, or in a file ``path`` imports. Returns the number checked."""
    allowed = corpus.imports_of(path)
    for premise, _ in hits:
        if premise.path == path:
            assert pos is None or premise.start < pos, (path, pos, premise.full_name)
        else:
            assert premise.path in allowed, (path, premise.path)
    return len(hits)
