"""``verify_proof`` / ``verify_proof_async``: the one whole-proof re-check, with retries."""

from __future__ import annotations

import asyncio

import pytest

from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.interaction import (
    EnvClosedError,
    EnvCrashedError,
    InteractionError,
    ReplayEnv,
    Verdict,
)
from lean_dojo_v2.prover import proof_text, verify_proof, verify_proof_async
from lean_dojo_v2.prover.verify import VerifyObserver

from ._search_helpers import FINISHED, Graph, GraphEnv, direct_replay_proof, sample_theorems
from ._search_helpers import theorem as crafted_theorem

GRAPH = Graph("R", {"R": {"t": "A"}, "A": {"a": FINISHED}})
THM = crafted_theorem()


class FlakyEnv(GraphEnv):
    """``verify`` raises ``errors[k]`` on its k-th call while there are any, then answers."""

    def __init__(self, *args, errors=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.errors = list(errors)
        self.verified: list[str] = []

    async def verify(self, theorem, proof):
        self.verified.append(proof)
        if self.errors:
            raise self.errors.pop(0)
        return await super().verify(theorem, proof)


@pytest.fixture(scope="module")
def replay():
    theorems = list(sample_theorems())
    env = ReplayEnv.from_theorems(theorems)
    for thm in theorems:
        proof = direct_replay_proof(env, thm)
        if proof:
            return env, thm, proof
    pytest.fail("the bundled sample has no directly replayable proof")


def test_blocking_verify_on_a_replay_env_accepts_the_proof_and_rejects_a_wrong_one(replay):
    env, thm, proof = replay
    verdict = verify_proof(env, thm, proof)
    assert isinstance(verdict, Verdict) and verdict.ok and verdict.checked_by == "replay"
    assert verify_proof(env, thm, proof_text(proof)).ok  # the tactic block as one string
    wrong = verify_proof(env, thm, proof[:-1] or ["rfl"])
    assert wrong is not None and not wrong.ok


def test_an_environment_failure_is_retried_on_the_next_environment():
    first = FlakyEnv(GRAPH, name="e0", errors=[EnvCrashedError("died")])
    second = FlakyEnv(GRAPH, name="e1")
    verdict = asyncio.run(verify_proof_async([first, second], THM, ["t", "a"]))
    assert verdict is not None and verdict.ok
    assert first.verified == ["t\na"] and second.verified == ["t\na"]


def test_first_env_picks_where_the_first_attempt_runs():
    envs = [FlakyEnv(GRAPH, name=f"e{i}") for i in range(3)]
    assert asyncio.run(verify_proof_async(envs, THM, ["t", "a"], first_env=2)).ok
    assert [len(e.verified) for e in envs] == [0, 0, 1]


def test_none_when_every_attempt_fails_and_retries_bound_the_attempts():
    env = FlakyEnv(GRAPH, errors=[InteractionError("refused")] * 5)
    assert verify_proof(env, THM, ["t", "a"], retries=2) is None
    assert len(env.verified) == 3
    env = FlakyEnv(GRAPH, errors=[InteractionError("refused")])
    assert verify_proof(env, THM, ["t", "a"], retries=0) is None
    assert verify_proof(env, THM, ["t", "a"], retries=0).ok  # the failure is used up


def test_a_closed_environment_and_a_bug_raise_instead_of_being_retried():
    env = FlakyEnv(GRAPH, errors=[EnvClosedError("closed")])
    with pytest.raises(EnvClosedError):
        verify_proof(env, THM, ["t", "a"], retries=3)
    assert len(env.verified) == 1
    env = FlakyEnv(GRAPH, errors=[RuntimeError("bug")])
    with pytest.raises(RuntimeError, match="bug"):
        verify_proof(env, THM, ["t", "a"])


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2"])
def test_bad_retries_are_config_errors(retries):
    with pytest.raises(ConfigError, match="retries"):
        verify_proof(GraphEnv(GRAPH), THM, ["t", "a"], retries=retries)


def test_blocking_verify_works_inside_a_running_event_loop():
    async def main():
        return verify_proof(GraphEnv(GRAPH), THM, ["t", "a"])

    assert asyncio.run(main()).ok


def test_the_observer_sees_each_attempt_failure_and_verdict():
    class Log(VerifyObserver):
        def __init__(self) -> None:
            self.events: list[str] = []

        def before_attempt(self) -> None:
            self.events.append("before")

        def attempt_done(self, seconds: float) -> None:
            assert seconds >= 0
            self.events.append("done")

        def env_failed(self, exc: InteractionError) -> None:
            self.events.append(f"failed:{exc}")

        def verdict(self, verdict: Verdict) -> None:
            self.events.append(f"verdict:{verdict.ok}")

    log = Log()
    env = FlakyEnv(GRAPH, errors=[EnvCrashedError("died")], reject=[("t", "a")])
    verdict = asyncio.run(verify_proof_async(env, THM, ["t", "a"], observer=log))
    assert verdict is not None and not verdict.ok
    assert log.events == ["before", "failed:died", "done", "before", "done", "verdict:False"]
