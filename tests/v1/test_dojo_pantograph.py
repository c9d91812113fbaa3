"""``Dojo`` on ``PantographEnv`` against the fake Pantograph REPL (tests/fake_pantograph: the wire
protocol exactly, states recorded by real Lean runs): several goals in ``pp``, Lean's errors,
earlier and stale states, a tactic timeout, a killed and a crashed REPL, ``sorry``; and how the
built project is found (use_project, the environment, a local checkout, the trace cache)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lean_dojo_v2.data import goal_texts, sample_dataset_path
from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.v1 import (
    Dojo,
    DojoCrashError,
    DojoInitError,
    DojoTacticTimeoutError,
    LeanError,
    LeanGitRepo,
    ProofFinished,
    ProofGivenUp,
    TacticState,
    Theorem,
    UnknownStateError,
    is_available_in_cache,
    use_dataset,
    use_project,
)
from lean_dojo_v2.v1.backend import find_project

from .conftest import MULTI_GOAL, fake_project, v1_theorem

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path, fake_lean: Path, proofs) -> Path:
    root = fake_project(tmp_path, list(proofs.values()))
    use_project(root)
    return root


def test_a_session_behaves_as_in_v1(project, proofs) -> None:
    thm = proofs[MULTI_GOAL]
    steps = thm.traced_tactics
    with Dojo(v1_theorem(thm), timeout=20) as (dojo, init):
        assert dojo.backend == "pantograph"
        assert (init.id, init.message) == (0, None)
        assert init.pp == "\n\n".join(goal_texts(steps[0].state_before))
        first = dojo.run_tac(init, steps[0].tactic)
        # Two goals, printed as Lean prints them: one blank line between goals.
        assert isinstance(first, TacticState) and (first.id, first.num_goals) == (1, 2)
        assert first.pp == "\n\n".join(goal_texts(steps[0].state_after))
        assert [g.conclusion for g in first.goals] == ["0 < ad * bd", "0 < 1 / gcd"]
        error = dojo.run_tac(first, "exact no_such_lemma")
        assert isinstance(error, LeanError) and "no_such_lemma" in error.error
        assert dojo.run_tac(first, "sorry") == ProofGivenUp()
        # An earlier state is continued again (search backtracks); it takes the next id.
        again = dojo.run_tac(init, steps[0].tactic)
        assert again == first and again.id == 2
        second = dojo.run_tac(first, steps[1].tactic)
        assert isinstance(second, TacticState) and second.id == 3
        with pytest.raises(UnknownStateError):
            dojo.run_tac(TacticState(second.pp, 17), steps[2].tactic)
        done = dojo.run_tac(second, steps[2].tactic)
        assert isinstance(done, ProofFinished) and done.tactic_state_id == 4
        assert dojo.is_successful and not dojo.is_crashed
        env = dojo.env
    assert env._closed and env.client.pid is None  # __exit__ stopped the REPL


def test_a_tactic_past_the_timeout_raises_and_the_session_goes_on(project, proofs) -> None:
    thm = proofs[MULTI_GOAL]
    with Dojo(v1_theorem(thm), timeout=1) as (dojo, init):
        started = time.monotonic()
        with pytest.raises(DojoTacticTimeoutError, match="timeout of 1 s"):
            dojo.run_tac(init, "fake_sleep 20000")
        assert time.monotonic() - started < 10 and dojo.has_timedout
        # The REPL interrupted the tactic and lives on: the states are still there.
        assert isinstance(dojo.run_tac(init, thm.traced_tactics[0].tactic), TacticState)


def test_a_killed_repl_is_a_crash_and_its_states_are_stale(project, proofs) -> None:
    thm = proofs[MULTI_GOAL]
    with Dojo(v1_theorem(thm), timeout=20) as (dojo, init):
        first = dojo.run_tac(init, thm.traced_tactics[0].tactic)
        os.kill(dojo.env.client.pid, signal.SIGKILL)
        with pytest.raises(DojoCrashError, match="the Lean process died") as info:
            dojo.run_tac(first, thm.traced_tactics[1].tactic)
        assert type(info.value) is DojoCrashError and dojo.is_crashed
        assert "\n" not in str(info.value)
        # As in v1, the Dojo is dead from then on, for every state.
        with pytest.raises(DojoCrashError, match="died earlier"):
            dojo.run_tac(init, thm.traced_tactics[0].tactic)


def test_a_crashing_tactic_is_a_crash(project, proofs) -> None:
    with Dojo(v1_theorem(proofs[MULTI_GOAL]), timeout=20) as (dojo, init):
        with pytest.raises(DojoCrashError, match="the Lean process died"):
            dojo.run_tac(init, "fake_crash")
        assert dojo.is_crashed


def test_theorems_outside_the_project(project, proofs) -> None:
    thm = proofs[MULTI_GOAL]
    repo = LeanGitRepo(thm.url, thm.commit)
    with pytest.raises(DojoInitError, match="is not a file of the repository"):
        with Dojo(Theorem(repo, "Mathlib/Nowhere.lean", thm.full_name)):
            pass
    with pytest.raises(DojoInitError, match="outside the repository"):
        with Dojo(Theorem(repo, "../escape.lean", thm.full_name)):
            pass
    with pytest.raises(DojoInitError, match="cannot be started") as info:
        with Dojo(Theorem(repo, thm.file_path, "No.such_theorem")):
            pass
    assert "\n" not in str(info.value)


def test_a_repl_that_does_not_start_is_an_init_error(project, proofs) -> None:
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.3.0\n", encoding="utf-8")
    with pytest.raises(DojoInitError, match="cannot be started") as info:
        with Dojo(v1_theorem(proofs[MULTI_GOAL])):
            pass
    assert "\n" not in str(info.value)


def test_the_project_from_the_environment(tmp_path, fake_lean, proofs, monkeypatch) -> None:
    root = fake_project(tmp_path, [proofs[MULTI_GOAL]])
    monkeypatch.setenv("LEAN_DOJO_V2_V1_PROJECT", str(root))
    with Dojo(v1_theorem(proofs[MULTI_GOAL])) as (dojo, _):
        assert dojo.backend == "pantograph"
    with pytest.raises(ConfigError, match="not a built Lake project"):
        use_project(tmp_path)
    monkeypatch.setenv("LEAN_DOJO_V2_V1_PROJECT", str(tmp_path / "nothing"))
    with pytest.raises(ConfigError, match="LEAN_DOJO_V2_V1_PROJECT"):
        find_project(LeanGitRepo(proofs[MULTI_GOAL].url, proofs[MULTI_GOAL].commit))


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    out = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def test_a_local_checkout_and_the_trace_cache(tmp_path, fake_lean, proofs, monkeypatch) -> None:
    from lean_dojo_v2.config import reset_settings
    from lean_dojo_v2.lean_dojo.tracing import get_traced_repo_path

    thm = proofs[MULTI_GOAL]
    checkout = fake_project(tmp_path, [thm])
    (checkout / ".gitignore").write_text(".lake\n", encoding="utf-8")
    _git(checkout, "init", "-q")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-qm", "project")
    sha = _git(checkout, "rev-parse", "HEAD")
    theorem = Theorem(LeanGitRepo(str(checkout), sha), thm.file_path, thm.full_name)
    assert find_project(theorem.repo) == (checkout, "the local checkout")
    # The library's own (resolved) repository is taken for the same repository.
    assert Theorem(theorem.repo.resolved(), thm.file_path, thm.full_name) == theorem
    with Dojo(theorem) as (dojo, init):
        assert dojo.backend == "pantograph" and init.pp.endswith(
            thm.traced_tactics[0].state_before[-20:]
        )

    # Another commit checked out: the checkout no longer is the theorem's; the trace cache is.
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path / "cache"))
    reset_settings()
    try:
        (checkout / "Other.lean").touch()
        _git(checkout, "add", ".")
        _git(checkout, "commit", "-qm", "later")
        assert find_project(theorem.repo)[0] is None
        traced = get_traced_repo_path(theorem.repo.resolved())
        (traced / ".lake" / "build").mkdir(parents=True)
        (traced / "lakefile.lean").touch()
        assert find_project(theorem.repo) == (traced, "the trace cache")
        assert is_available_in_cache(theorem.repo)
    finally:
        reset_settings()


def test_a_remote_repository_never_traced_here_is_replayed(fake_lean, proofs, caplog) -> None:
    use_dataset(sample_dataset_path())
    thm = proofs[MULTI_GOAL]
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.v1"):
        with Dojo(v1_theorem(thm)) as (dojo, _):
            assert dojo.backend == "replay"
    assert "never traced on this machine" in caplog.text


def test_a_hung_tactic_times_out_and_then_the_session_is_dead(project, proofs) -> None:
    # The REPL cannot interrupt `fake_hang`: the client kills it after the limit plus a grace
    # period (5 s) and relaunches it, so the session's states are gone.
    with Dojo(v1_theorem(proofs[MULTI_GOAL]), timeout=1) as (dojo, init):
        with pytest.raises(DojoTacticTimeoutError):
            dojo.run_tac(init, "fake_hang")
        with pytest.raises(DojoCrashError, match="its states are gone"):
            dojo.run_tac(init, proofs[MULTI_GOAL].traced_tactics[0].tactic)


def test_the_hard_timeout_cuts_the_last_tactic_short(project, proofs) -> None:
    from lean_dojo_v2.v1 import DojoHardTimeoutError

    for timeout in (30, None):  # None: v1 2.0's Dojo(thm, hard_timeout=...), no tactic limit
        with Dojo(v1_theorem(proofs[MULTI_GOAL]), timeout, hard_timeout=2) as (dojo, init):
            started = time.monotonic()
            with pytest.raises(DojoHardTimeoutError, match="hard_timeout of 2 s"):
                dojo.run_tac(init, "fake_sleep 20000")
            assert time.monotonic() - started < 10
