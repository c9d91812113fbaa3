"""Pooling choices of the premise encoder (``load_encoder(pooling=...)``, sentence-transformers
Pooling configs), on hand-made hidden states and a tiny randomly initialised BERT."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from lean_dojo_v2.errors import ModelError
from lean_dojo_v2.models.retrieval import (
    POOLINGS,
    load_encoder,
    pool_hidden,
    sentence_transformers_pooling,
)

from .retrieval_fixtures import build_tiny_bert

TEXTS = ["n : ℕ\n⊢ n + 0 = n", "a b : ℕ\n⊢ a + b = b + a"]


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_pooling"))


def _st_folder(src: Path, dst: Path, pooling_cfg: dict, extra: list | None = None) -> Path:
    shutil.copytree(src, dst)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ] + (extra or [])
    (dst / "modules.json").write_text(json.dumps(modules))
    (dst / "1_Pooling").mkdir()
    (dst / "1_Pooling" / "config.json").write_text(json.dumps(pooling_cfg))
    return dst


def test_pool_hidden_each_mode_on_a_padded_batch() -> None:
    # row 0: 3 real tokens then padding; row 1: padding on the left, 2 real tokens
    hidden = torch.tensor(
        [
            [[1.0, 0.0], [3.0, 2.0], [5.0, -4.0], [100.0, 100.0]],
            [[100.0, 100.0], [100.0, 100.0], [2.0, 6.0], [4.0, -2.0]],
        ]
    )
    mask = torch.tensor([[1, 1, 1, 0], [0, 0, 1, 1]])
    out = {mode: pool_hidden(hidden, mask, mode) for mode in POOLINGS}
    assert torch.allclose(out["mean"], torch.tensor([[3.0, -2 / 3], [3.0, 2.0]]))
    assert torch.allclose(out["cls"], hidden[:, 0])
    assert torch.allclose(out["max"], torch.tensor([[5.0, 2.0], [4.0, 6.0]]))
    assert torch.allclose(out["lasttoken"], torch.tensor([[5.0, -4.0], [4.0, -2.0]]))
    assert torch.allclose(
        out["mean_sqrt_len_tokens"],
        torch.tensor([[9.0, -2.0], [6.0, 4.0]]) / torch.tensor([[3**0.5], [2**0.5]]),
    )
    # positions 1..L weight the real tokens: row 0 weights 1,2,3; row 1 weights 3,4
    assert torch.allclose(
        out["weightedmean"],
        torch.tensor([[(1 + 6 + 15) / 6, (0 + 4 - 12) / 6], [(6 + 16) / 7, (18 - 8) / 7]]),
    )
    with pytest.raises(ModelError, match="unknown pooling"):
        pool_hidden(hidden, mask, "median")


def test_load_encoder_pooling_override_changes_embeddings_and_none_keeps_mean(
    tiny_bert_dir: Path,
) -> None:
    default = load_encoder(tiny_bert_dir, device="cpu")
    assert default.pooling == "mean"  # None keeps today's behaviour for a plain HF folder
    embs = {}
    for mode in POOLINGS:
        enc = load_encoder(tiny_bert_dir, device="cpu", pooling=mode)
        assert enc.pooling == mode
        e = enc.encode(TEXTS)
        assert e.shape == (2, enc.dim)
        assert abs(float((e**2).sum(axis=1).mean()) - 1.0) < 1e-5
        embs[mode] = e
    assert (embs["mean"] == default.encode(TEXTS)).all()
    assert not (embs["cls"] == embs["mean"]).all() and not (embs["max"] == embs["mean"]).all()
    with pytest.raises(ModelError, match="unknown pooling"):
        load_encoder(tiny_bert_dir, device="cpu", pooling="median")


def test_saved_encoder_remembers_its_pooling(tiny_bert_dir: Path, tmp_path: Path) -> None:
    enc = load_encoder(tiny_bert_dir, device="cpu", pooling="max")
    enc.save(tmp_path / "saved")
    again = load_encoder(tmp_path / "saved", device="cpu")
    assert again.pooling == "max"
    assert (again.encode(TEXTS) == enc.encode(TEXTS)).all()


def test_sentence_transformers_pooling_reads_the_pooling_config(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    assert sentence_transformers_pooling(tiny_bert_dir) is None  # not a sentence transformer
    st = _st_folder(
        tiny_bert_dir,
        tmp_path / "st",
        {"word_embedding_dimension": 32, "pooling_mode_max_tokens": True},
    )
    assert sentence_transformers_pooling(st) == "max"
    assert load_encoder(st, device="cpu").pooling == "max"  # None: the folder's own pooling
    assert load_encoder(st, device="cpu", pooling="cls").pooling == "cls"


def test_sentence_transformers_folder_with_dense_layer_is_refused(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    st = _st_folder(
        tiny_bert_dir,
        tmp_path / "dense",
        {"pooling_mode_mean_tokens": True},
        [{"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}],
    )
    with pytest.raises(ModelError, match="Dense"):
        sentence_transformers_pooling(st)
    two = _st_folder(
        tiny_bert_dir,
        tmp_path / "two",
        {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True},
    )
    with pytest.raises(ModelError, match="one pooling mode"):
        sentence_transformers_pooling(two)


def test_bundled_minilm_declares_mean_pooling() -> None:
    from lean_dojo_v2.models.retrieval import default_encoder_path

    assert sentence_transformers_pooling(default_encoder_path()) == "mean"
