"""BM25Retriever (lean_dojo_v2.models.bm25) on the bundled real sample corpus."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import Corpus, Pos, Premise, PremiseFile, sample_dataset_path
from lean_dojo_v2.data.dataset import DatasetDir
from lean_dojo_v2.errors import CorpusError, ModelError
from lean_dojo_v2.models.bm25 import BM25Retriever, lean_tokens

from .retrieval_fixtures import assert_accessible


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")


@pytest.fixture(scope="module")
def bm25(corpus: Corpus) -> BM25Retriever:
    return BM25Retriever(corpus)


def test_lean_tokens_split_identifiers_on_dots_and_underscores() -> None:
    toks = lean_tokens("theorem Nat.add_zero (n : ℕ) : n + 0 = n")
    assert "nat.add_zero" in toks and {"nat", "add", "zero"} <= set(toks)
    assert {"ℕ", "+", "0", "=", ":"} <= set(toks)
    assert lean_tokens("h.1") == ["h.1", "h", "1"]
    assert lean_tokens("") == []


def test_bm25_retrieval_never_returns_later_or_unimported_premises(
    bm25: BM25Retriever, corpus: Corpus
) -> None:
    d = DatasetDir(sample_dataset_path())
    states = [tt.state_before for t in d.all_theorems() for tt in t.traced_tactics]
    points: list[tuple[str, Pos | None]] = []
    for f in corpus.files:
        points.append((f.path, None))
        points += [(f.path, p.start) for p in f.premises]
    queries = [states[i % len(states)] for i in range(len(points))]
    checked = 0
    for (path, pos), hits in zip(points, bm25.retrieve(queries, 10, points), strict=False):
        checked += assert_accessible(corpus, path, pos, hits)
        assert len(hits) == min(10, len(corpus.accessible_premises(path, pos)))
    assert checked > 300
    # With a large k: exactly the accessible set.
    for (path, pos), hits in zip(points, bm25.retrieve(queries, 10_000, points), strict=False):
        assert {(p.path, p.full_name) for p, _ in hits} == {
            (p.path, p.full_name) for p in corpus.accessible_premises(path, pos)
        }


def test_bm25_ranks_the_lexical_match_first(bm25: BM25Retriever, corpus: Corpus) -> None:
    for name in ("Fin.ext_iff", "List.map_id", "Subtype.eq"):
        hits = bm25.retrieve([f"⊢ {name} something"], 3)[0]
        assert hits[0][0].full_name == name
        assert hits[0][1] > hits[1][1]


def test_bm25_empty_accessible_set_and_unknown_file(bm25: BM25Retriever, corpus: Corpus) -> None:
    lonely = next(f for f in corpus.files if not f.imports and f.premises)
    assert bm25.retrieve(["⊢ True"], 5, [(lonely.path, Pos(1, 1))]) == [[]]
    with pytest.raises(CorpusError, match="Nope.lean"):
        bm25.retrieve(["⊢ True"], 5, [("Nope.lean", None)])
    with pytest.raises(ModelError):
        bm25.retrieve(["⊢ True"], 0)


def test_bm25_uses_premise_code_when_present() -> None:
    files = [
        PremiseFile(
            "A.lean",
            [],
            [
                Premise("A.lean", "foo", "theorem foo : 2 ∣ 4", Pos(1, 1), Pos(1, 9), "theorem"),
                Premise("A.lean", "bar", "", Pos(3, 1), Pos(3, 9), "theorem"),
            ],
        )
    ]
    hits = BM25Retriever(Corpus(files)).retrieve(["⊢ 2 ∣ 4"], 2)[0]
    assert hits[0][0].full_name == "foo"
