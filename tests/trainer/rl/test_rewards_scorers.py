"""The scorers that need no Lean: format, efficiency, overlong (DAPO's equation, exact numbers),
difficulty scaling and the domain scorers, on real recorded states and tactics."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.trainer.errors import UnknownRewardError
from lean_dojo_v2.trainer.rl.rewards import (
    DifficultyScorer,
    DomainScorer,
    Trajectory,
    get_scorer,
    open_reward_context,
)
from lean_dojo_v2.trainer.rl.rewards.overlong import soft_overlong_penalty


@pytest.fixture(scope="module")
def theorems():
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


def by_name(theorems, name):
    return next(t for t in theorems if t.full_name == name)


# ------------------------------------------------------------------------------------ format
def test_recorded_one_line_tactics_are_well_formed(theorems) -> None:
    scorer = get_scorer("format")
    tactics = [tt.tactic for t in theorems for tt in t.traced_tactics if "\n" not in tt.tactic]
    problems = {
        tac: info.get("problem")
        for tac in tactics
        for reward, info in [scorer.score(Trajectory(completion=tac + "<|im_end|>"))]
        if reward != 1.0
    }
    assert problems == {}


@pytest.mark.parametrize(
    "completion, mode, problem",
    [
        ("", "tactic", "empty"),
        ("```lean\nsimp\n```", "tactic", "a markdown fence"),
        ("The goal follows from simp.", "tactic", "prose"),
        ("simp. Then we are done", "tactic", "prose"),
        ("sorry", "tactic", "uses sorry, admit or sorryAx"),
        ("exact foo\nexact bar", "tactic", "more than one tactic"),
        ("rw [foo, bar", "tactic", "an unclosed bracket (expected ']')"),
        ("exact ⟨h.1, h.2)", "tactic", "an unmatched ')'"),
        ("by simp", "proof", "starts with by"),
        ("theorem t : True := trivial", "proof", "declares something (theorem)"),
        ("native_decide", "tactic", "uses native_decide (a non-standard axiom, kernel bypass or meta code)"),
    ],
)  # fmt: skip
def test_format_problems(completion, mode, problem) -> None:
    reward, info = get_scorer("format").score(Trajectory(completion=completion, mode=mode))
    assert (reward, info["problem"]) == (0.0, problem)


def test_format_accepts_one_multi_line_tactic_and_proofs(theorems) -> None:
    scorer = get_scorer("format")
    multi = "rw [mul_lt_mul_left,\n  ← ha, ← hb]"
    assert scorer.score(Trajectory(completion=multi))[0] == 1.0
    proof = "\n".join(tt.tactic for tt in by_name(theorems, "CancelDenoms.cancel_factors_lt")
                      .traced_tactics)  # fmt: skip
    assert scorer.score(Trajectory(completion=proof, mode="proof"))[0] == 1.0
    assert scorer.score(Trajectory(completion=proof, mode="tactic"))[0] == 0.0
    assert get_scorer("format").__class__(good=2.0, bad=-1.0).score(Trajectory())[0] == -1.0


# -------------------------------------------------------------------------------- efficiency
def test_efficiency_prefers_fewer_steps(theorems) -> None:
    thm = by_name(theorems, "CancelDenoms.cancel_factors_lt")
    recorded = "\n".join(tt.tactic for tt in thm.traced_tactics)  # 3 tactics
    scorer = get_scorer("efficiency")

    def proof(text):
        return Trajectory(completion=text, recorded_tactic=recorded, mode="proof")

    assert scorer.score(proof(recorded))[0] == 1.0
    assert scorer.score(proof(recorded + "\nrfl\nrfl\nrfl"))[0] == pytest.approx(3 / 6)
    assert scorer.score(proof("nlinarith"))[0] == 1.0
    assert scorer.score(Trajectory(completion="simp"))[0] == 1.0
    assert scorer.score(Trajectory(completion="simp\nring"))[0] == 0.5
    assert scorer.score(Trajectory(completion="  "))[0] == 0.0


# ---------------------------------------------------------------------------------- overlong
@pytest.mark.parametrize(
    "length, expected",
    # DAPO eq. 13 with L_max = 20, L_cache = 5: 0 up to 15, (15 - L) / 5 to 20, then -1.
    [(1, 0.0), (15, 0.0), (16, -0.2), (18, -0.6), (20, -1.0), (21, -1.0), (400, -1.0)],
)
def test_soft_overlong_punishment(length, expected) -> None:
    assert soft_overlong_penalty(length, 20, 5) == pytest.approx(expected)
    scorer = get_scorer("overlong", max_len=20, cache=5)
    reward, info = scorer.score(Trajectory(completion="x", extra={"completion_length": length}))
    assert reward == pytest.approx(expected) and info == {"length": length}


def test_overlong_estimates_without_token_ids() -> None:
    reward, info = get_scorer("overlong", max_len=20, cache=5).score(
        Trajectory(completion="x" * 72)
    )
    assert info == {"length": 18, "estimated": True} and reward == pytest.approx(-0.6)
    with pytest.raises(ConfigValueError):
        get_scorer("overlong", max_len=10, cache=20)


# -------------------------------------------------------------------------------- difficulty
def test_difficulty_scales_the_base_reward() -> None:
    scorer = DifficultyScorer("format", bonus=1.0)
    rewards = [scorer.score(Trajectory(completion="simp", difficulty=d))[0] for d in (0, 0.5, 1)]
    assert rewards == [0.5, 0.75, 1.0]
    assert DifficultyScorer("format", bonus=0).score(Trajectory(completion="simp"))[0] == 1.0
    reward, info = scorer.score(Trajectory(completion="sorry", difficulty=1.0))
    assert reward == 0.0 and info["base"] == "format"
    with pytest.raises(ConfigValueError):
        DifficultyScorer(bonus=-1)


def test_difficulty_defaults_to_the_modes_lean_reward(theorems) -> None:
    thm = by_name(theorems, "CancelDenoms.cancel_factors_lt")
    last = len(thm.traced_tactics) - 1
    closing = thm.traced_tactics[last]
    proof = "\n".join(tt.tactic for tt in thm.traced_tactics)
    with open_reward_context(theorems, backend="replay", num_envs=1) as ctx:
        scorer = get_scorer("difficulty", context=ctx)
        rows = [
            Trajectory(completion=closing.tactic, state=closing.state_before, theorem=thm,
                       step=last, difficulty=0.0),
            Trajectory(completion=proof, theorem=thm, mode="proof", difficulty=1.0),
        ]  # fmt: skip
        scored = scorer.score_batch(rows)
        assert [r for r, _ in scored] == [0.5, 1.0]
        assert [i["base"] for _, i in scored] == ["lean_tactic", "lean_proof"]


# ------------------------------------------------------------------------------------ domains
def test_domain_scorers_reward_domain_tools_on_domain_goals(theorems) -> None:
    ideal = by_name(theorems, "Ideal.span_singleton_eq_span_singleton").traced_tactics[0]
    cancel = by_name(theorems, "CancelDenoms.cancel_factors_lt").traced_tactics[0]
    algebra = get_scorer("algebra")
    ring, info = algebra.score(Trajectory(completion="ring", state=ideal.state_before))
    assert ring > 0 and info["goal_features"] >= 1 and info["completion_features"] == 1
    assert algebra.score(Trajectory(completion="aesop", state=ideal.state_before))[0] == 0.0
    # the recorded tactic of a real goal with ordered-field arithmetic uses mul_ lemmas
    recorded = algebra.score(Trajectory(completion=cancel.tactic, state=cancel.state_before))[0]
    assert recorded > 0
    analysis = get_scorer("analysis")
    assert analysis.score(Trajectory(completion="ring", state=ideal.state_before))[0] == 0.0
    for name in ("number_theory", "combinatorics", "geometry"):
        reward, _ = get_scorer(name).score(Trajectory(completion="ring", state=ideal.state_before))
        assert 0.0 <= reward <= 1.0
    with pytest.raises(UnknownRewardError, match="valid names: algebra, analysis"):
        DomainScorer("topology")


def test_domain_features_on_real_states(theorems) -> None:
    """Over the sample's states each domain finds its goals somewhere, and rewards stay in
    [0, 1]."""
    states = [tt.state_before for t in theorems for tt in t.traced_tactics]
    for name in ("algebra", "number_theory", "analysis", "combinatorics", "geometry"):
        scorer = get_scorer(name)
        hits = [scorer.score(Trajectory(completion="simp", state=s))[1]["goal_features"]
                for s in states]  # fmt: skip
        assert any(hits), name
