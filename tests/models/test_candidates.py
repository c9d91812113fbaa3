"""The one candidate clean-up shared by the generators (``finalize``) and search."""

from __future__ import annotations

import math

from lean_dojo_v2.models.candidates import clean_candidates, is_forbidden
from lean_dojo_v2.models.generator import Candidate, finalize
from lean_dojo_v2.models.generator import is_forbidden as generator_is_forbidden


def cands(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(t, lp) for t, lp in pairs]


def test_strict_defaults_drop_sorry_and_non_finite_and_merge_exact_duplicates():
    raw = cands(
        ("simp", -2.0),
        ("simp", -1.0),
        ("simp ", -0.5),  # other text: not a duplicate without merge_whitespace
        ("exact sorry", -0.1),
        ("rfl", -math.inf),
        ("x", math.nan),
        ("   ", -0.2),
        ("ring", -1.5),
    )
    assert clean_candidates(raw, 10) == cands(("simp ", -0.5), ("simp", -1.0), ("ring", -1.5))
    assert clean_candidates(raw, 2) == cands(("simp ", -0.5), ("simp", -1.0))


def test_search_mode_merges_up_to_white_space_and_keeps_what_the_generator_vouched_for():
    raw = cands(
        ("  simp", -2.0),
        ("simp", -0.7),
        ("exact sorry", -0.1),
        ("rfl", -math.inf),
        ("x", math.nan),
        ("", 0.0),
    )
    out = clean_candidates(raw, 10, drop_forbidden=False, finite_only=False, merge_whitespace=True)
    # the kept object is the one with the best score, its text untouched
    assert out == cands(("exact sorry", -0.1), ("simp", -0.7), ("rfl", -math.inf))
    assert out[1] is raw[1]


def test_equal_scores_keep_first_appearance_order_and_the_first_of_equal_duplicates():
    first, second = Candidate("b", -1.0), Candidate(" b", -1.0)
    raw = [Candidate("a", -2.0), first, Candidate("c", -1.0), second]
    out = clean_candidates(raw, 10, merge_whitespace=True)
    assert [c.tactic for c in out] == ["b", "c", "a"]
    assert out[0] is first


def test_finalize_is_the_strict_clean_up_of_stripped_prefixed_text():
    raw = [("  simp", -3.0), ("simp", -2.0), ("sorry", -0.1), ("[h]", -1.0), ("", -0.01)]
    assert finalize(raw, 10, prefix="simp ") == [
        Candidate("simp", -0.01),  # the prefix alone, stripped
        Candidate("simp [h]", -1.0),
        Candidate("simp simp", -2.0),
        Candidate("simp   simp", -3.0),  # exact text is the key: not merged with the one above
    ]
    assert finalize(raw, 2) == [Candidate("[h]", -1.0), Candidate("simp", -2.0)]
    assert generator_is_forbidden is is_forbidden
