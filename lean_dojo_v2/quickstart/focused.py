"""The focused training set: theorems whose recorded proofs a small model can learn in minutes.

Why a focused set at all: ``ReplayEnv`` accepts only recorded tactics, so training shows up in a
replayed search only once the model writes a recorded tactic *exactly*. The obvious recipe (a
64-step LoRA SFT of SmolLM2-135M on the whole LeanDojo sample: mathlib proofs, long rewrites)
proved 0 of 42 training theorems through replay, like the untrained model. Short proofs made of
short tactics (``norm_num``, ``linarith``, ``rw [h₀]`` then ``norm_num``) are what a small model
reproduces after a few LoRA steps at a high learning rate, and sequences this short cost a few
seconds per example on a CPU; the miniF2F-test chains bundled with the package are mostly such
proofs. Measured (``docs/quickstart.md``): 8 steps of 8 pairs, then 17 of the 34 theorems trained
on and 6 of 10 held out proved through replay, against 0 and 0 for the untrained model.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..data.model import Theorem

MAX_TACTICS = 2
"""At most this many recorded tactics per proof."""
MAX_TACTIC_CHARS = 24
"""At most this many characters per tactic (``constructor <;> linarith`` is 24), none multi-line."""


def is_focused(
    theorem: Theorem, *, max_tactics: int = MAX_TACTICS, max_tactic_chars: int = MAX_TACTIC_CHARS
) -> bool:
    """Whether ``theorem`` has a recorded tactic proof of 1..``max_tactics`` one-line tactics of
    at most ``max_tactic_chars`` characters each."""
    tactics = theorem.traced_tactics
    return 1 <= len(tactics) <= max_tactics and all(
        "\n" not in t.tactic and len(t.tactic.strip()) <= max_tactic_chars for t in tactics
    )


def focused_theorems(
    theorems: Iterable[Theorem],
    *,
    max_tactics: int = MAX_TACTICS,
    max_tactic_chars: int = MAX_TACTIC_CHARS,
) -> list[Theorem]:
    """The theorems of ``theorems`` (in order) whose recorded proofs are short enough for a small
    model to reproduce after a few minutes of LoRA SFT on a CPU (:func:`is_focused`).

    On the bundled miniF2F chains this keeps 34 of 44 training and 10 of 12 held-out theorems;
    their 57 (goal state → tactic) pairs are 70-155 tokens each in SmolLM2's chat format."""
    return [
        t
        for t in theorems
        if is_focused(t, max_tactics=max_tactics, max_tactic_chars=max_tactic_chars)
    ]
