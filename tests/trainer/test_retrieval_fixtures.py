"""Shared fixtures of the retrieval-trainer tests (imported by the ``test_retrieval_*`` files):
a tiny randomly initialised BERT encoder with a character-level WordPiece vocabulary, saved as an
ordinary HF folder that ``load_encoder`` loads, and the bundled real sample."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

_SYMBOLS = "_.,:;=+-*/^<>()[]{}|!?@#$%&'`~⊢ℕℤℚℝ∀∃→←↔∧∨¬≤≥≠∣∈∉⊆⊂∑∏⁻¹•λαβγδεσ↑⟨⟩×∘"


def build_tiny_encoder(dst: str | Path, *, seed: int = 0, dropout: float = 0.0) -> Path:
    """A 2-layer BERT (hidden 32, ~60 k parameters) and its tokenizer, saved to ``dst``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    chars = sorted(set(string.ascii_letters + string.digits + _SYMBOLS))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    (dst / "vocab.txt").write_text("\n".join(vocab) + "\n", "utf-8")
    tokenizer = BertTokenizer(str(dst / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=256,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    BertModel(config).save_pretrained(dst)
    tokenizer.save_pretrained(dst)
    return dst


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
