"""pass@k: the unbiased estimator against values computed by hand, and the plain counts."""

from __future__ import annotations

import math

import pytest

from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.evaluation.passk import (
    ProblemSamples,
    pass_at_k,
    pass_at_table,
    solved_within,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # 1 - C(3,1)/C(5,1) = 1 - 3/5
        (5, 2, 1, 0.4),
        # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 2, 2, 0.7),
        # 1 - C(3,3)/C(5,3) = 1 - 1/10
        (5, 2, 3, 0.9),
        # n - c < k: every 4-subset of 5 holds one of the 2 correct samples
        (5, 2, 4, 1.0),
        # 1 - C(9,5)/C(10,5) = 1 - 126/252
        (10, 1, 5, 0.5),
        # 1 - C(30,8)/C(32,8) = 1 - (24*23)/(32*31)
        (32, 2, 8, 1 - (24 * 23) / (32 * 31)),
        (8, 0, 8, 0.0),
        (8, 8, 1, 1.0),
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_matches_hand_computed_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_equals_the_binomial_formula_and_stays_finite_for_large_n() -> None:
    for n, c, k in [(20, 3, 7), (64, 10, 32), (100, 1, 1)]:
        exact = 1 - math.comb(n - c, k) / math.comb(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)
    assert 0.0 < pass_at_k(5000, 3, 100) < 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(4, 1, 5), (4, 1, 0), (4, 5, 1), (-1, 0, 1)])
def test_pass_at_k_refuses_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ConfigError):
        pass_at_k(n, c, k)


def test_pass_at_table_averages_over_problems_and_counts_missing_samples_as_wrong() -> None:
    problems = [
        ProblemSamples("a", frozenset({0, 3})),  # 2 of 4
        ProblemSamples("b", frozenset()),  # none
        ProblemSamples("c", frozenset({1})),  # 1 of 4 (its other samples never came)
    ]
    table = pass_at_table(problems, 4)
    assert list(table) == ["1", "2", "3", "4"]
    # a: 1 - C(2,1)/C(4,1) = 0.5; c: 1 - C(3,1)/C(4,1) = 0.25
    assert table["1"] == pytest.approx((0.5 + 0 + 0.25) / 3)
    # a: 1 - C(2,2)/C(4,2) = 5/6; c: 1 - C(3,2)/C(4,2) = 0.5
    assert table["2"] == pytest.approx((5 / 6 + 0.5) / 3)
    assert table["4"] == pytest.approx(2 / 3)
    assert pass_at_table([], 2) == {"1": 0.0, "2": 0.0}


def test_solved_within_counts_problems_with_an_accepted_sample_among_the_first_k() -> None:
    problems = [
        ProblemSamples("a", frozenset({0, 3})),
        ProblemSamples("b", frozenset()),
        ProblemSamples("c", frozenset({2})),
    ]
    assert solved_within(problems, [1, 2, 3, 4]) == {"1": 1, "2": 1, "3": 2, "4": 2}
