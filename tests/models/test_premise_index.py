"""PremiseIndex, DenseRetriever and the retriever export (lean_dojo_v2.models.premise_index) on the
bundled real sample corpus, with a tiny random BERT encoder."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from lean_dojo_v2.data import Corpus, Pos, sample_dataset_path
from lean_dojo_v2.data.dataset import DatasetDir
from lean_dojo_v2.errors import CorpusError, DataFormatError, ModelError, ModelNotFoundError
from lean_dojo_v2.models.premise_index import (
    DenseRetriever,
    PremiseIndex,
    export_retriever,
    load_retriever,
)
from lean_dojo_v2.models.retrieval import PremiseEncoder, load_encoder

from .retrieval_fixtures import assert_accessible, build_tiny_bert


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> PremiseEncoder:
    return load_encoder(build_tiny_bert(tmp_path_factory.mktemp("bert")), device="cpu")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")


@pytest.fixture(scope="module")
def index(corpus: Corpus, encoder: PremiseEncoder) -> PremiseIndex:
    return PremiseIndex.build(corpus, encoder, show_progress=False)


def _names(premises) -> set[tuple[str, str]]:
    return {(p.path, p.full_name) for p in premises}


def _query_points(corpus: Corpus) -> list[tuple[str, Pos | None]]:
    """Many (file, position) pairs: before, at and after each premise of each file, and None."""
    points: list[tuple[str, Pos | None]] = []
    for f in corpus.files:
        points.append((f.path, None))
        points.append((f.path, Pos(1, 1)))
        for p in f.premises:
            points += [(f.path, p.start), (f.path, Pos(p.start.line_nb, p.start.column_nb + 1))]
    return points


def _theorem_points() -> list[tuple[str, str, Pos]]:
    d = DatasetDir(sample_dataset_path())
    return [
        (tt.state_before, t.file_path, t.start) for t in d.all_theorems() for tt in t.traced_tactics
    ]


def test_mask_equals_corpus_accessible_premises_everywhere(
    index: PremiseIndex, corpus: Corpus
) -> None:
    points = _query_points(corpus)
    assert len(points) > 400
    for path, pos in points:
        got = _names(p for p, ok in zip(index.premises, index.mask(path, pos), strict=False) if ok)
        assert got == _names(corpus.accessible_premises(path, pos)), (path, pos)


def test_dense_retrieval_never_returns_later_or_unimported_premises(
    index: PremiseIndex, corpus: Corpus, encoder: PremiseEncoder
) -> None:
    retriever = DenseRetriever(encoder, index)
    points = _query_points(corpus)
    states = [s for s, _, _ in _theorem_points()]
    queries = [(states[i % len(states)], path, pos) for i, (path, pos) in enumerate(points)]
    results = retriever.retrieve(
        [q[0] for q in queries], 10, [(path, pos) for _, path, pos in queries]
    )
    checked = 0
    for (_, path, pos), hits in zip(queries, results, strict=False):
        checked += assert_accessible(corpus, path, pos, hits)
        n_accessible = len(corpus.accessible_premises(path, pos))
        assert len(hits) == min(10, n_accessible)
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)
    assert checked > 1000


def test_retrieval_with_large_k_returns_exactly_the_accessible_set(
    index: PremiseIndex, corpus: Corpus, encoder: PremiseEncoder
) -> None:
    retriever = DenseRetriever(encoder, index)
    points = _theorem_points()
    results = retriever.retrieve(
        [s for s, _, _ in points], 10_000, [(path, pos) for _, path, pos in points]
    )
    for (_, path, pos), hits in zip(points, results, strict=False):
        assert _names(p for p, _ in hits) == _names(corpus.accessible_premises(path, pos))


def test_search_is_exact_top_k(index: PremiseIndex) -> None:
    rng = np.random.default_rng(0)
    queries = rng.normal(size=(7, index.dim)).astype(np.float32)
    masks = [None] + [rng.random(len(index)) < 0.3 for _ in range(6)]
    for q, m, hits in zip(queries, masks, index.search(queries, 5, masks), strict=False):
        scores = index.embeddings @ q  # inner product (cosine for normalised queries)
        allowed = np.flatnonzero(np.ones(len(index), bool) if m is None else m)
        best = allowed[np.argsort(-scores[allowed])[:5]]
        assert [r for r, _ in hits] == best.tolist()
        np.testing.assert_allclose([s for _, s in hits], scores[best], rtol=1e-5)


def test_fewer_accessible_than_k_and_empty_accessible_set(
    index: PremiseIndex, corpus: Corpus, encoder: PremiseEncoder
) -> None:
    retriever = DenseRetriever(encoder, index)
    # A file without imports, before its first premise: nothing is accessible.
    lonely = next(f for f in corpus.files if not f.imports and f.premises)
    assert retriever.retrieve(["⊢ True"], 5, [(lonely.path, Pos(1, 1))]) == [[]]
    # After its last premise: just its own premises, fewer than k.
    hits = retriever.retrieve(["⊢ True"], 50, [(lonely.path, None)])[0]
    assert _names(p for p, _ in hits) == _names(lonely.premises)


def test_file_not_in_corpus_raises_corpus_error_naming_it(
    index: PremiseIndex, encoder: PremiseEncoder
) -> None:
    with pytest.raises(CorpusError, match="Mathlib/NoSuchFile.lean"):
        index.mask("Mathlib/NoSuchFile.lean", Pos(1, 1))
    with pytest.raises(CorpusError, match="Mathlib/NoSuchFile.lean"):
        DenseRetriever(encoder, index).retrieve(["⊢ True"], 3, [("Mathlib/NoSuchFile.lean", None)])


def test_bad_retrieve_arguments_raise_model_errors(
    index: PremiseIndex, encoder: PremiseEncoder
) -> None:
    retriever = DenseRetriever(encoder, index)
    with pytest.raises(ModelError, match="k must be"):
        retriever.retrieve(["⊢ True"], 0)
    with pytest.raises(ModelError, match="entries for"):
        retriever.retrieve(["⊢ True", "⊢ False"], 3, [None])
    with pytest.raises(ModelError, match="shape"):
        index.search(np.zeros((1, index.dim + 1), np.float32), 3)


def test_unmasked_retrieval_ranks_all_premises(
    index: PremiseIndex, encoder: PremiseEncoder
) -> None:
    hits = DenseRetriever(encoder, index).retrieve(["⊢ True"], 10_000)[0]
    assert len(hits) == len(index) == 185


def test_incremental_add_encodes_only_new_premises(
    corpus: Corpus, encoder: PremiseEncoder, index: PremiseIndex
) -> None:
    # The first "repository": the files that import nothing (closed under imports).
    base = Corpus([f for f in corpus.files if not f.imports])
    small = PremiseIndex.build(base, encoder, show_progress=False)
    calls = encoder.encode_calls
    added = small.add_corpus(corpus, encoder)
    assert added == len(corpus) - len(base) > 0
    assert encoder.encode_calls - calls == added  # the old premises were not re-encoded
    assert len(small) == len(corpus)
    # Same rows as a fresh build, same embeddings per premise.
    fresh = {
        (p.path, p.full_name): e for p, e in zip(index.premises, index.embeddings, strict=False)
    }
    for p, e in zip(small.premises, small.embeddings, strict=False):
        np.testing.assert_allclose(e, fresh[(p.path, p.full_name)], atol=1e-5)
    # Adding the same corpus again encodes nothing; masks follow the merged corpus.
    assert small.add_corpus(corpus, encoder) == 0
    assert encoder.encode_calls - calls == added
    path = next(f.path for f in corpus.files if f.imports)
    assert _names(
        p for p, ok in zip(small.premises, small.mask(path, None), strict=False) if ok
    ) == _names(corpus.accessible_premises(path, None))


def test_index_save_load_round_trip(index: PremiseIndex, tmp_path: Path) -> None:
    saved = index.save(tmp_path / "idx")
    assert {p.name for p in saved.iterdir()} >= {"embeddings.npy", "index.json", "corpus.jsonl"}
    again = PremiseIndex.load(saved)
    assert again.premises == index.premises
    np.testing.assert_array_equal(again.embeddings, index.embeddings)
    path, pos = next((f.path, None) for f in index.corpus.files if f.imports)
    np.testing.assert_array_equal(again.mask(path, pos), index.mask(path, pos))
    q = index.embeddings[:3]
    assert again.search(q, 4) == index.search(q, 4)


def test_index_load_rejects_missing_and_inconsistent_files(
    index: PremiseIndex, tmp_path: Path
) -> None:
    with pytest.raises(ModelNotFoundError, match="index.json"):
        PremiseIndex.load(tmp_path)
    saved = index.save(tmp_path / "idx")
    meta = json.loads((saved / "index.json").read_text())
    meta["rows"][3][1] = "Not.a.premise"
    (saved / "index.json").write_text(json.dumps(meta))
    with pytest.raises(
        DataFormatError, match=r"Not\.a\.premise.*rows\[3\]|rows\[3\].*Not\.a\.premise"
    ):
        PremiseIndex.load(saved)


def test_export_and_load_retriever_round_trip(
    index: PremiseIndex, encoder: PremiseEncoder, tmp_path: Path
) -> None:
    out = export_retriever(tmp_path / "retriever", encoder, index)
    manifest = json.loads((out / "retriever.json").read_text())
    assert manifest["num_premises"] == 185 and manifest["dim"] == encoder.dim
    assert (out / "model" / "config.json").is_file() and (
        out / "index" / "embeddings.npy"
    ).is_file()
    loaded = load_retriever(out, device="cpu")
    points = _theorem_points()[:20]
    states = [s for s, _, _ in points]
    acc = [(path, pos) for _, path, pos in points]
    want = DenseRetriever(encoder, index).retrieve(states, 5, acc)
    got = loaded.retrieve(states, 5, acc)
    assert [[p.full_name for p, _ in row] for row in got] == [
        [p.full_name for p, _ in row] for row in want
    ]
    with pytest.raises(ModelNotFoundError, match="retriever.json"):
        load_retriever(tmp_path, device="cpu")


def test_faiss_backend_gives_the_numpy_results_under_masks(
    index: PremiseIndex, corpus: Corpus
) -> None:
    faiss_index = PremiseIndex(corpus, index.premises, index.embeddings, backend="faiss")
    rng = np.random.default_rng(1)
    queries = rng.normal(size=(40, index.dim)).astype(np.float32)
    points = _query_points(corpus)[:40]
    masks = [index.mask(path, pos) for path, pos in points]
    if importlib.util.find_spec("faiss") is None:
        with pytest.raises(ModelError, match="faiss"):
            faiss_index.search(queries, 10, masks)
        return
    want = index.search(queries, 10, masks)
    got = faiss_index.search(queries, 10, masks)
    assert [[r for r, _ in row] for row in got] == [[r for r, _ in row] for row in want]


def test_files_mask_is_the_union_of_whole_file_masks(index: PremiseIndex, corpus: Corpus) -> None:
    paths = [f.path for f in corpus.files if f.imports][:3] or [corpus.files[0].path]
    want = np.zeros(len(index), dtype=bool)
    for path in paths:
        want |= index.mask(path, None)
    np.testing.assert_array_equal(index.files_mask(paths), want)
    own = index.files_mask(paths, with_imports=False)
    assert {index.premises[r].path for r in np.flatnonzero(own)} <= set(paths)
    assert own.sum() == sum(len(corpus.get_file(p).premises) for p in paths)
    with pytest.raises(CorpusError, match="No/Such.lean"):
        index.files_mask(["No/Such.lean"])


def test_rows_named_finds_each_premise_by_name(index: PremiseIndex) -> None:
    for row in (0, 7, len(index) - 1):
        assert row in index.rows_named(index.premises[row].full_name)
    assert index.rows_named("No.such.premise") == []
