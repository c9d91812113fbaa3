"""``overlong``: DAPO's soft overlong punishment on the completion's length in tokens.

With ``L`` the length, ``max_len`` the generation limit and ``cache`` the soft zone
(DAPO, arXiv 2503.14476, eq. 13): 0 while ``L <= max_len - cache``; ``(max_len - cache - L) /
cache`` inside the zone (linear from 0 down to -1); -1 beyond ``max_len``. ``L`` comes from
TRL's ``completion_ids`` (the adapter puts it in ``trajectory.extra["completion_length"]``, or
pass ``completion_length=`` to :meth:`OverlongScorer.score`); without token ids it is estimated
as characters / 4 and ``info["estimated"]`` says so. Set ``max_len`` to the trainer's
``max_completion_length``.
"""

from __future__ import annotations

from typing import SupportsInt

from ....errors import ConfigValueError
from .base import BaseRewardScorer, RewardInfo, Scored, Trajectory

CHARS_PER_TOKEN = 4  # a rough average for code-like text; only used without token ids


def soft_overlong_penalty(length: int, max_len: int, cache: int) -> float:
    """DAPO's soft overlong punishment of a completion of ``length`` tokens."""
    if length <= max_len - cache:
        return 0.0
    if length <= max_len:
        return (max_len - cache - length) / cache
    return -1.0


class OverlongScorer(BaseRewardScorer):
    """See the module docstring."""

    name = "overlong"

    def __init__(self, *, max_len: int = 256, cache: int = 64) -> None:
        if not (isinstance(max_len, int) and isinstance(cache, int) and 0 < cache <= max_len):
            raise ConfigValueError(
                f"overlong needs whole numbers 0 < cache <= max_len, got max_len={max_len!r}, "
                f"cache={cache!r}"
            )
        self.max_len = max_len
        self.cache = cache

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        given = kwargs.get("completion_length", trajectory.extra.get("completion_length"))
        estimated = given is None
        if given is None:
            length = -(-len(trajectory.completion) // CHARS_PER_TOKEN)
        elif isinstance(given, str | SupportsInt):
            length = int(given)
        else:
            raise TypeError(
                f"completion_length must be a number of tokens, not {type(given).__name__}"
            )
        penalty = soft_overlong_penalty(length, self.max_len, self.cache)
        info: RewardInfo = {"length": length}
        if estimated:
            info["estimated"] = True
        return penalty, info


__all__ = ["OverlongScorer", "soft_overlong_penalty"]
