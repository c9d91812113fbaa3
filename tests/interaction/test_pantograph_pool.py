"""``PantographPool`` under concurrent use: replies are never lost or crossed, states stay with
the server that made them, the memory guard waits for idle servers."""

from __future__ import annotations

import asyncio
import random

import pytest

from lean_dojo_v2.interaction import (
    PantographPool,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticTimeout,
)

from .conftest import fake_config, first_step, goals_of

pytestmark = pytest.mark.timeout(120)


def test_pool_200_concurrent_tactics_neither_lost_nor_crossed(sample_proofs, minif2f_theorems):
    theorems = [*sample_proofs, *minif2f_theorems]
    rng = random.Random(7)

    async def main():
        async with PantographPool(
            fake_config(env={"FAKE_PANTOGRAPH_SHUFFLE_KEYS": "1"}), size=4
        ) as pool:
            states = await asyncio.gather(*(pool.start(t) for t in theorems))
            for thm, state in zip(theorems, states, strict=True):
                assert state.goals == first_step(thm)[0], thm.full_name
            servers = {s.handle.env_id for s in states}
            assert len(servers) == 4  # the theorems were spread over every server

            # 200 calls: each picks a theorem, and either its own first tactic (expect the
            # recorded state after) or another theorem's (expect a failure naming that tactic).
            jobs = []
            for _ in range(200):
                i = rng.randrange(len(theorems))
                own = rng.random() < 0.7
                j = i if own else (i + 1 + rng.randrange(len(theorems) - 1)) % len(theorems)
                jobs.append((i, j))
            results = await asyncio.gather(
                *(pool.run_tactic(states[i], first_step(theorems[j])[1]) for i, j in jobs)
            )
            for (i, j), result in zip(jobs, results, strict=True):
                _, tactic, after = first_step(theorems[i])
                if i == j:
                    if after:
                        assert isinstance(result, ProofState), (theorems[i].full_name, result)
                        assert result.goals == after, theorems[i].full_name
                        assert result.handle.env_id == states[i].handle.env_id
                    else:
                        assert isinstance(result, ProofFinished)
                else:
                    other = first_step(theorems[j])[1]
                    if other == tactic or (
                        isinstance(result, ProofState) and result.goals == after
                    ):
                        continue  # (two theorems that share their first tactic)
                    assert type(result) is TacticError, (theorems[i].full_name, result)
                    assert " ".join(other.split()) in result.message
            return pool

    asyncio.run(main())


def test_pool_states_are_bound_to_their_server(sample_proofs):
    async def main():
        async with PantographPool(fake_config(tactic_timeout=1.0), size=2) as pool:
            a = await pool.start(sample_proofs[0])
            b = await pool.start(sample_proofs[1])
            assert a.handle.env_id != b.handle.env_id  # least busy: the second server
            # a hang on one server restarts only that server
            result = await pool.run_tactic(a, "fake_hang")
            assert isinstance(result, TacticTimeout)
            with pytest.raises(StaleStateError):
                await pool.run_tactic(a, "simp")
            _, tactic, after = first_step(sample_proofs[1])
            assert goals_of(await pool.run_tactic(b, tactic)) == after
            with pytest.raises(StaleStateError):
                await pool.run_tactic(ProofState(("⊢ True",), "replay"), "trivial")
            verdict = await pool.check_source("theorem t : True := by\n  sorry\n")
            assert not verdict.ok

    asyncio.run(main())


def test_pool_memory_guard_waits_for_idle_server(sample_proofs):
    async def main():
        async with PantographPool(fake_config(max_requests=8), size=2) as pool:
            e0, e1 = pool.envs
            live = await pool.start(sample_proofs[0])  # on server 0, keeps a live state
            s0 = live.handle.env_id
            busy = next(e for e in pool.envs if e.env_id == s0)
            idle = e1 if busy is e0 else e0
            for _ in range(8):
                await pool.run_tactic(live, "exact not_recorded")
            assert busy.client.needs_recycle()
            pid_busy = busy.client.pid
            # new theorems avoid the server that must restart but still has a live state
            others = [await pool.start(t) for t in sample_proofs[1:3]]
            assert busy.client.pid == pid_busy
            assert all(s.handle.env_id == idle.env_id for s in others)
            _, tactic, after = first_step(sample_proofs[0])
            assert goals_of(await pool.run_tactic(live, tactic)) == after  # not lost
            # once its states are released the server is restarted at the next start
            await pool.release(live)
            for s in others:
                await pool.release(s)
            del others
            pid_idle = idle.client.pid
            await pool.start(sample_proofs[3])
            await pool.start(sample_proofs[4])
            assert busy.client.pid != pid_busy or idle.client.pid != pid_idle

    asyncio.run(main())


def test_single_env_concurrent_use_after_kill_never_reuses_old_ids(sample_proofs):
    from lean_dojo_v2.interaction import AsyncPantographEnv

    async def main():
        async with AsyncPantographEnv(fake_config(tactic_timeout=0.8)) as env:
            a = await env.start(sample_proofs[0])
            b = await env.start(sample_proofs[1])
            _, tactic, _ = first_step(sample_proofs[1])
            # b's request waits behind a's hang; the hang kills the REPL; b must not be sent
            # to the relaunched one (where its id could name another state)
            ra, rb = await asyncio.gather(
                env.run_tactic(a, "fake_hang"), env.run_tactic(b, tactic), return_exceptions=True
            )
            assert isinstance(ra, TacticTimeout)
            assert isinstance(rb, StaleStateError), rb
            fresh = await env.start(sample_proofs[1])
            assert goals_of(await env.run_tactic(fresh, tactic)) == first_step(sample_proofs[1])[2]

    asyncio.run(main())


def test_cancelled_request_does_not_shift_replies(sample_proofs):
    from lean_dojo_v2.interaction import AsyncPantographEnv

    async def main():
        async with AsyncPantographEnv(fake_config()) as env:
            state = await env.start(sample_proofs[0])
            pid = env.client.pid
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(env.run_tactic(state, "fake_sleep 400"), 0.1)
            # the late reply to the cancelled request is dropped, not handed to the next one
            _, tactic, after = first_step(sample_proofs[0])
            assert goals_of(await env.run_tactic(state, tactic)) == after
            assert (await env.run_tactic(state, "simp [")).kind == "parse"
            assert env.client.pid == pid

    asyncio.run(main())


def test_pool_verify_passes_core_options_into_the_checked_text(tmp_path, minif2f_theorems):
    import json

    log = tmp_path / "requests.log"
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)

    async def main():
        async with PantographPool(
            fake_config(env={"FAKE_PANTOGRAPH_LOG": str(log)}), size=2
        ) as pool:
            verdict = await pool.verify(thm, proof, options={"maxHeartbeats": 400000})
            assert verdict.ok, verdict.messages

    asyncio.run(main())
    files = [
        json.loads(line.partition(" ")[2])["file"]
        for line in log.read_text(encoding="utf-8").splitlines()
        if line.startswith("frontend.process ")
    ]
    assert files and "set_option maxHeartbeats 400000 in\ntheorem mathd_algebra_478" in files[0]
