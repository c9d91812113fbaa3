"""Layer 3 (trainer): how much Lean-checked reward a model earns on a set of goal states.

The question "did GRPO reach the policy?" is answered on the policy itself, not on the noisy
per-step means of a training log: :func:`sampled_tactic_reward` samples ``k`` tactics at each
recorded goal state (independent draws at ``temperature``, a state repeated ``k`` times in the
batch, so a model that always writes the right tactic scores 1, not ``1/k`` as deduplicated
candidates would) and scores each with the very scorer GRPO trained on (``lean_tactic`` by
default, over the theorems' recorded transitions or a context given). The SFT model and the
GRPO model measured by the same call, at the same seed, compare like for like.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ...data.model import Theorem
from ...errors import ConfigValueError
from .rewards.base import Trajectory

if TYPE_CHECKING:
    from ...models.generator import TacticGenerator
    from .rewards.context import RewardContext


@dataclass(frozen=True)
class SampledReward:
    """``mean_reward`` of ``samples`` = ``states`` × ``k`` sampled tactics; ``accepted``: the
    fraction the environment accepted (reward > 0); ``closed``: the fraction that closed the proof
    (outcome ``proved``); ``seconds``: generation and scoring."""

    mean_reward: float
    accepted: float
    closed: float
    states: int
    k: int
    samples: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sampled_tactic_reward(
    model: TacticGenerator | str | os.PathLike[str] | None,
    theorems: Iterable[Theorem],
    *,
    k: int = 4,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 48,
    scorer: str = "lean_tactic",
    context: RewardContext | None = None,
    max_states: int | None = None,
) -> SampledReward:
    """The mean ``scorer`` reward of ``k`` tactics sampled at every recorded goal state of
    ``theorems`` (in order; the first ``max_states`` when given).

    ``model``: a ``TacticGenerator`` (used as it is configured) or anything
    :func:`~lean_dojo_v2.models.generator.load_generator` takes (a model or adapter folder, an
    HF id, None for the default), then sampled at ``temperature`` with ``seed``. ``context``: a
    :class:`~.rewards.RewardContext`; None opens a replay context over ``theorems``."""
    from ...models.generator import TacticGenerator, load_generator
    from .rewards.context import open_reward_context
    from .rewards.registry import get_scorer

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigValueError(f"k must be a whole number >= 1, got {k!r}")
    theorems = [t for t in theorems if t.traced_tactics]
    rows = [(t, i) for t in theorems for i in range(len(t.traced_tactics))][:max_states]
    if not rows:
        raise ConfigValueError("no recorded goal states to sample at: the theorems have no tactics")
    generator = (
        model
        if isinstance(model, TacticGenerator)
        else load_generator(
            model,
            strategy="sample",
            temperature=temperature,
            top_p=1.0,
            seed=seed,
            max_new_tokens=max_new_tokens,
        )
    )
    start = time.perf_counter()
    draws = [(t, i) for t, i in rows for _ in range(k)]  # each state k times: independent draws
    drawn = generator.generate([t.traced_tactics[i].state_before for t, i in draws], 1)
    ctx = context if context is not None else open_reward_context(theorems, backend="replay")
    try:
        score = get_scorer(scorer, context=ctx)
        trajectories = [
            Trajectory(
                completion=cands[0].tactic if cands else "",
                state=t.traced_tactics[i].state_before,
                theorem=t,
                step=i,
                recorded_tactic=t.traced_tactics[i].tactic,
                mode="tactic",
            )
            for (t, i), cands in zip(draws, drawn, strict=True)
        ]
        scored = score.score_batch(trajectories)
    finally:
        if context is None:
            ctx.close()
    n = len(scored)
    return SampledReward(
        mean_reward=round(sum(r for r, _ in scored) / n, 4),
        accepted=round(sum(r > 0 for r, _ in scored) / n, 4),
        closed=round(sum(info.get("outcome") == "proved" for _, info in scored) / n, 4),
        states=len(rows),
        k=k,
        samples=n,
        seconds=round(time.perf_counter() - start, 1),
    )


__all__ = ["SampledReward", "sampled_tactic_reward"]
