"""GRPO's Lean-checked rewards on a pool of Ray actors (``reward_workers_backend: ray``, one
``ProofEnv`` each) give the rewards the local pool gives, on a batch of completions made from the
bundled real data; a killed actor fails only the call it was in and is replaced; GRPO's config
opens the Ray pool. One local Ray instance for the module (2 CPUs, no dashboard); the file takes
about 35 s on 2 cores: ``slow``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
import ray

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.data.model import Theorem
from lean_dojo_v2.interaction import EnvCrashedError
from lean_dojo_v2.trainer.rl.rewards import (
    LeanProofScorer,
    LeanTacticScorer,
    RewardContext,
    Trajectory,
    open_reward_context,
)
from lean_dojo_v2.trainer.rl.rewards.ray_envs import RemoteProofEnv

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

WRONG = "exact absurd_lemma_that_does_not_exist"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def theorems() -> list[Theorem]:
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


def tactic_rows(theorems: list[Theorem]) -> list[Trajectory]:
    """Every one-line recorded tactic of 12 theorems, a wrong tactic and another theorem's
    tactic at each of their steps, and the rest of the recorded proof as a multi-step rollout."""
    rows = []
    chosen = theorems[:12]
    for n, thm in enumerate(chosen):
        other = chosen[(n + 1) % len(chosen)].traced_tactics[0].tactic
        tactics = [tt.tactic for tt in thm.traced_tactics]
        for k, tactic in enumerate(tactics):
            for completion in (tactic, WRONG, other, "\n".join(tactics[k:])):
                rows.append(
                    Trajectory(
                        completion=completion,
                        state=thm.traced_tactics[k].state_before,
                        theorem=thm,
                        step=k,
                        recorded_tactic=tactic,
                    )
                )
    return rows


def proof_rows(theorems: list[Theorem]) -> list[Trajectory]:
    """The recorded proof, its first half, and a wrong proof, of 12 theorems."""
    rows = []
    for thm in theorems[:12]:
        tactics = [tt.tactic for tt in thm.traced_tactics]
        for proof in ("\n".join(tactics), "\n".join(tactics[: len(tactics) // 2 or 1]), WRONG):
            rows.append(
                Trajectory(
                    completion=proof,
                    state=thm.traced_tactics[0].state_before,
                    theorem=thm,
                    mode="proof",
                )
            )
    return rows


def scored(context: RewardContext, theorems: list[Theorem]) -> list[tuple[object, ...]]:
    """Every reward, outcome and Lean step of the batch, for both scorers."""
    out: list[tuple[object, ...]] = []
    for scorer, rows in (
        (LeanTacticScorer(context, max_proof_steps=3), tactic_rows(theorems)),
        (LeanProofScorer(context, partial_credit=0.5), proof_rows(theorems)),
    ):
        for row, (reward, info) in zip(rows, scorer.score_batch(rows), strict=True):
            steps = [(s.tactic, s.outcome, s.goals_before, s.goals_after) for s in row.steps]
            out.append((scorer.name, row.completion, reward, info.get("outcome"), steps))
    return out


def test_ray_pool_gives_the_local_pool_rewards(local_ray: None, theorems: list[Theorem]) -> None:
    with open_reward_context(theorems, backend="replay", num_envs=2) as local:
        expected = scored(local, theorems)
        local_stats = local.stats()
    with open_reward_context(theorems, backend="replay", num_envs=2, workers="ray") as remote:
        assert all(isinstance(env, RemoteProofEnv) for env in remote.envs)
        assert {env.backend for env in remote.envs} == {"replay"}
        pids = {ray.get(env._actor.describe.remote())["pid"] for env in remote.envs}  # type: ignore[attr-defined]
        assert len(pids) == 2 and os.getpid() not in pids  # two actors, not this process
        got = scored(remote, theorems)
        assert remote.stats() == local_stats
    assert got == expected
    outcomes = {row[3] for row in expected}
    assert {"proved", "progress", "error"} <= outcomes  # the batch tells outcomes apart
    assert ray.is_initialized()  # a Ray instance that was running is left alone


def test_a_killed_actor_fails_one_call_and_is_replaced(
    local_ray: None, theorems: list[Theorem]
) -> None:
    with open_reward_context(theorems, backend="replay", num_envs=1) as local:
        expected = scored(local, theorems[:3])
    with open_reward_context(theorems, backend="replay", num_envs=1, workers="ray") as remote:
        (env,) = remote.envs
        assert isinstance(env, RemoteProofEnv)
        state = env.start(theorems[0])
        before = env.restarts
        ray.kill(env._actor)
        with pytest.raises(EnvCrashedError, match="Ray actor .* died"):
            env.run_tactic(state, theorems[0].traced_tactics[0].tactic)
        assert env.restarts != before  # the pool forgets the dead actor's states
        assert scored(remote, theorems[:3]) == expected  # on a fresh actor


def test_grpo_config_opens_the_ray_pool(local_ray: None, theorems: list[Theorem]) -> None:
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    trainer = GRPOTrainer(
        GRPOConfig(reward_backend="replay", reward_envs=2, reward_workers_backend="ray")
    )
    context = trainer._open_context({f"{t.file_path}::{t.full_name}": t for t in theorems})
    assert context is not None
    try:
        assert [type(env) for env in context.envs] == [RemoteProofEnv, RemoteProofEnv]
    finally:
        context.close()
