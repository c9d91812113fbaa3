"""A tiny randomly initialised BERT encoder (WordPiece vocabulary of Lean characters) for the
retrieval tests: built in about a second, saved as an ordinary HF folder that
``lean_dojo_v2.models.retrieval.load_encoder`` loads. The real default (MiniLM) is only used in
tests marked ``slow``."""

from __future__ import annotations

from pathlib import Path

_CHARS = sorted(
    set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        "_.,:;=+-*/^<>()[]{}|!?@#$%&'⊢ℕℤℚℝ∀∃→←↔∧∨¬≤≥≠∣∈∉⊆∑∏⁻¹•λαβγ"
    )
)
_WORDS = ["nat", "int", "add", "zero", "comm", "mul", "theorem", "lemma", "eq", "succ", "list"]


def build_tiny_bert(dst: str | Path, *, seed: int = 0) -> Path:
    """Save a 2-layer BERT (hidden 32) and its WordPiece tokenizer to ``dst``; returns ``dst``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _CHARS
    vocab += ["##" + c for c in _CHARS] + _WORDS
    (dst / "vocab.txt").write_text("\n".join(vocab) + "\n", "utf-8")
    tokenizer = BertTokenizer(str(dst / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    BertModel(config).save_pretrained(dst)
    tokenizer.save_pretrained(dst)
    return dst
