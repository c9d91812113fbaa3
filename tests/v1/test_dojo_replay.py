"""``Dojo`` through replay of the bundled traced sample (real LeanDojo Benchmark 4 records): v1's
state ids, ``pp`` and ``message``, backtracking to earlier states, finished and foreign states,
``sorry``, the hard timeout, the replay notice, and bad input as v1's exception types."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lean_dojo_v2.data import goal_texts, sample_dataset_path
from lean_dojo_v2.errors import DatasetNotFoundError, LeanDojoError
from lean_dojo_v2.v1 import (
    Dojo,
    DojoCrashError,
    DojoHardTimeoutError,
    DojoInitError,
    InvalidStateError,
    LeanError,
    LeanGitRepo,
    ProofFinished,
    ProofGivenUp,
    TacticState,
    Theorem,
    UnknownStateError,
    V1ArgumentError,
    check_proof,
    is_available_in_cache,
    use_dataset,
)

from .conftest import MULTI_GOAL, v1_theorem


@pytest.fixture(autouse=True)
def sample_dataset() -> None:
    use_dataset(sample_dataset_path())


def test_recorded_proof_replays_with_v1_ids_pp_and_messages(proofs) -> None:
    thm = proofs[MULTI_GOAL]
    steps = thm.traced_tactics
    with Dojo(v1_theorem(thm)) as (dojo, init):
        assert dojo.backend == "replay" and not dojo.is_successful
        assert (init.id, init.message) == (0, None)
        assert init.pp == "\n\n".join(goal_texts(steps[0].state_before))
        first = dojo.run_tac(init, steps[0].tactic)
        assert isinstance(first, TacticState) and (first.id, first.message) == (1, "")
        # Several goals: Lean's printing, goals separated by one blank line, no "2 goals" header.
        blocks = first.pp.split("\n\n")
        assert first.num_goals == 2 == len(blocks) and all(b.count("⊢") == 1 for b in blocks)
        assert first.pp == "\n\n".join(goal_texts(steps[0].state_after))
        assert not first.pp.startswith("2 goals")
        # A failing tactic takes no id; the next success takes the next one.
        assert isinstance(dojo.run_tac(first, "exact foo_bar_baz"), LeanError)
        second = dojo.run_tac(first, steps[1].tactic)
        assert isinstance(second, TacticState) and second.id == 2 and second.num_goals == 1
        done = dojo.run_tac(second, steps[2].tactic)
        assert done == ProofFinished(3) and done.message == ""
        assert dojo.is_successful


def test_earlier_states_stay_usable_and_equal_states_get_new_ids(proofs) -> None:
    thm = proofs[MULTI_GOAL]
    tactic = thm.traced_tactics[0].tactic
    with Dojo(v1_theorem(thm)) as (dojo, init):
        a = dojo.run_tac(init, tactic)
        b = dojo.run_tac(init, tactic)  # back to the initial state after moving on
        assert a == b and (a.id, b.id) == (1, 2)  # v1: equal by pp, a new id each time
        again = dojo.run_tac(a, thm.traced_tactics[1].tactic)
        assert isinstance(again, TacticState) and again.id == 3


def test_finished_error_and_foreign_states_are_refused_as_v1_does(proofs) -> None:
    thm = proofs[MULTI_GOAL]
    with Dojo(v1_theorem(thm)) as (dojo, init):
        for bad in (ProofFinished(1), LeanError("x"), ProofGivenUp(), init.pp):
            with pytest.raises(InvalidStateError, match="TacticState") as info:
                dojo.run_tac(bad, "simp")  # type: ignore[arg-type]
            assert isinstance(info.value, RuntimeError)  # v1 raised RuntimeError
        # A state this Dojo did not make: v1's REPL died on an unknown id (DojoCrashError).
        with pytest.raises(UnknownStateError, match="not made by this Dojo") as info:
            dojo.run_tac(TacticState(init.pp, 42), "simp")
        assert isinstance(info.value, DojoCrashError)
        with pytest.raises(UnknownStateError):
            dojo.run_tac(TacticState("⊢ False", 0), "simp")
        assert isinstance(dojo.run_tac(init, thm.traced_tactics[0].tactic), TacticState)


def test_sorry_and_admit_give_proof_given_up(proofs) -> None:
    thm = proofs[MULTI_GOAL]
    with Dojo(v1_theorem(thm)) as (dojo, init):
        assert dojo.run_tac(init, "sorry") == ProofGivenUp()
        assert dojo.run_tac(init, "admit") == ProofGivenUp()
        assert not dojo.is_successful


def test_tactic_that_is_not_a_string_is_v1s_assertion(proofs) -> None:
    with Dojo(v1_theorem(proofs[MULTI_GOAL])) as (dojo, init):
        for bad in (None, 3, ["simp"], b"simp"):
            with pytest.raises(V1ArgumentError, match="Invalid tactic") as info:
                dojo.run_tac(init, bad)  # type: ignore[arg-type]
            assert isinstance(info.value, AssertionError) and "\n" not in str(info.value)
        with pytest.raises(V1ArgumentError, match="lone surrogate"):
            dojo.run_tac(init, "simp \ud800")


def test_exit_closes_and_a_closed_dojo_says_so(proofs) -> None:
    dojo = Dojo(v1_theorem(proofs[MULTI_GOAL]))
    with pytest.raises(ZeroDivisionError):  # __exit__ never swallows an exception
        with dojo as (_, init):
            env = dojo.env
            1 / 0  # noqa: B018
    assert dojo.env is None and env._closed
    with pytest.raises(InvalidStateError, match="not open"):
        dojo.run_tac(init, "simp")


def test_default_limits_are_v1s(proofs) -> None:
    thm = v1_theorem(proofs[MULTI_GOAL])
    assert (Dojo(thm).timeout, Dojo(thm).hard_timeout) == (600, None)  # v1 4.x
    assert Dojo(thm, hard_timeout=90).timeout == 90  # v1 2.0: the session's limit alone
    assert Dojo(thm, 30, hard_timeout=90).timeout == 30


def test_hard_timeout_ends_the_session(proofs, monkeypatch) -> None:
    import lean_dojo_v2.v1.dojo as dojo_module

    now = [1000.0]
    monkeypatch.setattr(dojo_module.time, "monotonic", lambda: now[0])
    thm = proofs[MULTI_GOAL]
    with Dojo(v1_theorem(thm), hard_timeout=5) as (dojo, init):
        assert isinstance(dojo.run_tac(init, thm.traced_tactics[0].tactic), TacticState)
        now[0] += 6
        with pytest.raises(DojoHardTimeoutError, match="hard_timeout of 5 s"):
            dojo.run_tac(init, thm.traced_tactics[0].tactic)
        assert dojo.has_timedout


def test_replay_notice_is_one_line_once(proofs, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.v1"):
        for _ in range(2):
            with Dojo(v1_theorem(proofs[MULTI_GOAL])):
                pass
    notices = [r.getMessage() for r in caplog.records if "replayed" in r.getMessage()]
    assert len(notices) == 1 and "\n" not in notices[0]
    assert str(sample_dataset_path()) in notices[0] and "only tactics recorded" in notices[0]


def _starting(theorem: Theorem) -> str:
    with pytest.raises(DojoInitError) as info:
        with Dojo(theorem):
            pass
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_theorems_are_dojo_init_errors(proofs, sample_theorems) -> None:
    thm = proofs[MULTI_GOAL]
    repo = LeanGitRepo(thm.url, thm.commit)
    assert "not in the traced dataset" in _starting(Theorem(repo, thm.file_path, "No.such_thm"))
    wrong_file = _starting(Theorem(repo, "Mathlib/Other.lean", thm.full_name))
    assert f"it is in {thm.file_path}" in wrong_file
    for outside in ("../../etc/passwd.lean", "/etc/passwd.lean", "Mathlib/../../x.lean"):
        assert "outside the repository" in _starting(Theorem(repo, outside, thm.full_name))
    other_repo = Theorem(
        LeanGitRepo("https://github.com/o/r", thm.commit), thm.file_path, thm.full_name
    )
    assert "not for https://github.com/o/r" in _starting(other_repo)
    other_commit = Theorem(LeanGitRepo(thm.url, "0" * 40), thm.file_path, thm.full_name)
    assert f"at commit {thm.commit}" in _starting(other_commit)
    term = next(t for t in sample_theorems if not t.traced_tactics)
    assert "no recorded tactic proof" in _starting(v1_theorem(term))


def test_without_lean_or_dataset_the_error_says_what_to_do(proofs) -> None:
    use_dataset(None)
    message = _starting(v1_theorem(proofs[MULTI_GOAL]))
    assert "use_dataset(PATH)" in message and "LEAN_DOJO_V2_V1_DATASET" in message


def test_dataset_from_the_environment_and_bad_paths(proofs, monkeypatch, tmp_path: Path) -> None:
    use_dataset(None)
    monkeypatch.setenv("LEAN_DOJO_V2_V1_DATASET", str(sample_dataset_path()))
    with Dojo(v1_theorem(proofs[MULTI_GOAL])) as (dojo, _):
        assert dojo.backend == "replay"
    with pytest.raises(DatasetNotFoundError, match="no traced dataset at"):
        use_dataset(tmp_path / "missing")
    monkeypatch.setenv("LEAN_DOJO_V2_V1_DATASET", str(tmp_path / "missing"))
    with pytest.raises(DatasetNotFoundError, match="LEAN_DOJO_V2_V1_DATASET"):
        with Dojo(v1_theorem(proofs[MULTI_GOAL])):
            pass


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds > 0"),
        ({"timeout": float("inf")}, "timeout must be"),
        ({"timeout": "600"}, "timeout must be"),
        ({"hard_timeout": -1}, "hard_timeout must be"),
        ({"additional_imports": "Mathlib"}, "list of module names"),
        ({"additional_imports": ["Mathlib Tactic"]}, "module names"),
    ],
)
def test_bad_arguments(proofs, kwargs, match) -> None:
    with pytest.raises(V1ArgumentError, match=match):
        Dojo(v1_theorem(proofs[MULTI_GOAL]), **kwargs)


def test_entries_that_are_not_theorems(proofs) -> None:
    thm = v1_theorem(proofs[MULTI_GOAL])
    with pytest.raises(DojoInitError, match="command mode"):
        Dojo((thm.repo, thm.file_path, 10))  # type: ignore[arg-type]
    with pytest.raises(V1ArgumentError, match="must be a Theorem"):
        Dojo(proofs[MULTI_GOAL])  # type: ignore[arg-type]


def test_check_proof_and_is_available_in_cache(proofs) -> None:
    thm = proofs[MULTI_GOAL]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    assert check_proof(v1_theorem(thm), proof)
    assert not check_proof(v1_theorem(thm), "simp")
    assert is_available_in_cache(LeanGitRepo(thm.url, thm.commit))
    assert not is_available_in_cache(LeanGitRepo("https://github.com/o/r", thm.commit))


def test_every_v1_error_is_a_library_error() -> None:
    from lean_dojo_v2.v1 import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), LeanDojoError)
