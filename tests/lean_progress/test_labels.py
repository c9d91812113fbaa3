"""Steps-remaining labels on real traced proofs (LeanDojo Benchmark 4 records bundled in
tests/data/real), branching ones included. Each expected list was derived by hand from the record:
the comments give each tactic's goals before/after as the record prints them."""

from __future__ import annotations

import random

import pytest

from lean_dojo_v2.data import Theorem, read_theorems
from lean_dojo_v2.lean_progress.labels import goal_keys, label_tactics, steps_remaining


@pytest.fixture(scope="module")
def real(shared_data) -> dict[str, Theorem]:
    path = shared_data / "leandojo_b4" / "random_test_records_1_100.json"
    return {t.full_name: t for t in read_theorems(path)}


def test_linear_proof_gives_n_minus_i(real):
    # Filter.HasBasis.to_hasBasis': 4 tactics, each state_before is the previous state_after
    # (refine -> rcases -> rcases -> exact), one goal throughout: labels n - i.
    t = real["Filter.HasBasis.to_hasBasis'"]
    for prev, nxt in zip(t.traced_tactics, t.traced_tactics[1:], strict=False):
        assert goal_keys(prev.state_after) == goal_keys(nxt.state_before)
    assert steps_remaining(t) == [4, 3, 2, 1]


def test_every_linear_real_proof_gives_n_minus_i(real):
    linear = [
        t
        for t in real.values()
        if t.traced_tactics
        and all(
            goal_keys(a.state_after) == goal_keys(b.state_before)
            for a, b in zip(t.traced_tactics, t.traced_tactics[1:], strict=False)
        )
    ]
    assert len(linear) >= 20
    for t in linear:
        n = t.num_tactics
        assert steps_remaining(t) == [n - i for i in range(n)], t.full_name


def test_bullets_after_a_two_goal_tactic(real):
    # CancelDenoms.cancel_factors_lt:
    # [0] rw [...]                  1 goal -> 2 goals (⊢ 0 < ad * bd, ⊢ 0 < 1 / gcd)
    # [1] exact mul_pos had hbd     B: ⊢ 0 < ad * bd only (a bullet)   -> no goals
    # [2] exact one_div_pos.2 hgcd  B: ⊢ 0 < 1 / gcd only (a bullet)   -> no goals
    # [1] and [2] each close their own goal in one step; [0] needs itself and both: 3.
    # (The list order would say [3, 2, 1].)
    t = real["CancelDenoms.cancel_factors_lt"]
    assert steps_remaining(t) == [3, 1, 1]
    labels = label_tactics(t.traced_tactics)
    assert labels[1].parents == (0,) and labels[2].parents == (0,)
    assert labels[0].children == (1, 2)


def test_case_split_with_nested_branches(real):
    # Polynomial.Monic.degree_mul_comm (the record lists the `neg` branch before `pos`):
    # [0] by_cases h : q = 0         -> case pos, case neg
    # [1] rw [degree_mul', ...]      B: case neg -> two `case neg` goals (the equation, ≠ 0)
    # [2] simp [h]                   B: case pos -> no goals
    # [3] exact add_comm _ _         B: case neg (the equation)  -> no goals
    # [4] rwa [...]                  B: case neg (≠ 0)           -> no goals
    # [0]: all five; [1]: itself, [3], [4] = 3; [2], [3], [4]: 1 each.
    t = real["Polynomial.Monic.degree_mul_comm"]
    assert steps_remaining(t) == [5, 3, 1, 1, 1]
    labels = label_tactics(t.traced_tactics)
    assert [lab.parents for lab in labels] == [(), (0,), (0,), (1,), (1,)]


def test_constructor_then_bullets_of_different_lengths(real):
    # CategoryTheory.Idempotents.split_iff_of_iso:
    # [0] constructor -> case mp, case mpr
    # [1] exact ... (case mp) -> no goals
    # [2]..[7] apply, rw, slice_rhs, slice_rhs, simp only, rfl: a chain on case mpr
    # [0]: 8; [1]: 1; [2]: 6 (itself and [3]..[7]), then 5, 4, 3, 2, 1.
    t = real["CategoryTheory.Idempotents.split_iff_of_iso"]
    assert steps_remaining(t) == [8, 1, 6, 5, 4, 3, 2, 1]


