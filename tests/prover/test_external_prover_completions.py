"""Completion text -> one tactic / one whole proof (``lean_dojo_v2.prover.completions``)."""

from __future__ import annotations

import math

import pytest

from lean_dojo_v2.prover.completions import (
    completion_proof,
    completion_tactic,
    frequency_scores,
    strip_by,
    unwrap_fence,
)

INDUCTION = "induction n with\n  | zero => rfl\n  | succ n ih => simp [ih]"


@pytest.mark.parametrize(
    ("text", "tactic"),
    [
        ("simp", "simp"),
        ("  simp [foo]  \n", "simp [foo]"),
        ("```lean\nsimp [foo]\n```", "simp [foo]"),
        ("Here is the step:\n```lean4\n" + INDUCTION + "\n```\nIt works.", INDUCTION),
        ("```python\nprint(1)\n```\n```lean\nrfl\n```", "rfl"),  # the Lean block is preferred
        ("```\nexact h\n", "exact h"),  # unterminated fence
        ("`omega`", "omega"),
        ("by simp", "simp"),
        ("by\n  intro n\n  simp", "intro n"),
        ("theorem foo (n : ℕ) : n + 0 = n := by\n  simp", "simp"),
        ("intro n\nsimp", "intro n"),  # one tactic: the first
        (INDUCTION + "\nomega", INDUCTION),  # multi-line tactic kept whole
        ("have h : p := by\n  exact hp\nexact h", "have h : p := by\n  exact hp"),
        ("exact sorry_lemma", "exact sorry_lemma"),  # a name, not `sorry`
    ],
)
def test_completion_tactic_unwraps_and_keeps_multiline_tactics(text, tactic):
    assert completion_tactic(text) == tactic


@pytest.mark.parametrize(
    "text", [None, "", "   \n", "sorry", "```lean\nadmit\n```", "exact (sorry)"]
)
def test_completion_tactic_drops_empty_and_sorry(text):
    assert completion_tactic(text) is None


@pytest.mark.parametrize(
    ("text", "proof"),
    [
        ("intro n\nsimp", "intro n\nsimp"),
        ("by\n  intro n\n  " + INDUCTION.replace("\n", "\n  "), "intro n\n" + INDUCTION),
        ("```lean\ntheorem t : p := by\n  exact hp\n```", "exact hp"),
        ("by intro n\n  simp", "intro n\nsimp"),
        # a reasoning prover's answer: a sketch first, the complete proof in the last block
        (
            "Plan:\n```lean4\ntheorem t : p := by\n  have h : q := by sorry\n  sorry\n```\n"
            "Final:\n```lean4\nimport Mathlib\n\ntheorem t : p := by\n  exact hp\n```",
            "exact hp",
        ),
        ("<think>\n```lean4\nsimp\n```\n</think>\n```lean4\nnorm_num\n```", "norm_num"),
    ],
)
def test_completion_proof_keeps_every_line(text, proof):
    assert completion_proof(text) == proof


def test_completion_proof_drops_any_sorry():
    assert completion_proof("intro n\nsorry") is None
    assert completion_proof("```lean\n```") is None
    assert completion_proof("<think>\nFirst, ```lean4\nsimp\n```") is None  # still thinking


def test_helpers():
    assert unwrap_fence("no fence") == "no fence"
    assert strip_by("by\n  a\n  b") == "a\nb"
    assert strip_by("simp") == "simp"


def test_frequency_scores_are_log_frequencies():
    scores = frequency_scores(["a", "b", "a", None])
    assert scores[:3] == pytest.approx([math.log(0.5), math.log(0.25), math.log(0.5)])
    assert scores[3] == -math.inf
