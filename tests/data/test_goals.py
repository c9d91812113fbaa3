"""Goal-state normalisation on real states (LeanDojo Benchmark 4 and miniCTX)."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.data import (
    NO_GOALS,
    canonical_state,
    clean_state,
    goal_texts,
    is_no_goals,
    split_goals,
)


@pytest.fixture(scope="module")
def states(b4_records_path):
    records = json.loads(b4_records_path.read_text())
    out = []
    for r in records:
        for t in r["traced_tactics"]:
            out += [t["state_before"], t["state_after"]]
    return out


@pytest.fixture(scope="module")
def multi_goal_state(states):
    return next(s for s in states if s.startswith("case refine_2.inl\n"))


@pytest.fixture(scope="module")
def minictx_rows(shared_data):
    path = shared_data / "minictx" / "data" / "v1" / "miniF2F_test_state_prediction.jsonl"
    return [json.loads(line) for line in path.open()]


def test_real_states_are_already_clean(states):
    for s in states:
        assert clean_state(s) == s


def test_canonical_is_idempotent_and_keeps_goal_count(states):
    for s in states:
        c = canonical_state(s)
        assert canonical_state(c) == c
        expected = 0 if s == "no goals" else s.count("\n\n") + 1
        assert len(split_goals(s)) == expected


def test_multi_goal_state_with_case_tags(multi_goal_state):
    goals = split_goals(multi_goal_state)
    assert [g.case for g in goals] == ["refine_2.inl", "refine_2.inr"]
    assert goals[0].hypotheses[-1].names == ("hl",)
    assert goals[1].hypotheses[-1].names == ("hr",)
    assert all(g.target == "m (f '' (fun k => f ⁻¹' t k) n) ≤ m (t n)" for g in goals)
    assert canonical_state(multi_goal_state) == "\n\n".join(goal_texts(multi_goal_state))


def test_inaccessible_names_are_hypothesis_names(states):
    s = next(s for s in states if "a✝ a₁ a₂ b✝ c : G" in s)
    hyp = next(h for h in split_goals(s)[0].hypotheses if "a✝" in h.names)
    assert hyp.names == ("a✝", "a₁", "a₂", "b✝", "c") and hyp.type == "G"
    inst = [h for h in split_goals(s)[0].hypotheses if h.names[0].startswith("inst✝")]
    assert inst, "instance hypotheses such as inst✝¹ are kept"


def test_wrapped_lines_do_not_change_the_canonical_form(states):
    wrapped = [s for s in states if "\n    " in s]
    assert wrapped, "real data has wrapped hypotheses/targets"
    for s in wrapped:
        unwrapped = s.replace("\n        ", " ").replace("\n    ", " ")
        assert canonical_state(unwrapped) == canonical_state(s)
        assert "\n    " not in canonical_state(s)


def test_marks_are_stripped(states):
    s = next(s for s in states if "IsGroupHom" in s)
    marked = s.replace("IsGroupHom", "<a>IsGroupHom</a>")
    assert clean_state(marked) == s
    assert canonical_state(marked) == canonical_state(s)


def test_goal_count_header_is_dropped(multi_goal_state):
    # LeanDojo v1 pretty-printing starts multi-goal states with "N goals".
    assert clean_state("2 goals\n" + multi_goal_state) == multi_goal_state
    one = multi_goal_state.split("\n\n")[0]
    assert canonical_state("1 goal\n" + one) == canonical_state(one)


@pytest.mark.parametrize(
    "finished", ["no goals", "🎉 no goals", "", "  no goals\n", "/-\n  🎉 no goals\n-/"]
)
def test_finished_forms_are_alike(finished):
    assert is_no_goals(finished)
    assert clean_state(finished) == NO_GOALS
    assert canonical_state(finished) == NO_GOALS
    assert split_goals(finished) == []


def test_not_finished(states):
    assert not any(is_no_goals(s) for s in states if s != "no goals")


def test_minictx_comment_wrapped_states_match_derived(minictx_rows, shared_data):
    derived = json.loads(
        (shared_data / "minictx" / "derived" / "minif2f_test_traced_tactics.json").read_text()
    )
    by_name = {d["full_name"]: d for d in derived}
    checked = multi = 0
    for row in minictx_rows:
        thm = by_name.get(row["name"])
        step = int(row["step_count"])
        if thm is None or step >= len(thm["traced_tactics"]):
            continue
        # step_count -1 is the state after the whole proof.
        tac = thm["traced_tactics"][step]
        expected = tac["state_after"] if step == -1 else tac["state_before"]
        got = canonical_state(row["response"])
        assert "/-" not in got and "🎉" not in got
        if "-/" in expected:
            # The derived file kept responses with several comment blocks (one per open goal)
            # unparsed; we drop the finished blocks and keep the open goals.
            blocks = [b for b in row["response"].split("/-")[1:]]
            open_blocks = [b for b in blocks if "no goals" not in b]
            assert len(split_goals(row["response"])) == len(open_blocks)
            multi += 1
            continue
        assert got == canonical_state(expected)
        checked += 1
    assert checked > 100 and multi >= 2


def test_let_bound_hypothesis_value_is_split():
    from lean_dojo_v2.data.goals import parse_goal

    g = parse_goal("n : ℕ := 3\nf : ℕ → ℕ := fun x => x + n\n⊢ f 1 = 4")
    assert g.hypotheses[0].value == "3"
    assert g.hypotheses[1].type == "ℕ → ℕ" and g.hypotheses[1].value == "fun x => x + n"
    assert g.render() == "n : ℕ := 3\nf : ℕ → ℕ := fun x => x + n\n⊢ f 1 = 4"


def test_fast_canonical_path_agrees_with_the_parser(states, minictx_rows):
    """canonical_state takes a shortcut for ordinary goals; it must render exactly what the full
    parser renders, on every real state and on re-spaced variants of them."""
    from lean_dojo_v2.data.goals import _canonical_goal, _split_goal_blocks, parse_goal

    real = states + [r["response"] for r in minictx_rows]
    variants = [s.replace("\n", "  \n") for s in real] + [s.replace(" : ", "  :\t") for s in real]
    checked = 0
    for s in real + variants:
        for block in _split_goal_blocks(clean_state(s)):
            if clean_state(s) == NO_GOALS:
                continue
            assert _canonical_goal(block) == parse_goal(block).render(), block
            checked += 1
    assert checked > 1000
