"""A tiny randomly initialised BERT (2 layers, hidden 32) with a WordPiece tokenizer trained in
milliseconds on real Lean text, saved as an ordinary HF folder: the progress tests' stand-in for
MiniLM (same architecture family, ~60 k parameters). Import it as ``lean_progress.tiny_bert``
(``tests/`` is on ``sys.path``)."""

from __future__ import annotations

import json
from pathlib import Path

import tiny_models  # tests/ is on sys.path

SAMPLE_TEXTS_LIMIT = 200


def _lean_texts() -> list[str]:
    """Real goal states and tactics of the bundled sample (the tokenizer's training text)."""
    from lean_dojo_v2.data import load_theorems, sample_dataset_path

    texts = ["Goal:", "Prefix:", "Candidate tactic:", "no goals"]
    for theorem in load_theorems(sample_dataset_path()):
        for t in theorem.traced_tactics:
            texts += [t.state_before, t.tactic]
    return texts[:SAMPLE_TEXTS_LIMIT]


def build_tiny_bert(dst: str | Path, *, seed: int = 0, max_positions: int = 128) -> Path:
    """Save a tiny random ``BertModel`` + fast WordPiece tokenizer to ``dst``; returns ``dst``.
    Loading it with ``AutoModelForSequenceClassification(num_labels=1)`` adds a fresh head."""
    return tiny_models.build_tiny_bert(
        dst, seed=seed, texts=_lean_texts(), num_heads=2, max_positions=max_positions
    )


def sample_rows_file(dst: str | Path, n: int | None = None) -> Path:
    """The LeanProgress JSONL of the bundled real sample (first ``n`` rows when given)."""
    from lean_dojo_v2.data import load_theorems, sample_dataset_path
    from lean_dojo_v2.lean_progress.dataset import progress_examples

    rows = list(progress_examples(load_theorems(sample_dataset_path())))
    if n is not None:
        rows = rows[:n]
    dst = Path(dst)
    dst.write_text(
        "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rows), "utf-8"
    )
    return dst


def build_tiny_progress_model(dst: str | Path, *, num_labels: int = 1, seed: int = 0) -> Path:
    """A tiny random ``BertForSequenceClassification`` (``num_labels`` outputs; 1 = a progress
    regressor) with the tiny tokenizer, saved to ``dst``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    dst = Path(dst)
    base = build_tiny_bert(dst / "_base", seed=seed)
    config = BertConfig.from_pretrained(base)
    config.num_labels = num_labels
    config.problem_type = "regression" if num_labels == 1 else None
    torch.manual_seed(seed)
    BertForSequenceClassification(config).save_pretrained(dst)
    AutoTokenizer.from_pretrained(base).save_pretrained(dst)
    return dst


def one_torch_thread():
    """Generator for a fixture: run with one torch thread, then restore. A model this small gains
    nothing from more, and on a busy shared CPU extra threads make each step 20x slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
