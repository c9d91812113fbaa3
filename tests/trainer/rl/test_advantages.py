"""Our advantage estimators against numbers derived by hand from their equations (the
derivations are in the comments; TRL's own advantages are checked through the trainer in
``test_trl_trainer.py``)."""

from __future__ import annotations

import math

import pytest
import torch

from lean_dojo_v2.trainer.rl.advantages import (
    EPS,
    dgpo_advantages,
    flat_group_mask,
    rank_advantages,
    winsorized_advantages,
)

NAN = float("nan")


def close(actual: torch.Tensor, expected: list[float], tol: float = 1e-5) -> None:
    assert actual.tolist() == pytest.approx(expected, abs=tol)


def test_dgpo_mad_and_question_weights() -> None:
    # q1 = [1, 0, 0, 0]: mean 0.25, MAD = (0.75 + 3 * 0.25) / 4 = 0.375,
    #   Â = [0.75, -0.25, -0.25, -0.25] / (0.375 + 1e-4) = [1.99947, -0.66649, ...]
    # q2 = [1, 1, 0, 1]: mean 0.75, MAD 0.375, Â = [0.25, 0.25, -0.75, 0.25] / 0.3751
    # w = 2 * softmax([-0.25, -0.75]) (T = 1):
    #   w1 = 2 e^-0.25 / (e^-0.25 + e^-0.75) = 2 * 0.778801 / 1.251168 = 1.244919
    #   w2 = 2 * 0.472367 / 1.251168 = 0.755081          (the harder q1 weighs more)
    # A = w * Â: q1 → [2.489174, -0.829725, -0.829725, -0.829725]
    #            q2 → [0.503253, 0.503253, -1.509760, 0.503253]
    rewards = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 1])
    close(
        dgpo_advantages(rewards, 4, temperature=1.0),
        [2.489174, -0.829725, -0.829725, -0.829725, 0.503253, 0.503253, -1.509760, 0.503253],
    )


def test_dgpo_balances_difficulty_and_temperature() -> None:
    # Σ|Â| = G for any non-flat group (the MAD makes the update size difficulty-free): with a
    # huge T all weights are 1, so each group's |A| sums to 4 (up to eps).
    rewards = torch.tensor([1.0, 0, 0, 0, 5, 3, 4, 9])
    adv = dgpo_advantages(rewards, 4, temperature=1e9).view(2, 4)
    close(adv.abs().sum(dim=1), [4.0, 4.0], tol=2e-3)
    # A flat group gets 0 (and still takes part in the weights: B = 2 questions).
    flat = dgpo_advantages(torch.tensor([1.0, 1, 1, 1, 1, 0, 0, 0]), 4)
    close(flat[:4], [0, 0, 0, 0])
    # q2 mean 0.25 vs q1 mean 1: w2 = 2 e^-0.25 / (e^-1 + e^-0.25) = 1.358149; MAD 0.375
    w2 = 2 * math.exp(-0.25) / (math.exp(-1) + math.exp(-0.25))
    close(flat[4:], [w2 * 0.75 / (0.375 + EPS)] + [w2 * -0.25 / (0.375 + EPS)] * 3)


def test_dgpo_ignores_unscorable_completions() -> None:
    # [1, NaN, 0, 0]: stats over [1, 0, 0]: mean 1/3, MAD = (2/3 + 1/3 + 1/3) / 3 = 4/9;
    # one question, so w = 1: A = [(2/3) / (4/9 + eps), 0, (-1/3) / (4/9 + eps), ...]
    adv = dgpo_advantages(torch.tensor([1.0, NAN, 0, 0]), 4)
    mad = 4 / 9 + EPS
    close(adv, [(2 / 3) / mad, 0.0, (-1 / 3) / mad, (-1 / 3) / mad])


def test_winsorized() -> None:
    # [0, 1, 2, 3, 100], q = 0.25: torch.quantile (linear) at positions 4q = 1 and 3 → [1, 3];
    # clipped [1, 1, 2, 3, 3], mean 2, unbiased var (1+1+0+1+1)/4 = 1 → A = (r' - 2) / (1 + 1e-4)
    adv = winsorized_advantages(torch.tensor([0.0, 1, 2, 3, 100]), 5, quantile=0.25)
    s = 1 / (1 + EPS)
    close(adv, [-s, -s, 0.0, s, s])
    # q = 0 is plain group standardisation: [0, 1, 2, 3] → (r - 1.5) / (sqrt(5/3) + 1e-4)
    plain = winsorized_advantages(torch.tensor([0.0, 1, 2, 3]), 4, quantile=0.0)
    d = math.sqrt(5 / 3) + EPS
    close(plain, [-1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d])
    # One outlier no longer squashes the rest: without winsorising, 100 makes the others ≈ -0.5
    assert plain.tolist() != adv.tolist()


def test_rank() -> None:
    # [0.5, 2, 0.5, -1]: ranks -1→1, 0.5→2.5 (tied 2 and 3), 2→4; centred by (4+1)/2 = 2.5 →
    # [0, 1.5, 0, -1.5]; scaled by (4-1)/2 = 1.5 → [0, 1, 0, -1].  A flat group → zeros.
    adv = rank_advantages(torch.tensor([0.5, 2, 0.5, -1, 3, 3, 3, 3]), 4)
    close(adv, [0, 1, 0, -1, 0, 0, 0, 0])
    # Only the order matters: [10, 20, 30] and [0, 1, 1000] both give [-1, 0, 1].
    close(rank_advantages(torch.tensor([10.0, 20, 30, 0, 1, 1000]), 3), [-1, 0, 1, -1, 0, 1])
    # NaN: ranked among the 2 scorable ones → [-1, 1], the NaN gets 0.
    close(rank_advantages(torch.tensor([1.0, NAN, 5]), 3), [-1, 0, 1])


def test_flat_group_mask() -> None:
    rewards = torch.tensor([1.0, 1, 0, 1, 0.5, 0.5, NAN, NAN])
    assert flat_group_mask(rewards, 2).tolist() == [True, False, True, True]
    # Per reward function: the sum is flat in group 0 ([1, 0] + [0, 1]) but no function is.
    per_func = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [2.0, 3.0]])
    assert flat_group_mask(per_func, 2).tolist() == [False, True]


def test_bad_shapes() -> None:
    with pytest.raises(ValueError, match="num_generations=4"):
        dgpo_advantages(torch.zeros(6), 4)
    with pytest.raises(ValueError, match="temperature"):
        dgpo_advantages(torch.zeros(4), 4, temperature=0)
    with pytest.raises(ValueError, match="quantile"):
        winsorized_advantages(torch.zeros(4), 4, quantile=0.5)
