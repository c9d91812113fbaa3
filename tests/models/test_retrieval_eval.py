"""Retrieval evaluation (lean_dojo_v2.models.retrieval_eval): metrics on a hand-computed ranking,
queries from the bundled real traced tactics, the evaluation loop."""

from __future__ import annotations

import dataclasses

import pytest

from lean_dojo_v2.data import Corpus, sample_dataset_path
from lean_dojo_v2.data.dataset import DatasetDir
from lean_dojo_v2.errors import CorpusError, ModelError
from lean_dojo_v2.models.bm25 import BM25Retriever
from lean_dojo_v2.models.retrieval import Retriever
from lean_dojo_v2.models.retrieval_eval import (
    QueryStats,
    RetrievalQuery,
    evaluate_retriever,
    ranking_metrics,
    retrieval_queries,
)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")


@pytest.fixture(scope="module")
def theorems():
    return list(DatasetDir(sample_dataset_path()).all_theorems())


def test_metrics_on_a_hand_computed_ranking() -> None:
    rankings = [
        ["a", "b", "c", "d"],  # positives {a, c}: R@1 1/2, R@3 1, full@1 0, full@3 1, RR 1
        ["x", "y", "b", "z"],  # positives {b}:    R@1 0,   R@3 1, full@1 0, full@3 1, RR 1/3
        ["p", "q", "r", "s"],  # positives {t, p}: R@1 1/2, R@3 1/2, full 0, 0,        RR 1
        ["m", "n", "o", "w"],  # positives {w}:    R@1 0,   R@3 0, full 0, 0,          RR 1/4
        ["e", "f", "g", "h"],  # positives {zz}:   nothing found,                      RR 0
    ]
    positives = [{"a", "c"}, {"b"}, ["t", "p"], ("w",), {"zz"}]
    m = ranking_metrics(rankings, positives, ks=(1, 3))
    assert m["n"] == 5
    assert m["R@1"] == pytest.approx((0.5 + 0 + 0.5 + 0 + 0) / 5)
    assert m["R@3"] == pytest.approx((1 + 1 + 0.5 + 0 + 0) / 5)
    assert m["FullRecall@1"] == pytest.approx(0.0)
    assert m["FullRecall@3"] == pytest.approx(2 / 5)
    assert m["MRR"] == pytest.approx((1 + 1 / 3 + 1 + 1 / 4 + 0) / 5)
    assert set(m) == {"R@1", "R@3", "FullRecall@1", "FullRecall@3", "MRR", "n"}


def test_metrics_edge_cases() -> None:
    assert ranking_metrics([], [], ks=(1, 10)) == {
        "R@1": 0.0,
        "R@10": 0.0,
        "FullRecall@1": 0.0,
        "FullRecall@10": 0.0,
        "MRR": 0.0,
        "n": 0,
    }
    perfect = ranking_metrics([["a", "b"]], [{"a", "b"}], ks=(1, 10))
    assert perfect["R@10"] == perfect["FullRecall@10"] == perfect["MRR"] == 1.0
    with pytest.raises(ModelError, match="no positives"):
        ranking_metrics([["a"]], [set()])
    with pytest.raises(ModelError, match="ks"):
        ranking_metrics([["a"]], [{"a"}], ks=(0,))
    with pytest.raises(ModelError):
        ranking_metrics([["a"]], [{"a"}, {"b"}])


def test_queries_are_tactics_with_corpus_premises(corpus: Corpus, theorems) -> None:
    stats = QueryStats()
    queries = retrieval_queries(theorems, corpus, stats=stats)
    with_premises = [
        (t, i, tt) for t in theorems for i, tt in enumerate(t.traced_tactics) if tt.annotations
    ]
    assert stats.tactics == sum(len(t.traced_tactics) for t in theorems) == 158
    assert len(queries) == len(with_premises) > 0
    assert stats.unresolved_premise_uses == 0
    by_key = {(t.full_name, i): (t, tt) for t, i, tt in with_premises}
    for q in queries:
        t, tt = by_key[(q.theorem, q.tactic_idx)]
        assert q.state == tt.state_before and q.file_path == t.file_path and q.pos == t.start
        assert list(q.positives) == tt.premises
        assert all(corpus.get_premise(name) is not None for name in q.positives)


def test_unresolved_premises_are_dropped_or_raise_when_strict(corpus: Corpus, theorems) -> None:
    thm = next(t for t in theorems if any(tt.annotations for tt in t.traced_tactics))
    i = next(i for i, tt in enumerate(thm.traced_tactics) if tt.annotations)
    tac = thm.traced_tactics[i]
    ghost = dataclasses.replace(
        tac.annotations[0], full_name="Ghost.premise", def_path="Ghost.lean"
    )
    bad_tac = dataclasses.replace(tac, annotations=[ghost])
    bad = dataclasses.replace(thm, traced_tactics=[bad_tac])
    stats = QueryStats()
    assert retrieval_queries([bad], corpus, stats=stats) == []
    assert stats.unresolved_premise_uses == 1 and "Ghost.premise" in stats.first_unresolved
    with pytest.raises(CorpusError, match=rf"{thm.file_path}:{thm.start.line_nb}.*Ghost\.premise"):
        retrieval_queries([bad], corpus, strict=True)
    elsewhere = dataclasses.replace(thm, file_path="Mathlib/Elsewhere.lean")
    with pytest.raises(CorpusError, match="Mathlib/Elsewhere.lean"):
        retrieval_queries([elsewhere], corpus)


class _Oracle(Retriever):
    """Puts each query's positives first (a retriever that knows the answers)."""

    def __init__(self, corpus: Corpus, queries: list[RetrievalQuery]) -> None:
        self.corpus = corpus
        self.answers = {q.state: q.positives for q in queries}

    def retrieve(self, states, k, accessible=None):
        out = []
        for s in states:
            first = [self.corpus.get_premise(n) for n in self.answers[s]]
            rest = [p for p in self.corpus.premises if p.full_name not in self.answers[s]]
            out.append([(p, 1.0) for p in (first + rest)[:k]])
        return out


def test_evaluate_retriever_scores_an_oracle_perfectly_and_bm25_in_range(
    corpus: Corpus, theorems
) -> None:
    queries = retrieval_queries(theorems, corpus)
    # Several tactics can share a state; the oracle needs one answer per state.
    unique = list({q.state: q for q in queries}.values())
    m = evaluate_retriever(_Oracle(corpus, unique), unique, ks=(1, 10), batch_size=7)
    assert m["n"] == len(unique)
    assert m["R@10"] == m["FullRecall@10"] == m["MRR"] == 1.0
    bm = evaluate_retriever(BM25Retriever(corpus), queries, ks=(1, 10))
    assert bm["n"] == len(queries)
    assert 0.0 <= bm["R@1"] <= bm["R@10"] <= 1.0 and 0.0 < bm["MRR"] <= 1.0
