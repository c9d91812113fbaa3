"""ReplayEnv on the bundled real sample and on miniF2F proofs recorded by miniCTX."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from lean_dojo_v2.data import Theorem, goal_texts, load_theorems, sample_dataset_path
from lean_dojo_v2.errors import LeanDojoError
from lean_dojo_v2.interaction import (
    EnvClosedError,
    InteractionError,
    InvalidRequestError,
    ProofEnv,
    ProofFinished,
    ProofState,
    ReplayEnv,
    TacticError,
    TransitionTable,
    UnknownTheoremError,
    split_tactics,
)

# A record whose proof LeanDojo did not record completely: the step that splits `case h` into
# `h.mp` / `h.mpr` is missing (LeanDojo drops, among others, every tactic whose text contains `·`),
# so no recorded transition leaves the `case h` state. No replay can finish it.
INCOMPLETE_RECORDS = {"NFA.toDFA_correct"}


@pytest.fixture(scope="module")
def theorems() -> list[Theorem]:
    return load_theorems(sample_dataset_path())


@pytest.fixture(scope="module")
def env(theorems) -> ReplayEnv:
    return ReplayEnv.from_theorems(theorems)


def replay_recorded(env: ReplayEnv, thm: Theorem, max_steps: int = 100):
    """At each state, try the theorem's recorded tactics in order; take the first that applies."""
    state = env.start(thm)
    used = []
    for _ in range(max_steps):
        if not isinstance(state, ProofState):
            return state, used
        for tac in thm.traced_tactics:
            result = env.run_tactic(state, tac.tactic)
            if not isinstance(result, TacticError):
                state = result
                used.append(tac.tactic)
                break
        else:
            return state, used
    raise AssertionError(f"{thm.full_name}: no end after {max_steps} steps")


def test_every_complete_record_replays_to_proof_finished(env, theorems):
    proofs = [t for t in theorems if t.traced_tactics]
    assert len(proofs) == 51
    finished = []
    for thm in proofs:
        result, used = replay_recorded(env, thm)
        if thm.full_name in INCOMPLETE_RECORDS:
            assert isinstance(result, ProofState)
            continue
        assert isinstance(result, ProofFinished), (thm.full_name, used)
        assert result.backend == "replay"
        finished.append(thm.full_name)
    assert len(finished) == 50


def test_incomplete_record_is_a_gap_in_the_data(env, theorems):
    thm = next(t for t in theorems if t.full_name == "NFA.toDFA_correct")
    stuck, _ = replay_recorded(env, thm)
    assert stuck.goals[0].startswith("case h\n")
    # No recorded tactic of the whole sample starts from this state: the step is missing upstream.
    befores = {tuple(goal_texts(tac.state_before)) for t in theorems for tac in t.traced_tactics}
    assert not any(stuck.goals[: len(b)] == b for b in befores)
    assert all(
        isinstance(env.run_tactic(stuck, tac.tactic), TacticError)
        for t in theorems
        for tac in t.traced_tactics
    )


def test_bullets_focus_a_prefix_of_the_goals(env, theorems):
    """After a tactic opens several goals, the next recorded tactic (inside a bullet) was recorded
    with only its own goal; it applies to that prefix and the other goals stay, in order."""
    cases = 0
    for thm in theorems:
        if thm.full_name in INCOMPLETE_RECORDS or not thm.traced_tactics:
            continue
        state = env.start(thm)
        for tac in thm.traced_tactics:
            if not isinstance(state, ProofState):
                break
            result = env.run_tactic(state, tac.tactic)
            if isinstance(result, TacticError):
                continue
            focused = goal_texts(tac.state_before)
            if state.num_goals > len(focused):
                # Recorded with fewer goals than are open: the untouched goals carry over.
                rest = state.goals[len(focused) :]
                after = result.goals if isinstance(result, ProofState) else ()
                assert tuple(after[len(after) - len(rest) :]) == rest
                cases += 1
            state = result
    assert cases >= 3


def test_nested_by_tactic_is_recorded_with_its_own_goal(env, theorems):
    thm = next(t for t in theorems if t.full_name == "IsGroupHom.inv_ker_one'")
    have, rwa, nested = (t.tactic for t in thm.traced_tactics)
    assert " := by " in have
    state = env.start(thm)
    # The nested `rw` was recorded against the `have`'s own goal, not the theorem's state.
    assert isinstance(env.run_tactic(state, nested), TacticError)
    after_have = env.run_tactic(state, have)
    assert isinstance(after_have, ProofState)
    assert isinstance(env.run_tactic(after_have, rwa), ProofFinished)
    nested_goal = thm.traced_tactics[2].state_before
    assert env.table.apply(goal_texts(nested_goal), nested) == []


