"""The premise encoder and the retrieval contract (lean_dojo_v2.models.retrieval), on tiny random
BERT/T5 encoders; the bundled MiniLM only in a slow test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lean_dojo_v2.data import Corpus, Pos, Premise, sample_dataset_path
from lean_dojo_v2.errors import ModelError, ModelNotFoundError
from lean_dojo_v2.models.retrieval import (
    PremiseEncoder,
    Retriever,
    load_encoder,
    premise_text,
)

from .retrieval_fixtures import build_tiny_bert

STATES = [
    "n : ℕ\n⊢ n + 0 = n",
    "a b : ℕ\n⊢ a + b = b + a",
    "x : ℝ\nhx : 0 < x\n⊢ 0 < x ^ 2",
]


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir: Path) -> PremiseEncoder:
    return load_encoder(tiny_bert_dir, device="cpu")


def _premise(code: str, name: str = "Nat.add_zero") -> Premise:
    return Premise("A.lean", name, code, Pos(1, 1), Pos(1, 9), "theorem")


def test_premise_text_is_code_when_present_else_full_name() -> None:
    assert premise_text(_premise("theorem Nat.add_zero (n : ℕ) : n + 0 = n")) == (
        "theorem Nat.add_zero (n : ℕ) : n + 0 = n"
    )
    assert premise_text(_premise("")) == "Nat.add_zero"
    assert premise_text(_premise("   \n")) == "Nat.add_zero"


def test_premise_text_on_the_bundled_corpus_falls_back_to_names() -> None:
    corpus = Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")
    for p in corpus.premises:  # the sample corpus has no code (PROVENANCE.md)
        assert premise_text(p) == p.full_name


def test_encode_gives_normalised_float32_rows_in_input_order(encoder: PremiseEncoder) -> None:
    texts = STATES + ["Nat.add_comm", "x"]
    out = encoder.encode(texts, batch_size=2)
    assert out.dtype == np.float32 and out.shape == (len(texts), encoder.dim)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    # Length-sorted batching must not change which row belongs to which text.
    one_by_one = np.vstack([encoder.encode([t]) for t in texts])
    np.testing.assert_allclose(out, one_by_one, atol=1e-5)
    assert encoder.encode([]).shape == (0, encoder.dim)


def test_tokenize_gives_cpu_tensors_and_embed_is_differentiable(encoder: PremiseEncoder) -> None:
    import torch

    batch = encoder.tokenize(STATES)
    assert set(batch) >= {"input_ids", "attention_mask"}
    assert all(t.device.type == "cpu" for t in batch.values())
    encoder.module.train()
    try:
        emb = encoder.embed(batch)
        assert emb.shape == (3, encoder.dim) and emb.requires_grad
        torch.testing.assert_close(emb.norm(dim=-1), torch.ones(3), atol=1e-5, rtol=0)
        emb.sum().backward()
        grads = [p.grad for p in encoder.module.parameters() if p.grad is not None]
        assert grads and any(g.abs().sum() > 0 for g in grads)
    finally:
        encoder.module.zero_grad(set_to_none=True)
        encoder.module.eval()


def test_embed_pools_over_real_tokens_only(encoder: PremiseEncoder) -> None:
    # Padding must not change a text's embedding: alone vs. next to a much longer text.
    short = "n + 0 = n"
    alone = encoder.encode([short])
    padded = encoder.encode([short, "a b c : ℕ\n⊢ " + " + ".join("abc" * 10)], batch_size=8)
    np.testing.assert_allclose(alone[0], padded[0], atol=1e-5)


def test_save_and_load_encoder_round_trip(encoder: PremiseEncoder, tmp_path: Path) -> None:
    before = encoder.encode(STATES)
    saved = encoder.save(tmp_path / "enc")
    again = load_encoder(saved, device="cpu")
    assert again.pooling == encoder.pooling and again.max_length == encoder.max_length
    np.testing.assert_allclose(again.encode(STATES), before, atol=1e-6)
    # Saving again over our own folder is allowed; over a foreign one it is refused.
    encoder.save(saved)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    from lean_dojo_v2.errors import OutputExistsError

    with pytest.raises(OutputExistsError):
        encoder.save(foreign)


def test_t5_checkpoint_loads_as_encoder_only_with_mean_pooling(tiny_seq2seq_dir: Path) -> None:
    enc = load_encoder(tiny_seq2seq_dir, device="cpu")
    assert type(enc.module).__name__ == "T5EncoderModel"
    assert enc.pooling == "mean"
    out = enc.encode(STATES)
    assert out.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_max_length_is_capped_at_the_position_limit(tiny_bert_dir: Path) -> None:
    enc = load_encoder(tiny_bert_dir, device="cpu", max_length=10_000)
    assert enc.max_length == 128
    ids = enc.tokenize(["x + " * 500])["input_ids"]
    assert ids.shape[1] == 128


def test_unknown_encoder_raises_model_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no-such-org/no-such-encoder"):
        load_encoder("no-such-org/no-such-encoder", device="cpu")
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(ModelNotFoundError, match="empty_dir"):
        load_encoder(empty, device="cpu")
    with pytest.raises(ModelError, match="device"):
        load_encoder(None, device="tpu")


def test_bad_arguments_raise_model_errors(encoder: PremiseEncoder) -> None:
    with pytest.raises(ModelError):
        encoder.encode("one string")  # type: ignore[arg-type]
    with pytest.raises(ModelError):
        encoder.tokenize("one string")  # type: ignore[arg-type]


def test_retriever_is_an_abstract_contract() -> None:
    with pytest.raises(TypeError):
        Retriever()  # type: ignore[abstract]


@pytest.mark.slow
def test_default_minilm_matches_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    from lean_dojo_v2.models.retrieval import default_encoder_path

    enc = load_encoder(device="cpu")
    assert enc.dim == 384 and enc.pooling == "mean"
    texts = ["n + 0 = n", "theorem Nat.add_zero (n : ℕ) : n + 0 = n", "0 < x ^ 2"]
    ours = enc.encode(texts)
    st = SentenceTransformer(str(default_encoder_path()), device="cpu")
    np.testing.assert_allclose(ours, st.encode(texts, normalize_embeddings=True), atol=1e-5)
    # The goal is closest to the premise that closes it.
    assert int(np.argmax(ours[0] @ ours[1:].T)) == 0
