"""Advantage estimators that TRL lacks, as pure functions on tensors (no TRL import).

Every function takes ``rewards`` of shape ``(N,)`` laid out as TRL lays out a generation batch:
``N = Q * G`` completions, the ``G = num_generations`` completions of each question consecutive.
A NaN reward marks a completion no reward function could score (TRL's convention); it is left out
of its group's statistics and gets advantage 0.

- :func:`dgpo_advantages` — difficulty-aware GPO (DGPO): MAD-normalised group advantage times a
  question weight that favours hard questions.
- :func:`winsorized_advantages` — rewards clipped at the group's ``q`` / ``1 - q`` quantiles, then
  standardised.
- :func:`rank_advantages` — centred ranks in the group, scaled to ``[-1, 1]``.
- :func:`flat_group_mask` — which groups carry no signal (all rewards equal): DAPO's dynamic
  sampling drops them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# The same epsilon TRL adds to the group std: a near-flat group gets a large but finite advantage.
EPS = 1e-4


def _grouped(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    if rewards.dim() != 1 or rewards.numel() % num_generations != 0:
        raise ValueError(
            f"rewards must be 1-D with a multiple of num_generations={num_generations} entries; "
            f"got shape {tuple(rewards.shape)}"
        )
    return rewards.view(-1, num_generations)


def dgpo_advantages(
    rewards: torch.Tensor, num_generations: int, temperature: float = 1.0, eps: float = EPS
) -> torch.Tensor:
    """DGPO's advantage for each completion.

    For question ``q`` with rewards ``r_q1 … r_qG`` (mean ``μ_q``) among the ``B`` questions of the
    batch::

        MAD_q = (1/G) Σ_i |r_qi − μ_q|                      (mean absolute deviation)
        Â_qi  = (r_qi − μ_q) / (MAD_q + eps)                 (difficulty-balanced advantage)
        w_q   = B · softmax_q(−μ_q / T) = B · exp(−μ_q/T) / Σ_q' exp(−μ_q'/T)
        A_qi  = w_q · Â_qi

    Dividing by the MAD rather than the std makes the total update of a group the same whatever its
    difficulty (Σ_i |Â_qi| = G for every non-flat group); ``w_q`` averages 1 over the batch and
    grows as the question's mean reward falls, so hard questions weigh more. ``T`` is
    ``temperature``: large ``T`` makes all weights 1.
    """
    import torch

    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    grouped = _grouped(rewards, num_generations)
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    centred = grouped - mean
    mad = torch.nanmean(centred.abs(), dim=1, keepdim=True)
    balanced = centred / (mad + eps)
    # A question whose completions are all unscorable has a NaN mean: give it the weight of a
    # question of mean 0 would be arbitrary, so it takes no part in the softmax (weight 0; its
    # advantages are 0 anyway).
    q_mean = mean.squeeze(1)
    valid = ~torch.isnan(q_mean)
    logits = torch.where(valid, -q_mean / temperature, torch.full_like(q_mean, -torch.inf))
    num_valid = int(valid.sum())
    weights = num_valid * torch.softmax(logits, dim=0) if num_valid else torch.zeros_like(q_mean)
    advantages = balanced * weights.unsqueeze(1)
    return torch.nan_to_num(advantages.reshape(-1), nan=0.0)


def winsorized_advantages(
    rewards: torch.Tensor, num_generations: int, quantile: float = 0.1, eps: float = EPS
) -> torch.Tensor:
    """Winsorised group advantage: clamp each group's rewards to ``[Q_q, Q_{1−q}]`` (its ``q`` and
    ``1 − q`` quantiles, linear interpolation as :func:`torch.quantile`), then
    ``A = (r' − mean(r')) / (std(r') + eps)`` with the unbiased std, as TRL standardises. One
    outlier reward then cannot shrink every other advantage of its group."""
    import torch

    if not 0.0 <= quantile < 0.5:
        raise ValueError(f"quantile must be in [0, 0.5), got {quantile}")
    grouped = _grouped(rewards, num_generations)
    lo = torch.nanquantile(grouped, quantile, dim=1, keepdim=True)
    hi = torch.nanquantile(grouped, 1.0 - quantile, dim=1, keepdim=True)
    clipped = torch.minimum(torch.maximum(grouped, lo), hi)  # NaN stays NaN
    mean = torch.nanmean(clipped, dim=1, keepdim=True)
    count = (~torch.isnan(clipped)).sum(dim=1, keepdim=True)
    var = torch.nansum((clipped - mean) ** 2, dim=1, keepdim=True) / (count - 1).clamp(min=1)
    advantages = (clipped - mean) / (var.sqrt() + eps)
    return torch.nan_to_num(advantages.reshape(-1), nan=0.0)


def rank_advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """Rank advantage: ``A_i = (rank_i − (n+1)/2) / ((n−1)/2)`` with ``rank_i`` the 1-based rank of
    ``r_i`` among the ``n`` scorable rewards of its group (ties get their average rank). The best
    completion gets 1, the worst −1, a flat group 0; only the order of the rewards matters."""
    import torch

    grouped = _grouped(rewards, num_generations)
    valid = ~torch.isnan(grouped)
    r = torch.nan_to_num(grouped, nan=0.0)
    # rank_i = 1 + #{j: r_j < r_i} + (#{j: r_j = r_i} − 1)/2 over valid j: the average of tied ranks.
    less = ((r.unsqueeze(1) < r.unsqueeze(2)) & valid.unsqueeze(1)).sum(dim=2).to(r.dtype)
    equal = ((r.unsqueeze(1) == r.unsqueeze(2)) & valid.unsqueeze(1)).sum(dim=2).to(r.dtype)
    rank = 1.0 + less + (equal - 1.0) / 2.0
    n = valid.sum(dim=1, keepdim=True).to(r.dtype)
    half = ((n - 1.0) / 2.0).clamp(min=1e-12)
    advantages = torch.where(valid & (n > 1), (rank - (n + 1.0) / 2.0) / half, 0.0)
    return advantages.reshape(-1)


def flat_group_mask(
    rewards_per_func: torch.Tensor, num_generations: int, atol: float = 1e-6
) -> torch.Tensor:
    """``(Q,)`` booleans: True where a group is flat — every reward function gave all its scorable
    completions the same reward (within ``atol``). ``rewards_per_func`` is ``(N,)`` or ``(N, F)``.

    Per function rather than on the weighted sum, so it holds for GDPO too (its batch-level
    normalisation gives a flat group a non-zero advantage, but no signal within the group). A group
    with no scorable completion at all is flat."""
    import torch

    values = rewards_per_func if rewards_per_func.dim() == 2 else rewards_per_func.unsqueeze(1)
    if values.size(0) % num_generations != 0:
        raise ValueError(
            f"{values.size(0)} rewards do not split into groups of num_generations={num_generations}"
        )
    grouped = values.view(-1, num_generations, values.size(1))
    nan = torch.isnan(grouped)
    hi = torch.where(nan, -torch.inf, grouped).amax(dim=1)
    lo = torch.where(nan, torch.inf, grouped).amin(dim=1)
    spread = torch.where(torch.isfinite(hi - lo), hi - lo, 0.0)  # an all-NaN column has no spread
    return (spread <= atol).all(dim=1)