def test_metavariable_goal_matches_its_assigned_form(env, theorems):
    thm = next(t for t in theorems if t.full_name == "Cardinal.mk_bounded_subset_le")
    result, used = replay_recorded(env, thm)
    assert isinstance(result, ProofFinished)
    # The goal still printed `?refine_1` when `rintro` ran; the record shows it assigned.
    assert used.index("rintro ⟨t, _, h2t⟩") > used.index("use fun t => (↑) ⁻¹' t.1")


def test_modified_tactics_are_rejected(env, theorems):
    thm = next(t for t in theorems if len(t.traced_tactics) >= 2)
    state = env.start(thm)
    first = thm.traced_tactics[0].tactic
    for bad in (first + " x", first.replace(" ", "  ") + "!", "simp", "exact?"):
        result = env.run_tactic(state, bad)
        assert isinstance(result, TacticError) and result.kind == "not_recorded"
        assert result.backend == "replay"
    # White space differences are not modifications.
    assert isinstance(
        env.run_tactic(state, "  " + first.replace(" ", "\n  ") + "\n"), (ProofState, ProofFinished)
    )


def test_sorry_is_never_a_step(env, theorems):
    thm = next(t for t in theorems if t.traced_tactics)
    state = env.start(thm)
    for tactic in ("sorry", "exact sorry", "· sorry"):
        result = env.run_tactic(state, tactic)
        assert isinstance(result, TacticError) and result.kind == "sorry"


def test_start_errors(env, theorems):
    term_mode = next(t for t in theorems if not t.traced_tactics)
    with pytest.raises(UnknownTheoremError, match="term-mode"):
        env.start(term_mode)
    with pytest.raises(UnknownTheoremError):
        env.start("no.such.theorem")


def test_verify_accepts_recorded_proofs_and_rejects_others(env, theorems):
    thm = next(t for t in theorems if t.full_name == "IsGroupHom.inv_ker_one'")
    proof = "by\n  " + "\n  ".join(t.tactic for t in thm.traced_tactics[:2])
    verdict = env.verify(thm, proof)
    assert (
        verdict.ok
        and verdict.checked_by == "replay"
        and "not re-checked by Lean" in verdict.messages[0]
    )
    assert not env.verify(thm, "by\n  " + thm.traced_tactics[0].tactic)  # goals left
    bad = env.verify(thm, "by\n  simp")
    assert not bad.ok and "tactic 1" in bad.messages[0]
    assert not env.verify(thm, proof + "\n  rfl").ok  # a tactic after the proof ended


def test_multi_line_tactic_round_trips_through_split_tactics(env, theorems):
    thm = next(t for t in theorems if any("\n" in tac.tactic for tac in t.traced_tactics))
    tac = next(x for x in thm.traced_tactics if "\n" in x.tactic)
    proof = "by\n  " + tac.tactic.replace("\n", "\n  ")
    assert split_tactics(proof) == [tac.tactic.replace("\n", "\n  ")]
    state = ProofState(tuple(goal_texts(tac.state_before)), "replay")
    assert not isinstance(env.run_tactic(state, split_tactics(proof)[0]), TacticError)


def test_minif2f_proofs_recorded_by_minictx(minif2f_theorems):
    """A second source of real transitions (miniF2F, Lean 4 + Mathlib): whole proofs from the start."""
    theorems = minif2f_theorems
    env = ReplayEnv.from_theorems(theorems)
    ok = 0
    for thm in theorems:
        proof = "by\n" + "\n".join(
            "  " + t.tactic.replace("\n", "\n  ") for t in thm.traced_tactics
        )
        if env.verify(thm, proof).ok:
            ok += 1
    assert ok == len(theorems) >= 50


def test_from_dataset_and_context_manager(theorems):
    with ReplayEnv.from_dataset(sample_dataset_path()) as env:
        assert isinstance(env, ProofEnv)
        assert len(env.table) == 158
    with pytest.raises(RuntimeError):
        env.start(theorems[1])


