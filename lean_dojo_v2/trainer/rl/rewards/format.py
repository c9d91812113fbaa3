"""``format``: is the completion shaped like what the prompt asks for? No Lean runs.

Tactic mode: one tactic — a single line, or one multi-line tactic whose continuation lines are
indented (``split_tactics`` finds exactly one) — non-empty, with balanced brackets and no
unterminated string or comment, no ``sorry``/``admit``, no markdown fence, no prose (it does not
open with an English word such as "The" or "Here", and has no sentence break), nothing
:func:`~.text.refusal_reason` refuses (a declaration, a restated goal, ``native_decide``…).
Proof mode: the same for each tactic line, any number of them, and no leading ``by``.

Reward ``good`` (1.0) when all hold, else ``bad`` (0.0); ``info["problem"]`` says which failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import BaseRewardScorer, Scored, Trajectory
from .text import (
    END_MARKERS,
    balance_problem,
    clean_completion,
    completion_tactics,
    has_fence,
    looks_like_prose,
    refusal_reason,
    starts_with_by,
)


def format_problem(text: str, mode: str = "tactic") -> str | None:
    """Why a cleaned completion is badly formed for ``mode`` (``"tactic"``/``"proof"``), or
    None."""
    if not text:
        return "empty"
    if has_fence(text):
        return "a markdown fence"
    if looks_like_prose(text):
        return "prose"
    if mode == "proof" and starts_with_by(text):
        return "starts with by"
    reason = refusal_reason(text)
    if reason is not None:
        return reason
    problem = balance_problem(text)
    if problem is not None:
        return problem
    if mode != "proof" and len(completion_tactics(text)) != 1:
        return "more than one tactic"
    return None


class FormatScorer(BaseRewardScorer):
    """See the module docstring."""

    name = "format"

    def __init__(
        self, *, good: float = 1.0, bad: float = 0.0, end_markers: Sequence[str] = END_MARKERS
    ) -> None:
        self.good = float(good)
        self.bad = float(bad)
        self.end_markers = tuple(end_markers)

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        text = clean_completion(trajectory.completion, self.end_markers)
        problem = format_problem(text, trajectory.mode)
        if problem is None:
            return self.good, {"well_formed": True}
        return self.bad, {"well_formed": False, "problem": problem}


__all__ = ["FormatScorer", "format_problem"]
