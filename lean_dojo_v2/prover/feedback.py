"""Layer 3 (prover): what a verdict tells a model, and the order a report shows Lean's messages.

:func:`first_error` is Lean's first error of a rejected proof as a refinement prompt shows it
(:class:`~lean_dojo_v2.models.proof_prompt.LeanFeedback`): its position in the proof
(``Verdict.first_error``: line 1 is the proof's first line; an error Lean placed outside the proof,
e.g. ``unsolved goals`` at the statement's ``by``, has no position), its message and the goal
Lean printed there. :func:`verdict_messages` lists Lean's messages with that error first.
"""

from __future__ import annotations

from ..interaction.types import Verdict
from ..models.proof_prompt import LeanFeedback

__all__ = ["first_error", "verdict_messages"]


def first_error(verdict: Verdict) -> LeanFeedback:
    """Lean's first error of ``verdict`` (see the module docstring); its first message when it
    has no error (a proof refused for its axioms), else a line saying Lean gave none."""
    error = verdict.first_error
    if error is None:
        first = next((str(m).strip() for m in verdict.messages if str(m).strip()), None)
        return LeanFeedback(first or "Lean rejected the proof without a message")
    text = error.text.strip()
    goal = error.goal.strip() if error.goal else None
    if goal:  # the goal is printed under the complaint: show the complaint, and the goal apart
        text = text.partition("\n")[0].strip() or text
    if error.line < 1:
        return LeanFeedback(text, goal=goal)
    return LeanFeedback(text, error.line, error.column, goal)


def verdict_messages(verdict: Verdict) -> list[str]:
    """Lean's messages about the proof (placed in it where the environment says where), the
    first error first, the rest in Lean's order."""
    messages = [str(m) for m in verdict.lean_messages] or [str(m) for m in verdict.messages]
    error = verdict.first_error
    if error is not None:
        k = next((i for i, m in enumerate(messages) if m == str(error) or error.text in m), None)
        if k:
            messages.insert(0, messages.pop(k))
    return messages
