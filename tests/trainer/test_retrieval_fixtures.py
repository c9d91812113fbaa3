"""Shared fixtures of the retrieval-trainer tests (imported by the ``test_retrieval_*`` files):
a tiny randomly initialised BERT encoder with a character-level WordPiece vocabulary, saved as an
ordinary HF folder that ``load_encoder`` loads, and the bundled real sample."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from tiny_models import build_tiny_bert, char_vocab  # tests/ is on sys.path (conftest)

_SYMBOLS = "_.,:;=+-*/^<>()[]{}|!?@#$%&'`~⊢ℕℤℚℝ∀∃→←↔∧∨¬≤≥≠∣∈∉⊆⊂∑∏⁻¹•λαβγδεσ↑⟨⟩×∘"


def build_tiny_encoder(dst: str | Path, *, seed: int = 0, dropout: float = 0.0) -> Path:
    """A 2-layer BERT (hidden 32, ~60 k parameters) and its tokenizer, saved to ``dst``."""
    chars = string.ascii_letters + string.digits + _SYMBOLS
    return build_tiny_bert(
        dst, seed=seed, vocab=char_vocab(chars), max_positions=256, dropout=dropout
    )


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny_bert_retrieval"))


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    from lean_dojo_v2.data import sample_dataset_path

    return sample_dataset_path()


def quick(**extra):
    """TrainingConfig values for a fast, quiet, deterministic tiny-encoder run on the CPU."""
    values = dict(
        batch_size=8,
        lr=1e-3,
        max_seq_len=64,
        accelerator="cpu",
        devices="1",
        progress_bar=False,
        report_to=["none"],
        log_every_n_steps=1,
        eval_batch_size=64,
        seed=7,
    )
    values.update(extra)
    return values
