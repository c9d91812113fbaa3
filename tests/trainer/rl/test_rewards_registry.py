"""The reward registry, the weighted composite, upstream LeanDojo-v2's calls, the TRL adapter and
``wrap_user_reward``: names, weights, one-line errors listing the valid choices."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.trainer.errors import RewardFunctionError, TrainerError, UnknownRewardError
from lean_dojo_v2.trainer.rl.rewards import (
    BaseRewardScorer,
    CompositeScorer,
    Trajectory,
    available_scorers,
    create_composite_scorer,
    default_scorer,
    get_scorer,
    open_reward_context,
    register_scorer,
    reward_functions,
    wrap_user_reward,
)

SEED_NAMES = {
    "lean_tactic", "lean_proof", "format", "efficiency", "difficulty", "overlong", "algebra",
    "number_theory", "analysis", "combinatorics", "geometry",
}  # fmt: skip


@pytest.fixture(scope="module")
def theorems():
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


@pytest.fixture(scope="module")
def ideal(theorems):
    """Ideal.span_singleton_eq_span_singleton: a real algebra goal (ideals of a ring)."""
    return next(t for t in theorems if t.full_name == "Ideal.span_singleton_eq_span_singleton")


def test_every_contract_name_is_registered() -> None:
    assert SEED_NAMES <= set(available_scorers())
    for name in SEED_NAMES:
        assert get_scorer(name).name == name


def test_upstream_calls_work_as_written(ideal) -> None:
    state = ideal.traced_tactics[0].state_before
    scorer = get_scorer("algebra")
    composite = create_composite_scorer(
        "algebra", "efficiency", weights={"algebra": 0.6, "efficiency": 0.4}
    )
    assert isinstance(composite, CompositeScorer)
    ring = Trajectory(completion="ring", state=state)
    simp = Trajectory(completion="simp\nrfl\nrfl", state=state)
    a_ring, _ = scorer.score(ring)
    reward, info = composite.score(ring)
    assert a_ring > 0
    assert info["algebra"] == a_ring and info["efficiency"] == 1.0
    assert reward == pytest.approx(0.6 * a_ring + 0.4 * 1.0)
    reward_simp, info_simp = composite.score(simp)
    assert info_simp["algebra"] == 0.0 and info_simp["efficiency"] == pytest.approx(1 / 3)
    assert reward_simp == pytest.approx(0.4 / 3)
    assert "algebra_info" in info and info["algebra_info"]["goal_features"] >= 1


def test_custom_scorer_subclass(monkeypatch) -> None:
    from lean_dojo_v2.trainer.rl.rewards import registry

    monkeypatch.setattr(registry, "_registry", {})

    class LengthScorer(BaseRewardScorer):
        def score(self, trajectory, **kwargs):
            return float(len(trajectory.completion)), {"chars": len(trajectory.completion)}

    assert LengthScorer.name == "length_scorer"
    register_scorer("length", LengthScorer)
    assert "length" in available_scorers()
    composite = create_composite_scorer(get_scorer("length"), "format", weights={"format": 2.0})
    reward, info = composite.score(Trajectory(completion="simp"))
    assert reward == 4.0 + 2.0 and info["length_scorer_info"] == {"chars": 4}
    with pytest.raises(ValueError, match="already registered"):
        register_scorer("length", LengthScorer)
    with pytest.raises(ValueError, match="already registered"):
        register_scorer("format", LengthScorer)


def test_unknown_names_are_one_line_errors_listing_the_valid_ones() -> None:
    with pytest.raises(UnknownRewardError) as exc:
        get_scorer("algebraic")
    message = str(exc.value)
    assert "\n" not in message and "'algebraic'" in message and "did you mean 'algebra'" in message
    assert all(name in message for name in SEED_NAMES)
    assert isinstance(exc.value, TrainerError) and isinstance(exc.value, ValueError)
    assert exc.value.valid == available_scorers()
    with pytest.raises(UnknownRewardError):
        create_composite_scorer("format", "nope")
    # A weight for a name that is not a part of the composite.
    with pytest.raises(UnknownRewardError, match="valid names: algebra, efficiency") as exc:
        create_composite_scorer("algebra", "efficiency", weights={"format": 1.0})
    assert "\n" not in str(exc.value)


def test_default_scorers(theorems) -> None:
    with open_reward_context(theorems, backend="replay", num_envs=1) as ctx:
        tactic = default_scorer("tactic", ctx)
        assert tactic.weights == {"lean_tactic": 1.0, "format": 0.1}
        assert tactic.scorers[0].context is ctx
        assert default_scorer("proof").weights == {"lean_proof": 1.0, "format": 0.1}


# ------------------------------------------------------------------------------- TRL adapter
def trl_call(rows, completions, ids=None):
    """The keyword arguments TRL's ``_calculate_rewards`` passes (columns repeated per sample)."""
    return dict(
        prompts=["<prompt>"] * len(completions),
        completions=completions,
        completion_ids=ids if ids is not None else [[1, 2, 3]] * len(completions),
        state=[r["state"] for r in rows],
        theorem_key=[r["theorem_key"] for r in rows],
        step=[r["step"] for r in rows],
        recorded_tactic=[r["recorded_tactic"] for r in rows],
        difficulty=[r["difficulty"] for r in rows],
        mode=[r["mode"] for r in rows],
        trainer_state=object(),
        log_extra=lambda column, values: None,
        log_metric=lambda name, value: None,
    )


