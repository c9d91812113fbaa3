"""The capabilities every environment declares (``shares_states``, ``restarts``, ``release``) and
the adapter that puts a blocking environment behind the async contract
(:mod:`lean_dojo_v2.interaction.async_adapter`)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.interaction import (
    AsyncPantographEnv,
    AsyncProofEnv,
    AsyncReplayEnv,
    EnvCrashedError,
    PantographEnv,
    ProofEnv,
    ProofFinished,
    ProofState,
    ReplayEnv,
    ThreadedProofEnv,
    Verdict,
    as_async_env,
    as_async_envs,
    restarts_of,
    shares_states,
)

from .conftest import fake_config

pytestmark = pytest.mark.timeout(120)


class PlainEnv(ProofEnv):
    """A user's environment that declares nothing beyond the three abstract methods."""

    backend = "plain"

    def __init__(self) -> None:
        self.released: list[tuple[object, str]] = []

    def start(self, theorem):
        return ProofState(("⊢ True",), self.backend, handle=0)

    def run_tactic(self, state, tactic, timeout=None):
        return ProofFinished(self.backend)

    def verify(self, theorem, proof):
        return Verdict(True, self.backend, "lean")


class PlainAsyncEnv(AsyncProofEnv):
    backend = "plain-async"

    async def start(self, theorem):
        return ProofState(("⊢ True",), self.backend, handle=0)

    async def run_tactic(self, state, tactic, timeout=None):
        return ProofFinished(self.backend)

    async def verify(self, theorem, proof):
        return Verdict(True, self.backend, "lean")


class DeclaringEnv(PlainEnv):
    """Declares its capabilities the way a user's env does: plain attributes, set per instance."""

    def __init__(self, shares: bool, restarts: int) -> None:
        super().__init__()
        self.shares_states = shares
        self.restarts = restarts

    def release(self, state):
        self.released.append((state, threading.current_thread().name))


@pytest.fixture(scope="module")
def replay() -> ReplayEnv:
    return ReplayEnv.from_dataset(sample_dataset_path())


def test_an_env_that_declares_nothing_gets_the_contracts_defaults():
    env, aenv = PlainEnv(), PlainAsyncEnv()
    state = env.start(None)
    for e in (env, aenv):
        assert e.shares_states is False and e.restarts is None
        assert shares_states(e) is False and restarts_of(e) is None
    assert env.release(state) is None
    assert asyncio.run(aenv.release(state)) is None


def test_replay_shares_its_states_and_counts_no_restarts(replay):
    aenv = replay.as_async()
    assert isinstance(aenv, AsyncReplayEnv)
    for e in (replay, aenv):
        assert e.shares_states is True and shares_states(e) is True
        assert e.restarts is None and restarts_of(e) is None


def test_pantograph_owns_its_states_and_reports_the_clients_restarts():
    aenv = AsyncPantographEnv(fake_config())  # nothing is launched before the first call
    env = PantographEnv(fake_config())
    try:
        for e in (aenv, env, ThreadedProofEnv(env)):
            assert e.shares_states is False and shares_states(e) is False
            assert e.restarts == 0 and restarts_of(e) == 0
        aenv.client.restarts = 2
        env.client.restarts = 3
        assert (restarts_of(aenv), restarts_of(env), restarts_of(ThreadedProofEnv(env))) == (
            2,
            3,
            3,
        )
    finally:
        env.close()


def test_a_real_restart_is_counted_through_the_adapter():
    thm = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    with PantographEnv(fake_config()) as env:
        threaded = as_async_env(env)
        assert isinstance(threaded, ThreadedProofEnv) and restarts_of(threaded) == 0

        async def crash() -> None:
            state = await threaded.start(thm)
            with pytest.raises(EnvCrashedError):
                await threaded.run_tactic(state, "fake_crash")
            await threaded.start(thm)  # relaunched

        asyncio.run(crash())
        assert restarts_of(threaded) == 1 == env.client.restarts


def test_the_adapter_forwards_the_wrapped_envs_declarations_live():
    inner = DeclaringEnv(shares=True, restarts=4)
    threaded = as_async_env(inner)
    assert isinstance(threaded, ThreadedProofEnv) and threaded.backend == "plain"
    assert (shares_states(threaded), restarts_of(threaded)) == (True, 4)
    inner.shares_states, inner.restarts = False, 5  # read at each call, not copied
    assert (shares_states(threaded), restarts_of(threaded)) == (False, 5)
    plain = as_async_env(PlainEnv())
    assert (shares_states(plain), restarts_of(plain)) == (False, None)


def test_the_adapter_releases_in_a_worker_thread():
    inner = DeclaringEnv(shares=False, restarts=0)
    threaded = ThreadedProofEnv(inner)
    state = inner.start(None)
    asyncio.run(threaded.release(state))
    ((released, thread),) = inner.released
    assert released is state and thread != threading.current_thread().name


def test_only_a_declared_true_shares_states():
    inner = DeclaringEnv(shares=True, restarts=0)
    for value in (1, "yes", None):
        inner.shares_states = value  # type: ignore[assignment]
        assert shares_states(as_async_env(inner)) is False
    inner.restarts = "3"  # type: ignore[assignment]
    assert restarts_of(as_async_env(inner)) is None


def test_as_async_env_keeps_async_envs_and_makes_replay_its_twin(replay):
    aenv = PlainAsyncEnv()
    assert as_async_env(aenv) is aenv
    twin = as_async_env(replay)
    assert isinstance(twin, AsyncReplayEnv) and twin.env is replay
    envs = as_async_envs([replay, aenv, PlainEnv()])
    assert [type(e) for e in envs] == [AsyncReplayEnv, PlainAsyncEnv, ThreadedProofEnv]


@pytest.mark.parametrize("bad", [[], "env", 3, object()])
def test_as_async_envs_refuses_what_is_not_an_environment(bad):
    with pytest.raises(ConfigError):
        as_async_envs(bad)