def test_nested_by_block_is_its_own_sub_proof(real):
    # Set.wellFoundedOn_iff:
    # [0] have f : RelEmbedding ... := { ..., map_rel_iff' := by simp }   (adds hypothesis f)
    # [1] refine ⟨fun h => ?_, f.wellFounded⟩  [2] rw  [3] intro t ht
    # [4] by_cases hst : ...        -> case pos, case neg
    # [5] simp      B: ⊢ ∀ {a b : ↑s}, r ({ toFun := Subtype.val, ... } a) ...  — the goal of the
    #               `by simp` inside [0]; no tactic produced it: its own proof, label 1.
    # [6] rw ... at hst (pos)  [7] rcases (pos -> pos.intro.mk.intro)  [8] exact: 3, 2, 1
    # [9] rcases ht (neg -> neg.intro)  [10] exact: 2, 1
    # [4]: itself + [6..8] + [9, 10] = 6; [3] 7, [2] 8, [1] 9, [0] 10 ([5] is not counted:
    # it runs inside [0], which is one step).
    t = real["Set.wellFoundedOn_iff"]
    assert steps_remaining(t) == [10, 9, 8, 7, 6, 1, 3, 2, 1, 2, 1]
    labels = label_tactics(t.traced_tactics)
    assert labels[5].tree == 5 and labels[5].parents == ()
    assert {lab.tree for i, lab in enumerate(labels) if i != 5} == {0}
    # The prefix of a tactic is the earlier tactics of its own proof, not of the nested one.
    assert labels[6].prefix == (0, 1, 2, 3, 4)
    assert labels[5].prefix == ()


def test_tactic_inside_match_alternative(real):
    # Batteries...Heap.WF.tail?:
    # [0] simp only [Heap.tail?]  [1] intro eq
    # [2] match eq₂ : s.deleteMin le, eq with | some (a, tl), rfl => exact hwf.deleteMin eq₂
    #     B: ⊢ WF le 0 tl -> no goals (the whole match, alternative included, is one step)
    # [3] exact hwf.deleteMin eq₂  B: ⊢ WF le 0 ((fun x => x.snd) (a, tl)): the alternative's
    #     goal, produced by no recorded tactic: its own proof.
    t = real["Batteries.BinomialHeap.Imp.Heap.WF.tail?"]
    assert steps_remaining(t) == [3, 2, 1, 1]


def test_goal_printed_anew_after_a_metavariable_is_assigned(real):
    # Cardinal.mk_bounded_subset_le:
    # [1] refine ⟨Embedding.codRestrict _ ?_ ?_⟩ -> case refine_1, case refine_2, the latter
    #     printed with the metavariable ?refine_1 in its target.
    # [2] rintro (listed before [4], though it runs after it) B: case refine_2 with ?refine_1
    #     replaced by `{ toFun := fun t => Subtype.val ⁻¹' ↑t, inj' := ⋯ }`: [1] is its parent.
    # [3] exact -> no goals.  [4] use (case refine_1) -> case inj'; [5]..[8] a chain on inj'.
    # [1]: itself + [2], [3] + [4..8] = 8; [0]: 9; [2]: 2; [4]: 5 ([4..8]).
    t = real["Cardinal.mk_bounded_subset_le"]
    labels = label_tactics(t.traced_tactics)
    assert labels[2].parents == (1,)
    assert steps_remaining(t) == [9, 8, 2, 1, 5, 4, 3, 2, 1]


def test_labels_do_not_depend_on_record_order(real):
    """LeanDojo's record order is not always the source order; shuffling the records of every
    real proof gives each tactic the same label."""
    checked = 0
    for t in real.values():
        if t.num_tactics < 2:
            continue
        expected = steps_remaining(t)
        for seed in range(3):
            order = list(range(t.num_tactics))
            random.Random(seed).shuffle(order)
            got = steps_remaining([t.traced_tactics[i] for i in order])
            assert [got[order.index(i)] for i in range(t.num_tactics)] == expected, t.full_name
        checked += 1
    assert checked >= 30


def test_labels_are_at_least_one_and_first_tactic_is_largest(real):
    for t in real.values():
        if not t.traced_tactics:
            assert steps_remaining(t) == []
            continue
        labels = steps_remaining(t)
        assert min(labels) >= 1
        # The theorem's first tactic sees the theorem's goal: the largest label of its tree.
        first_tree = [
            lab.steps_remaining for lab in label_tactics(t.traced_tactics) if lab.tree == 0
        ]
        assert labels[0] == max(first_tree), t.full_name