def test_reward_functions_score_a_trl_batch(theorems) -> None:
    thm = next(t for t in theorems if t.full_name == "CancelDenoms.cancel_factors_lt")
    last = len(thm.traced_tactics) - 1
    row = dict(state=thm.traced_tactics[last].state_before,
               theorem_key=f"{thm.file_path}::{thm.full_name}", step=last,
               recorded_tactic=thm.traced_tactics[last].tactic, difficulty=0.5, mode="tactic")  # fmt: skip
    completions = [thm.traced_tactics[last].tactic + "<|im_end|>", "simp", "```lean\nsimp\n```"]
    with open_reward_context(theorems, backend="replay", num_envs=2) as ctx:
        scorers = [get_scorer("lean_tactic"), get_scorer("format"), get_scorer("overlong",
                                                                              max_len=4, cache=2)]  # fmt: skip
        funcs = reward_functions(scorers, ctx)
        # TRL names a reward function by its __name__ (trl.trainer.utils.get_callable_name;
        # importing trl here would cost seconds)
        assert [f.__name__ for f in funcs] == ["lean_tactic", "format", "overlong"]
        kwargs = trl_call([row] * 3, completions, ids=[[1] * 2, [1] * 3, [1] * 5])
        lean, fmt, over = (f(**kwargs) for f in funcs)
        assert lean == [1.0, 0.0, 0.0]
        assert fmt == [1.0, 1.0, 0.0]
        assert over == [0.0, -0.5, -1.0]
        assert ctx.last_backend == "replay"
        assert set(ctx.stats()) >= {"backend", "checks", "cache_hits", "errors", "timeouts",
                                    "crashes"}  # fmt: skip
    with pytest.raises(RewardFunctionError, match="distinct"):
        reward_functions([get_scorer("format"), get_scorer("format")], None)


# --------------------------------------------------------------------------- user functions
def test_wrap_user_reward_accepts_a_tensor_and_a_list() -> None:
    import torch

    def reward_func(completions, **kwargs):
        return torch.tensor([float(len(c)) for c in completions])

    def as_list(completions, **kwargs):
        assert "state" in kwargs and "trainer_state" in kwargs
        return [1, 0.5, None]

    def named(completions, state):  # names only the columns it reads
        return [float(s == "x") for s in state]

    rows = [dict(state="x", theorem_key="", step=0, recorded_tactic="", difficulty=0.0,
                 mode="tactic")] * 3  # fmt: skip
    kwargs = trl_call(rows, ["a", "bb", "ccc"])
    wrapped = wrap_user_reward(reward_func)
    assert wrapped.__name__ == "reward_func"
    assert wrapped(**kwargs) == [1.0, 2.0, 3.0]
    out = wrap_user_reward(as_list)(**kwargs)
    assert out[:2] == [1.0, 0.5] and out[2] != out[2]  # None becomes NaN, as TRL does
    assert wrap_user_reward(named)(**kwargs) == [1.0, 1.0, 1.0]
    assert wrap_user_reward(lambda completions, **kw: [0.0] * 3).__name__ == "reward_func"


@pytest.mark.parametrize(
    "func, match",
    [
        (lambda x: [0.0], "needs 'x'"),
        (lambda prompts: [0.0], "does not accept completions"),
        (lambda completions, /, **kw: [0.0], "positional-only"),
        (42, "must be callable"),
    ],
)
def test_wrap_user_reward_refuses_a_wrong_signature(func, match) -> None:
    with pytest.raises(RewardFunctionError, match=match) as exc:
        wrap_user_reward(func)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "result, match",
    [
        ([1.0, 2.0], "returned 2 rewards for 3 completions"),
        ("torch2d", "shape"),
        ("nope", "returned str"),
        ([1.0, "a", 2.0], "every reward must be a number"),
    ],
)
def test_wrap_user_reward_checks_the_result_at_call_time(result, match) -> None:
    import torch

    value = torch.zeros(3, 1) if result == "torch2d" else result
    wrapped = wrap_user_reward(lambda completions, **kwargs: value)
    with pytest.raises(RewardFunctionError, match=match) as exc:
        wrapped(prompts=["p"] * 3, completions=["a", "b", "c"], completion_ids=None)
    assert "\n" not in str(exc.value)
