"""v1's parsed goals (``lean_dojo.interaction.parse_goals``): :class:`Goal`, :class:`Declaration`
and :func:`parse_goals`, on the one goal parser of the library (:mod:`lean_dojo_v2.data.goals`).

A type that Lean wrapped onto several lines comes back on one line with white space collapsed
(v1 kept the line breaks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..data.goals import NO_GOALS, TURNSTILE, clean_state, parse_goal

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Declaration:
    """One name of the local context and its type (``x y : ℕ`` gives two)."""

    ident: str
    lean_type: str


@dataclass(frozen=True)
class Goal:
    """A goal: its hypotheses, in order, and its conclusion (the text after ``⊢``)."""

    assumptions: list[Declaration]
    conclusion: str

    @classmethod
    def from_pp(cls, pp: str) -> Goal:
        """One pretty-printed goal (an optional ``case`` line, hypotheses, ``⊢ target``)."""
        goals = parse_goals(pp)
        if len(goals) != 1:
            from .errors import V1ArgumentError

            raise V1ArgumentError(
                f"expected the text of one goal (one {TURNSTILE}), got {len(goals)}: pass a "
                "single goal, or use parse_goals for a whole state"
            )
        return goals[0]


def parse_goals(pp: str) -> list[Goal]:
    """The goals of a pretty-printed tactic state (goals separated by blank lines); blocks without
    a ``⊢`` are skipped, as v1 did."""
    text = clean_state(pp)
    if text == NO_GOALS:
        return []
    out = []
    for block in _BLANK_LINE.split(text):
        if TURNSTILE not in block:
            continue
        goal = parse_goal(block)
        decls: list[Declaration] = []
        for hyp in goal.hypotheses:
            lean_type = hyp.type if hyp.value is None else f"{hyp.type} := {hyp.value}"
            decls.extend(Declaration(name, lean_type) for name in hyp.names)
        out.append(Goal(decls, goal.target))
    return out


__all__ = ["Declaration", "Goal", "parse_goals"]
