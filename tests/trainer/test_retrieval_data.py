# ruff: noqa: F811  (pytest fixtures imported from test_retrieval_fixtures)
"""Retrieval examples from real traced tactics: one per (goal, positive), hard negatives accessible
at the theorem (in-file and random), never a positive, seeded; batches mask shared positives."""

from __future__ import annotations

import random

import pytest

from .test_retrieval_fixtures import sample_dir  # noqa: F401


@pytest.fixture(scope="module")
def data(sample_dir):  # noqa: F811
    from lean_dojo_v2.data.dataset import DatasetDir
    from lean_dojo_v2.models.retrieval_eval import retrieval_queries

    d = DatasetDir(sample_dir)
    corpus = d.corpus()
    return retrieval_queries(d.theorems("random", "train"), corpus), corpus


def test_one_example_per_query_and_positive(data):
    from lean_dojo_v2.trainer.retrieval_data import build_examples

    queries, corpus = data
    examples = build_examples(queries, corpus)
    assert len(examples) == sum(len(q.positives) for q in queries)
    assert {(e.query, e.positive.full_name) for e in examples} == {
        (q.state, p) for q in queries for p in q.positives
    }
    assert build_examples(queries, corpus, max_examples=5) == examples[:5]


def test_hard_negatives_are_accessible_never_positive_in_file_first_and_seeded(data):
    from lean_dojo_v2.trainer.retrieval_data import NegativeSampler, build_examples

    queries, corpus = data
    examples = build_examples(queries, corpus)
    sampler = NegativeSampler(corpus, num_negatives=3, num_in_file_negatives=1, seed=5)
    saw_in_file = 0
    for i, ex in enumerate(examples):
        negs = sampler.sample(ex, sampler.rng_for(0, i))
        accessible = {p.full_name for p in corpus.accessible_premises(ex.file_path, ex.pos)}
        pool = accessible - ex.positives
        assert len(negs) == min(3, len(pool))
        assert len({p.full_name for p in negs}) == len(negs)
        for p in negs:
            assert p.full_name in accessible and p.full_name not in ex.positives
        in_file_pool = [
            p
            for p in corpus.accessible_premises(ex.file_path, ex.pos)
            if p.path == ex.positive.path and p.full_name not in ex.positives
        ]
        if in_file_pool:
            assert sum(p.path == ex.positive.path for p in negs) >= 1
            saw_in_file += 1
        # Seeded: the same (epoch, example) draws the same negatives.
        assert sampler.sample(ex, sampler.rng_for(0, i)) == negs
    assert saw_in_file > 0  # the real sample has positives with same-file neighbours
    # Another epoch draws other negatives somewhere.
    assert any(
        sampler.sample(ex, sampler.rng_for(1, i)) != sampler.sample(ex, sampler.rng_for(0, i))
        for i, ex in enumerate(examples)
    )


def test_negatives_never_come_from_later_in_the_same_file(data):
    from lean_dojo_v2.trainer.retrieval_data import NegativeSampler, build_examples

    queries, corpus = data
    sampler = NegativeSampler(corpus, num_negatives=50, num_in_file_negatives=10, seed=0)
    for i, ex in enumerate(build_examples(queries, corpus)):
        for p in sampler.sample(ex, random.Random(i)):
            if p.path == ex.file_path:
                assert p.start < ex.pos
            else:
                assert p.path in corpus.imports_of(ex.file_path)


def test_collate_dedupes_candidates_and_masks_other_positives_of_the_goal(data, tmp_path):
    from lean_dojo_v2.models.retrieval import load_encoder, premise_text
    from lean_dojo_v2.trainer.retrieval_data import build_examples, collate

    from .test_retrieval_fixtures import build_tiny_encoder

    queries, corpus = data
    multi = next(q for q in queries if len(q.positives) >= 2)
    examples = [e for e in build_examples(queries, corpus) if e.query == multi.state][:2]
    enc = load_encoder(str(build_tiny_encoder(tmp_path / "enc")), device="cpu", max_length=32)
    other = examples[1].positive
    batch = collate([(examples[0], [other]), (examples[1], [])], enc.tokenize, premise_text)
    # The negative drawn for row 0 is row 1's positive: one candidate, masked for row 0.
    assert batch.candidate_names == [examples[0].positive.full_name, other.full_name]
    assert batch.targets.tolist() == [0, 1]
    assert batch.positive_mask.tolist() == [[True, True], [True, True]]
    assert batch.queries["input_ids"].shape[0] == 2
    assert batch.candidates["input_ids"].shape[0] == 2


def test_epoch_sampler_is_a_seeded_permutation_per_epoch():
    from lean_dojo_v2.trainer.retrieval_data import EpochSampler

    s = EpochSampler(20, seed=3)
    first = list(s)
    assert sorted(i for i, _ in first) == list(range(20)) and {e for _, e in first} == {0}
    assert list(s) == first
    s.set_epoch(1)
    second = list(s)
    assert [i for i, _ in second] != [i for i, _ in first] and {e for _, e in second} == {1}


def test_group_by_length_batches_similar_lengths_and_keeps_every_example_once():
    from lean_dojo_v2.trainer.retrieval_data import EpochSampler

    lengths = [random.Random(i).randint(1, 300) for i in range(200)]
    s = EpochSampler(200, seed=1, lengths=lengths, batch_size=8)
    keys = list(s)
    assert sorted(i for i, _ in keys) == list(range(200))
    batches = [[lengths[i] for i, _ in keys[b : b + 8]] for b in range(0, 200, 8)]
    spread = sum(max(b) - min(b) for b in batches) / len(batches)
    plain = list(EpochSampler(200, seed=1))
    plain_batches = [[lengths[i] for i, _ in plain[b : b + 8]] for b in range(0, 200, 8)]
    plain_spread = sum(max(b) - min(b) for b in plain_batches) / len(plain_batches)
    assert spread < plain_spread / 4
    assert list(s) == keys  # seeded
