"""LeanAgent's difficulty curriculum, checked against a direct NumPy implementation of the rule."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lean_dojo_v2.database import CATEGORIES, DynamicDatabase, Thresholds, theorem_difficulty
from lean_dojo_v2.database.difficulty import categorize_steps, log_percentile

from .conftest import replicate


def oracle(repos: list[list[tuple[int, bool]]]) -> tuple[list[dict[str, int]], list[int]]:
    """The rule written out with NumPy on e**steps: per-repository counts and the order."""
    finite = [math.exp(s) for repo in repos for s, sorry in repo if not sorry and s > 0]
    p33, p67 = np.percentile(finite, [33, 67]) if finite else (None, None)
    counts = []
    for repo in repos:
        c = dict.fromkeys(CATEGORIES, 0)
        todo = 0
        for steps, sorry in repo:
            if sorry:
                c["hard_no_proof"] += 1
            elif steps == 0:
                todo += 1
            elif math.exp(steps) <= p33:
                c["easy"] += 1
            elif math.exp(steps) <= p67:
                c["medium"] += 1
            else:
                c["hard"] += 1
        chunk = todo // 3
        c["easy"] += chunk
        c["medium"] += chunk
        c["hard"] += todo - 2 * chunk
        counts.append(c)
    order = sorted(range(len(repos)), key=lambda i: counts[i]["easy"], reverse=True)
    return counts, order


def test_log_percentile_matches_numpy() -> None:
    rng = random.Random(7)
    for _ in range(200):
        hist = {rng.randint(1, 30): rng.randint(1, 20) for _ in range(rng.randint(1, 8))}
        values = [math.exp(s) for s, c in hist.items() for _ in range(c)]
        for q in (0, 33, 50, 67, 100):
            assert math.exp(log_percentile(hist, q)) == pytest.approx(
                np.percentile(values, q), rel=1e-9
            )


def test_huge_proofs_do_not_overflow() -> None:
    th = Thresholds.from_histogram({1: 5, 800: 5, 5000: 1})
    assert th.max_easy_steps == 1
    assert categorize_steps(800, th) in ("medium", "hard")
    assert categorize_steps(5000, th) == "hard"
    assert theorem_difficulty(5000) == math.inf
    assert theorem_difficulty(0) is None and theorem_difficulty(3, unproved_sorry=True) == math.inf
    assert theorem_difficulty(2) == pytest.approx(math.e**2)
    assert Thresholds.from_histogram({}).percentiles is None


def _with_sorry(r: dict) -> dict:
    tac = dict(r["traced_tactics"][0], tactic="sorry", annotated_tactic=["sorry", []])
    return dict(r, traced_tactics=[tac])


def test_curriculum_order_on_replicated_repositories(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    short = [r for r in records if 1 <= len(r["traced_tactics"]) <= 2]
    long = [r for r in records if len(r["traced_tactics"]) >= 4]
    term = [r for r in records if not r["traced_tactics"]]
    repos = {
        "https://x/long": replicate(long, "https://x/long", "1" * 40, copies=3)
        + replicate(term[:4], "https://x/long", "1" * 40, tag="t"),
        "https://x/mixed": replicate(records, "https://x/mixed", "1" * 40),
        "https://x/short": replicate(short, "https://x/short", "1" * 40, copies=2),
        "https://x/sorry": [
            _with_sorry(r) for r in replicate(short + long, "https://x/sorry", "1" * 40)
        ],
        "https://x/term": replicate(term, "https://x/term", "1" * 40),
    }
    infos = [db.add_repository(make_dataset(recs)) for recs in repos.values()]
    shape = [
        [
            (
                len(r["traced_tactics"]),
                r["traced_tactics"][:1] != [] and r["traced_tactics"][0]["tactic"] == "sorry",
            )
            for r in recs
        ]
        for recs in repos.values()
    ]
    counts, order = oracle(shape)
    cur = db.curriculum()
    assert [r.url for r in cur.repositories] == [infos[i].url for i in order]
    for r in cur.repositories:
        i = next(k for k, info in enumerate(infos) if info.id == r.repository_id)
        assert r.counts == counts[i], r.url
    ordered = db.sort_repositories_by_difficulty()
    assert [r.url for r in ordered] == [infos[i].url for i in order]
    # The crafted shape gives the expected story: short proofs first, only-sorry last.
    assert ordered[0].url == "https://x/short" and ordered[-1].url == "https://x/sorry"
    # theorems(difficulty=...) agrees with the counts and partitions every repository.
    for info, c in zip(infos, counts, strict=True):
        for cat in CATEGORIES:
            assert db.count_theorems(info, difficulty=cat) == c[cat], (info.url, cat)
        assert (
            sum(db.count_theorems(info, difficulty=cat) for cat in CATEGORIES)
            == info.total_theorems
        )
    th = cur.thresholds
    for t in db.theorems(difficulty="easy"):
        assert t.num_tactics == 0 or t.num_tactics <= th.max_easy_steps


def test_curriculum_with_only_sorry_and_term_mode(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    term = [r for r in records if not r["traced_tactics"]]
    proofs = [r for r in records if r["traced_tactics"]]
    a = db.add_repository(
        make_dataset([_with_sorry(r) for r in replicate(proofs, "https://x/a", "1" * 40)])
    )
    b = db.add_repository(make_dataset(replicate(term, "https://x/b", "1" * 40)))
    cur = db.curriculum()
    assert cur.thresholds.percentiles is None
    assert cur.to_dict()["percentiles"] is None
    assert [r.url for r in cur.repositories] == ["https://x/b", "https://x/a"]
    n = len(term)
    assert cur.repositories[0].counts == {
        "easy": n // 3,
        "medium": n // 3,
        "hard": n - 2 * (n // 3),
        "hard_no_proof": 0,
    }
    assert cur.repositories[1].counts["hard_no_proof"] == len(proofs)
    assert db.count_theorems(b, difficulty="easy") == n // 3
    assert db.count_theorems(a, difficulty="easy") == 0
    assert [r.id for r in db.sort_repositories_by_difficulty()] == [b.id, a.id]


def test_empty_database_curriculum(db: DynamicDatabase) -> None:
    cur = db.curriculum()
    assert cur.repositories == [] and db.sort_repositories_by_difficulty() == []
    assert db.count_theorems(difficulty="easy") == 0
    with pytest.raises(ValueError):
        db.count_theorems(difficulty="trivial")


def test_thresholds_are_global(db: DynamicDatabase, records: list[dict], make_dataset) -> None:
    short = [r for r in records if len(r["traced_tactics"]) == 1]
    long = [r for r in records if len(r["traced_tactics"]) >= 3]
    a = db.add_repository(make_dataset(replicate(short + long, "https://x/a", "1" * 40)))
    before = db.count_theorems(a, difficulty="easy")
    db.add_repository(make_dataset(replicate(long, "https://x/b", "1" * 40, copies=5)))
    # Many long proofs elsewhere raise the thresholds: more of a's theorems become easy.
    assert db.count_theorems(a, difficulty="easy") >= before
    assert db.curriculum([a]).thresholds == db.thresholds(a)