def test_async_flavour(env, theorems):
    thm = next(t for t in theorems if t.full_name == "IsGroupHom.inv_ker_one'")

    async def run():
        async with env.as_async() as aenv:
            state = await aenv.start(thm)
            state = await aenv.run_tactic(state, thm.traced_tactics[0].tactic)
            return await aenv.run_tactic(state, thm.traced_tactics[1].tactic)

    assert isinstance(asyncio.run(run()), ProofFinished)


def test_table_prefers_the_longest_recorded_prefix(theorems):
    table = TransitionTable()
    assert table.apply([], "simp") is None
    assert len(table) == 0
    # The sample's one tactic recorded on two goals (``exacts [...]`` closes both), and the same
    # tactic as if recorded inside a bullet: on the first goal only, leaving the second goal.
    thm = next(t for t in theorems if t.full_name == "MeasureTheory.OuterMeasure.comap_ofFunction")
    both = next(t for t in thm.traced_tactics if t.tactic.startswith("exacts"))
    first, second = goal_texts(both.state_before)
    focused = replace(both, state_before=first, state_after=second)
    assert goal_texts(focused.state_before) == [first]
    for order in ([both], [focused]), ([focused], [both]):
        table = TransitionTable()
        for tactics in order:
            table.add_theorem(replace(thm, traced_tactics=tactics))
        assert len(table) == 2
        # Both records apply to [first, second]; the longer prefix (both goals) wins.
        assert table.apply([first, second], both.tactic) == []
        assert table.apply([first, second, "⊢ True"], both.tactic) == ["⊢ True"]
        # Only the shorter one applies to [first] alone.
        assert table.apply([first], both.tactic) == [second]
        state = ProofState((first, second), "replay")
        assert isinstance(ReplayEnv(table).run_tactic(state, both.tactic), ProofFinished)


def test_replay_verify_accepts_crlf_line_endings(theorems):
    env = ReplayEnv.from_theorems(theorems)
    thm = next(t for t in theorems if t.full_name == "IsGroupHom.inv_ker_one'")
    proof = "by\n  " + "\n  ".join(t.tactic for t in thm.traced_tactics[:2])
    assert env.verify(thm, proof).ok
    assert env.verify(thm, proof.replace("\n", "\r\n")).ok
    assert env.verify(thm, proof.replace("\n", "\r")).ok  # old Mac line ends
    assert split_tactics(proof.replace("\n", "\r\n")) == split_tactics(proof)


def test_replay_after_close_raises_the_shared_env_closed_error(theorems):
    env = ReplayEnv.from_theorems(theorems)
    thm = next(t for t in theorems if t.traced_tactics)
    state = env.start(thm)
    env.close()
    for call in (
        lambda: env.start(thm),
        lambda: env.run_tactic(state, thm.traced_tactics[0].tactic),
        lambda: env.verify(thm, "by\n  " + thm.traced_tactics[0].tactic),
    ):
        with pytest.raises(EnvClosedError) as info:
            call()
        assert isinstance(info.value, InteractionError)  # the contract PantographEnv keeps
        assert isinstance(info.value, LeanDojoError) and "closed" in str(info.value)


@pytest.mark.parametrize(
    "tactic, timeout",
    [
        ("rfl\ud800", None),  # a lone surrogate: cannot be encoded for Lean
        ("\udfff", 5.0),
        (None, None),
        (b"rfl", None),
        ("rfl", float("nan")),
        ("rfl", "5"),
        ("rfl", -1),
        ("rfl", 0),
        ("rfl", 0.0),
        ("rfl", float("inf")),
        ("rfl", True),
    ],
)
def test_replay_run_tactic_rejects_bad_arguments_up_front(theorems, tactic, timeout):
    env = ReplayEnv.from_theorems(theorems)
    thm = next(t for t in theorems if t.traced_tactics)
    state = env.start(thm)
    with pytest.raises(InvalidRequestError) as info:
        env.run_tactic(state, tactic, timeout)
    assert isinstance(info.value, ValueError) and isinstance(info.value, InteractionError)
    with pytest.raises(InvalidRequestError):
        asyncio.run(env.as_async().run_tactic(state, tactic, timeout))


def test_replay_run_tactic_accepts_valid_timeouts(theorems):
    env = ReplayEnv.from_theorems(theorems)
    thm = next(t for t in theorems if t.traced_tactics)
    state = env.start(thm)
    tactic = thm.traced_tactics[0].tactic
    for timeout in (None, 1, 0.5, 30.0):
        assert not isinstance(env.run_tactic(state, tactic, timeout), TacticError)
