"""``/retrieve``'s new premises (what Lean's premise-selection client sends for the file being
edited, up to 2,048 a request): encoded together in batches of like token counts, in bfloat16
where the CPU computes it natively, once each (a bounded cache by text). The figures on the
real encoder are ``benchmarks/api_bench.py``'s (``retrieve_new_premises``)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from .conftest import make_app

STATE = "n : ℕ\n⊢ n + 0 = n"


def _texts(n: int) -> list[str]:
    """Texts whose length in characters says little of their length in tokens: runs of short
    common words (a token each) beside runs of random letters (a word piece every few)."""
    rng = random.Random(0)
    out = []
    for i in range(n):
        if i % 2:
            out.append(
                " ".join(
                    rng.choice(["the", "of", "and", "a", "to"]) for _ in range(rng.randint(5, 40))
                )
            )
        else:
            out.append("".join(rng.choice("qxzjkvw") for _ in range(rng.randint(10, 120))))
    return out


def test_encode_batches_texts_of_like_token_counts(tiny_bert_dir: Path) -> None:
    """Padded positions cost as much as real ones: batches are formed by token counts, so a
    batch pads only up to its own longest text, the least padding there is."""
    from lean_dojo_v2.models.retrieval import load_encoder

    enc = load_encoder(str(tiny_bert_dir), device="cpu")
    texts = _texts(96)
    lengths = [
        len(ids)
        for ids in enc.tokenizer(texts, truncation=True, max_length=enc.max_length)["input_ids"]
    ]
    padded: list[int] = []
    embed = enc.embed

    def counting(batch):
        padded.append(int(batch["attention_mask"].numel()))
        return embed(batch)

    enc.embed = counting  # type: ignore[method-assign]
    out = enc.encode(texts, batch_size=8)
    ranked = sorted(lengths, reverse=True)
    least = sum(max(ranked[s : s + 8]) * len(ranked[s : s + 8]) for s in range(0, len(ranked), 8))
    assert sum(padded) == least, (sum(padded), least, sum(lengths))
    # the embeddings are those of each text alone, in input order
    alone = np.stack(
        [load_encoder(str(tiny_bert_dir), device="cpu").encode([t])[0] for t in texts[:6]]
    )
    np.testing.assert_allclose(out[:6], alone, atol=1e-5)


def _retriever_app(retriever_dir: Path, **spec):
    model = {"kind": "retriever", "path": str(retriever_dir), "device": "cpu", **spec}
    return make_app({"r": model})


def _news(n: int, tag: str = "") -> list[dict[str, str]]:
    return [
        {
            "name": f"Bench.new_{tag}{i}",
            "decl": f"theorem Bench.new_{tag}{i} (n : ℕ) : n + {i} = {i} + n",
        }
        for i in range(n)
    ]


def _retrieve(client: TestClient, news: list[dict[str, str]], k: int = 10) -> list[dict]:
    r = client.post(
        "/retrieve", json={"state": STATE, "local_premises": [], "new_premises": news, "k": k}
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_new_premises_are_encoded_together_in_a_few_batches(retriever_dir: Path) -> None:
    with TestClient(_retriever_app(retriever_dir)) as c:
        model = c.app.state.server.registry.models["r"]
        model.load()
        encoder = model.retriever.encoder
        calls: list[int] = []
        embed = encoder.embed
        encoder.embed = lambda batch: calls.append(len(batch["input_ids"])) or embed(batch)
        hits = _retrieve(c, _news(300), k=300)
    assert len(hits) == 300
    assert sorted(calls, reverse=True)[:5] == [64, 64, 64, 64, 44] and len(calls) == 6  # + state


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_new_premises_rank_alike_in_either_precision(retriever_dir: Path, dtype: str) -> None:
    news = _news(40)
    with TestClient(_retriever_app(retriever_dir, premise_dtype="float32")) as c:
        exact = _retrieve(c, news, k=40)
    with TestClient(_retriever_app(retriever_dir, premise_dtype=dtype)) as c:
        got = _retrieve(c, news, k=40)
        described = c.get("/models").json()["models"][0]
    assert described["premise_dtype"] == dtype
    scores = {h["name"]: h["score"] for h in exact}
    assert {h["name"] for h in got} == set(scores)
    assert max(abs(h["score"] - scores[h["name"]]) for h in got) < 5e-3


def test_premise_dtype_auto_is_bfloat16_only_where_the_cpu_has_it(retriever_dir: Path) -> None:
    from lean_dojo_v2.external_api.encoding import native_bf16

    with TestClient(_retriever_app(retriever_dir)) as c:
        _retrieve(c, _news(2))
        described = c.get("/models").json()["models"][0]
    assert described["premise_dtype"] == ("bfloat16" if native_bf16() else "float32")


def test_a_bad_premise_dtype_stops_the_server_before_it_listens(retriever_dir: Path) -> None:
    from lean_dojo_v2.external_api.errors import ModelRegistryError

    with pytest.raises(ModelRegistryError, match="premise_dtype.*float16"):
        _retriever_app(retriever_dir, premise_dtype="float16")


def test_the_cache_of_new_premises_is_bounded_and_keeps_the_latest(retriever_dir: Path) -> None:
    with TestClient(_retriever_app(retriever_dir, premise_dtype="float32")) as c:
        model = c.app.state.server.registry.models["r"]
        model.new_premise_cache_size = 8
        first = _retrieve(c, _news(6, "a"))
        _retrieve(c, _news(6, "b"))  # evicts 4 of the first 6
        assert len(model._new_premise_cache) == 8
        before = model.retriever.encoder.encode_calls
        assert _retrieve(c, _news(6, "a")) == first
        assert model.retriever.encoder.encode_calls - before == 1 + 4  # the state, the evicted


def test_a_goal_state_is_encoded_on_one_thread_and_new_premises_on_all(
    retriever_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short encode split across threads waits at every barrier for a thread other work may
    have preempted (80-95 ms against 30 ms for one MiniLM goal state under load): one thread
    does it; a batch of new premises keeps them all; the count is set back after."""
    import torch


    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with TestClient(_retriever_app(retriever_dir)) as c:
            model = c.app.state.server.registry.models["r"]
            model.load()
            encoder = model.retriever.encoder
            seen: list[tuple[int, int]] = []
            embed = encoder.embed

            def counting(batch):
                seen.append((len(batch["input_ids"]), torch.get_num_threads()))
                return embed(batch)

            encoder.embed = counting
            _retrieve(c, _news(40))
            assert c.post("/encode", json={"name": "r", "input": STATE}).status_code == 200
        assert sorted(seen) == [(1, 1), (1, 1), (40, 2)], seen
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_a_new_premise_is_encoded_without_its_doc_comment(retriever_dir: Path) -> None:
    """The index's premises were encoded from a traced corpus's ``code``, which holds no doc
    comment; a new premise is encoded the same way (and ranks as its bare declaration does)."""
    from lean_dojo_v2.external_api.premise_selection import new_premise_text

    decl = "theorem Bench.doc (n : ℕ) : n + 0 = n"
    documented = f"/-- Adding zero; /- nested -/ comments nest. -/\n{decl}"
    assert new_premise_text(documented) == decl
    assert new_premise_text(f"  {decl}\n") == decl
    assert new_premise_text(f"-- a line comment stays\n{decl}") == f"-- a line comment stays\n{decl}"
    with TestClient(_retriever_app(retriever_dir)) as c:
        model = c.app.state.server.registry.models["r"]
        model.load()
        seen: list[str] = []
        encode = model.retriever.encoder.encode
        model.retriever.encoder.encode = lambda texts, **kw: seen.extend(texts) or encode(texts, **kw)
        bare = _retrieve(c, [{"name": "Bench.doc", "decl": decl}])
        with_doc = _retrieve(c, [{"name": "Bench.doc", "decl": documented}])
    assert decl in seen and documented not in seen
    assert with_doc == bare
