"""``PantographEnv`` / ``AsyncPantographEnv`` (the ProofEnv layer) against the fake REPL: recorded
proofs step by step, every result kind, and every failure mode (hang, crash, garbage, huge line,
stderr flood, slow/hung/failed start), restarts and stale states, the memory guard, LEAN_PATH,
versions, and the blocking wrapper inside a running event loop."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time

import pytest
from processes import wait_until_dead  # noqa: E402  (tests/ is on sys.path via conftest)

from lean_dojo_v2.data import Pos, goal_texts
from lean_dojo_v2.interaction import (
    AsyncPantographEnv,
    EnvCrashedError,
    PantographEnv,
    ProofEnv,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticTimeout,
    UnknownTheoremError,
    VersionMismatchError,
)
from lean_dojo_v2.interaction.pantograph import (
    ReplDiedError,
    ReplProtocolError,
    ReplStartError,
    StateHandle,
    module_name,
)

from .conftest import fake_config, fake_wrapper, first_step, goals_of, write_script

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def env():
    with PantographEnv(fake_config(env={"FAKE_PANTOGRAPH_SHUFFLE_KEYS": "1"})) as e:
        yield e


def replay_chain(env: ProofEnv, thm):
    """Apply a linear recorded proof (miniF2F: each state_before is the previous state_after) in
    order, checking every intermediate state against the recorded one."""
    state = env.start(thm)
    for t in thm.traced_tactics:
        assert isinstance(state, ProofState), (thm.full_name, state)
        assert state.goals == tuple(goal_texts(t.state_before)), thm.full_name
        state = env.run_tactic(state, t.tactic)
    return state


def test_start_gives_recorded_goals_of_every_theorem(env, sample_proofs, minif2f_theorems):
    for thm in [*sample_proofs, *minif2f_theorems]:
        before, _, _ = first_step(thm)
        state = env.start(thm)
        assert state.goals == before, thm.full_name
        assert state.backend == "pantograph" and state.theorem is thm
        h = state.handle
        assert isinstance(h, StateHandle) and h.env_id == env.aenv.env_id
        assert h.generation == env.client.generation and len(h.goal_names) == len(before)


def test_first_steps_match_recorded_after_states(env, sample_proofs, minif2f_theorems):
    for thm in [*sample_proofs, *minif2f_theorems]:
        _, tactic, after = first_step(thm)
        result = env.run_tactic(env.start(thm), tactic)
        if after:
            assert isinstance(result, ProofState) and result.goals == after, thm.full_name
        else:
            assert isinstance(result, ProofFinished), thm.full_name


def test_recorded_proofs_replay_to_proof_finished(env, minif2f_theorems):
    for thm in minif2f_theorems:
        assert isinstance(replay_chain(env, thm), ProofFinished), thm.full_name


def test_tactic_errors(env, sample_proofs):
    state = env.start(sample_proofs[0])
    bad = env.run_tactic(state, "exact this_is_not_recorded")
    assert type(bad) is TacticError and bad.kind == "tactic"
    assert "this_is_not_recorded" in bad.message
    parse = env.run_tactic(state, "simp [foo")
    assert type(parse) is TacticError and parse.kind == "parse"
    n = env.run_async(env.client.stat())
    sorry = env.run_tactic(state, "fake_sorry")
    assert type(sorry) is TacticError and sorry.kind == "sorry"
    assert env.run_async(env.client.stat()) == n  # the sorry state was deleted
    # the original state is still usable after all that
    _, tactic, after = first_step(sample_proofs[0])
    again = env.run_tactic(state, tactic)
    assert goals_of(again) == after


def test_unknown_theorem_names_the_module(env, sample_proofs):
    from dataclasses import replace

    thm = replace(sample_proofs[0], full_name="Not.a.recorded.theorem")
    with pytest.raises(UnknownTheoremError) as err:
        env.start(thm)
    msg = str(err.value)
    module = module_name(thm.file_path)
    assert "." in module and "/" not in module
    assert "Symbol not found" in msg and repr(module) in msg and "imports" in msg


def test_states_of_another_env_or_kind_are_refused(env, sample_proofs):
    with pytest.raises(StaleStateError):
        env.run_tactic(ProofState(("⊢ True",), "replay", handle=("⊢ True",)), "trivial")
    state = env.start(sample_proofs[0])
    foreign = ProofState(
        state.goals,
        "pantograph",
        handle=StateHandle("someone-else", state.handle.generation, state.handle.state_id, ()),
    )
    with pytest.raises(StaleStateError, match="belongs to environment"):
        env.run_tactic(foreign, "simp")


def test_dropped_states_are_freed_in_batches(sample_proofs):
    with PantographEnv(fake_config(gc_batch=8)) as env:
        c = env.client
        keep = env.start(sample_proofs[0])
        states = [env.start(sample_proofs[1]) for _ in range(20)]
        assert env.run_async(c.stat()) == 21 and c.live_states == 21
        del states
        gc.collect()
        assert c.live_states == 1
        env.run_async(c.stat())  # the next request carries one pipelined goal.delete
        assert env.run_async(c.stat()) == 1
        env.release(keep)
        assert env.run_async(c.stat()) == 0 and c.live_states == 0


def test_verify(env, minif2f_theorems):
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    ok = env.verify(thm, proof)
    assert ok.ok and ok.checked_by == "lean" and ok.backend == "pantograph"
    assert env.verify(thm, "by\n  " + proof.replace("\n", "\n  ")).ok  # leading `by` accepted
    short = env.verify(thm, "\n".join(t.tactic for t in thm.traced_tactics[:-1]))
    assert not short.ok and any("unsolved goals" in m for m in short.messages)
    wrong = env.verify(thm, "exact not_recorded")
    assert not wrong.ok
    sorry = env.verify(thm, "sorry")
    assert not sorry.ok and any("declaration uses 'sorry'" in m for m in sorry.messages)


def test_verify_asks_lean_which_axioms_the_proof_depends_on(minif2f_theorems):
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    with PantographEnv(fake_config()) as env:
        ok = env.verify(thm, proof)
        assert ok.ok and set(ok.axioms) == {"propext", "Classical.choice", "Quot.sound"}
        assert ok.nonstandard_axioms == ()
        assert not any("axioms" in m for m in ok.messages)  # the query's answer is not a message
        bad = env.verify(thm, "sorry")
        assert not bad.ok and "sorryAx" in bad.nonstandard_axioms
    # A lemma the proof cites rests on an axiom of the project: Lean still accepts the proof,
    # and the verdict names the axiom.
    cited = _cited_name(proof)
    env_vars = {"FAKE_PANTOGRAPH_AXIOMS": json.dumps({cited: ["Project.big_axiom"]})}
    with PantographEnv(fake_config(env=env_vars)) as env:
        verdict = env.verify(thm, proof)
        assert verdict.ok and verdict.nonstandard_axioms == ("Project.big_axiom",)


def _cited_name(proof: str) -> str:
    """A name a recorded proof cites (a dotted lemma name or an argument in brackets)."""
    import re

    names = re.findall(r"[A-Za-z_][\w']*(?:\.[\w']+)+", proof) or re.findall(
        r"\[([A-Za-z_][\w.']*)", proof
    )
    assert names, proof
    return names[0]


def test_axioms_of_a_check_whose_query_lean_cannot_answer_are_unknown(minif2f_theorems):
    from lean_dojo_v2.interaction.pantograph.lean_text import CheckedText

    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    with PantographEnv(fake_config()) as env:
        good = env.verify(thm, proof)
        text = env.aenv.theorem_source(thm, "verify").text("statement", proof)
        assert text.name == thm.full_name
        unknown = CheckedText(text.text, text.route, text.decl_start, "No.such_name")
        verdict = env.run_async(env.aenv._check_text(unknown, None, axioms=True))
    assert good.ok and verdict.ok and verdict.axioms is None  # the query never decides


def test_verify_reads_statement_from_project_file(tmp_path, minif2f_theorems):
    from dataclasses import replace

    thm = minif2f_theorems[1]
    stmt = thm.theorem_statement
    text = "import Mathlib\n\nopen Real\n\n" + "theorem " + stmt + "\n  sorry\n"
    src = tmp_path / "MiniF2F" / "Test.lean"
    src.parent.mkdir()
    src.write_text(text, encoding="utf-8")
    line = text[: text.index("theorem")].count("\n") + 1
    located = replace(thm, theorem_statement=None, has_statement_field=False, start=Pos(line, 1))
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    with PantographEnv(fake_config(project_dir=tmp_path, lean_path="")) as penv:
        assert penv.verify(located, proof).ok
        assert not penv.verify(located, "norm_num [nothing]").ok
    with PantographEnv(fake_config()) as penv, pytest.raises(Exception, match="project_dir"):
        penv.verify(located, proof)


def test_start_from_source(env, minif2f_theorems):
    thm = minif2f_theorems[2]
    stmt = thm.theorem_statement
    head = stmt[: stmt.rindex(":=")].rstrip()
    first = thm.traced_tactics[0]
    text = f"theorem {head} := by\n  {first.tactic}\n  sorry\n"
    states = env.start_from_source(text)
    assert len(states) == 1
    assert states[0].goals == tuple(goal_texts(first.state_after))


# ----------------------------------------------------------------------------- failure modes


def test_hang_becomes_timeout_within_limit_then_restart(sample_proofs):
    with PantographEnv(fake_config(tactic_timeout=1.0, timeout_grace=0.4)) as env:
        state = env.start(sample_proofs[0])
        pid, gen = env.client.pid, env.client.generation
        t0 = time.monotonic()
        result = env.run_tactic(state, "fake_hang")
        elapsed = time.monotonic() - t0
        assert isinstance(result, TacticTimeout) and result.kind == "timeout"
        assert result.timeout == 1.0 and elapsed < 1.0 + 1.0, elapsed
        # killed and relaunched: old states are stale, new ones work
        with pytest.raises(StaleStateError):
            env.run_tactic(state, "simp")
        fresh = env.start(sample_proofs[0])
        assert env.client.pid != pid and env.client.generation > gen
        _, tactic, after = first_step(sample_proofs[0])
        assert getattr(env.run_tactic(fresh, tactic), "goals", ()) == after


def test_repl_interrupt_is_timeout_and_process_kept(sample_proofs):
    with PantographEnv(fake_config()) as env:
        state = env.start(sample_proofs[0])
        pid, gen = env.client.pid, env.client.generation
        t0 = time.monotonic()
        result = env.run_tactic(state, "fake_sleep 5000", timeout=0.3)
        assert isinstance(result, TacticTimeout) and time.monotonic() - t0 < 2.0
        assert "interrupted by the REPL" in result.message
        assert (env.client.pid, env.client.generation) == (pid, gen)
        _, tactic, after = first_step(sample_proofs[0])
        assert getattr(env.run_tactic(state, tactic), "goals", ()) == after  # state still valid


def test_crash_gives_env_crashed_then_restart(sample_proofs):
    with PantographEnv(fake_config()) as env:
        state = env.start(sample_proofs[0])
        gen = env.client.generation
        with pytest.raises(EnvCrashedError) as err:
            env.run_tactic(state, "fake_crash")
        assert isinstance(err.value, ReplDiedError)
        assert "134" in str(err.value) and "Stack overflow detected" in str(err.value)
        with pytest.raises(StaleStateError):
            env.run_tactic(state, "simp")
        fresh = env.start(sample_proofs[1])
        assert fresh.goals == first_step(sample_proofs[1])[0]
        assert env.client.generation > gen and env.client.restarts == 1


def test_garbage_line_gives_typed_error_and_restart(sample_proofs):
    with PantographEnv(fake_config()) as env:
        state = env.start(sample_proofs[0])
        pid = env.client.pid
        with pytest.raises(ReplProtocolError, match="PANIC"):
            env.run_tactic(state, "fake_garbage")
        with pytest.raises(StaleStateError):
            env.run_tactic(state, "simp")
        assert env.start(sample_proofs[0]).goals == first_step(sample_proofs[0])[0]
        assert env.client.pid != pid


def test_ten_megabyte_line_is_read(sample_proofs):
    with PantographEnv(fake_config()) as env:
        state = env.start(sample_proofs[0])
        result = env.run_tactic(state, "fake_huge")
        assert type(result) is TacticError and len(result.message) > 10 * 1024 * 1024
        assert env.run_tactic(state, "simp [").kind == "parse"  # still in step


def test_stderr_flood_does_not_block(sample_proofs):
    with PantographEnv(fake_config(stderr_lines=50, tactic_timeout=20)) as env:
        state = env.start(sample_proofs[0])
        t0 = time.monotonic()
        result = env.run_tactic(state, "fake_flood")
        assert type(result) is TacticError and time.monotonic() - t0 < 15
        pipes = env.client.process.pipes
        assert pipes.err_bytes >= 10 * 1024 * 1024 and len(pipes.stderr) == 50
        assert "fake flood" in env.client.stderr_tail(1)


def test_slow_start_within_ready_timeout(sample_proofs):
    cfg = fake_config(env={"FAKE_PANTOGRAPH_READY_DELAY": "1.5"}, ready_timeout=15)
    with PantographEnv(cfg) as env:
        assert env.start(sample_proofs[0]).goals == first_step(sample_proofs[0])[0]


def test_hang_at_start_is_typed_error_with_stderr_within_ready_timeout(tmp_path):
    wrapper = fake_wrapper(tmp_path / "repl", "echo 'importing Mathlib (fake), please wait' >&2")
    cfg = fake_config(
        command=str(wrapper), env={"FAKE_PANTOGRAPH_HANG_START": "1"}, ready_timeout=1.5
    )
    env = AsyncPantographEnv(cfg)
    t0 = time.monotonic()
    with pytest.raises(ReplStartError) as err:
        asyncio.run(env.open())
    elapsed = time.monotonic() - t0
    assert elapsed < 1.5 + 1.5, elapsed  # (includes running `--version` first)
    msg = str(err.value)
    assert "did not print 'ready.' within 1.5 s" in msg and "importing Mathlib (fake)" in msg
    asyncio.run(env.close())


def test_exit_without_ready_reports_stderr():
    cfg = fake_config(env={"FAKE_PANTOGRAPH_NO_READY": "1"})

    async def main():
        async with AsyncPantographEnv(cfg):
            pass

    with pytest.raises(ReplStartError) as err:
        asyncio.run(main())
    msg = str(err.value)
    assert "exited with code 1" in msg and "invalid header" in msg and "Mathlib.olean" in msg


def test_bad_core_option_fails_start_with_stderr():
    with pytest.raises(ReplStartError, match="invalid configuration option"):
        with PantographEnv(fake_config(core_options=["bogus"])):
            pass


# -------------------------------------------------------------------------------- guards


def test_memory_guard_restarts_after_n_requests_between_theorems(sample_proofs):
    with PantographEnv(fake_config(max_requests=6)) as env:
        state = env.start(sample_proofs[0])
        pid = env.client.pid
        for _ in range(8):  # mid-search: never restarted, even past the limit
            env.run_tactic(state, "exact not_recorded")
        assert env.client.pid == pid and env.client.requests_since_start > 6
        new = env.start(sample_proofs[1])  # between theorems: restarted
        assert env.client.pid != pid and new.goals == first_step(sample_proofs[1])[0]
        with pytest.raises(StaleStateError):
            env.run_tactic(state, "simp")
        # options (the tactic timeout) are restored on the new process
        assert env.run_async(env.client.options_print())["timeout"] == 10000


def test_memory_guard_rss_limit(sample_proofs):
    with PantographEnv(fake_config(max_rss_mb=1)) as env:  # any process is above 1 MB
        env.start(sample_proofs[0])
        pid = env.client.pid
        assert env.client.process.rss_bytes() > 1024 * 1024
        env.start(sample_proofs[1])
        assert env.client.pid != pid


# --------------------------------------------------------------------------- launch details


def test_lean_path_from_mock_lake(tmp_path, monkeypatch, sample_proofs):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "lake-calls"
    write_script(
        bindir / "lake",
        f'echo "$PWD $*" >> {calls}\nprintf "/proj/.lake/build/lib/lean:/deps/lib/lean\\n\\n"',
    )
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.29.1\n")
    seen = tmp_path / "seen"
    wrapper = fake_wrapper(tmp_path / "repl", f'echo "$LEAN_PATH|$PWD" >> {seen}')
    with PantographEnv(fake_config(command=str(wrapper), project_dir=project)) as env:
        env.start(sample_proofs[0])
    assert calls.read_text().split("\n")[0] == f"{project} env printenv LEAN_PATH"
    # stripped and decoded; the REPL ran in the project directory (--version too)
    assert (
        seen.read_text().split("\n")[-2] == f"/proj/.lake/build/lib/lean:/deps/lib/lean|{project}"
    )

    # an explicit lean_path skips lake
    calls.unlink()
    with PantographEnv(
        fake_config(command=str(wrapper), project_dir=project, lean_path="/explicit")
    ) as env:
        env.open()
    assert not calls.exists()
    assert seen.read_text().split("\n")[-2] == f"/explicit|{project}"


def test_version_mismatch_is_refused_at_launch(tmp_path):
    from fake_pantograph.launcher import write_fake_binary

    project = tmp_path / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.29.1\n")
    old = write_fake_binary(
        tmp_path / "old",
        lean_toolchain="leanprover/lean4:v4.21.0",
        env={"FAKE_PANTOGRAPH_VERSION": "0.3.4"},
    )
    with pytest.raises(VersionMismatchError, match="v4.21.0"):
        with PantographEnv(fake_config(command=str(old), project_dir=project, lean_path="")):
            pass
    good = write_fake_binary(tmp_path / "good")  # 0.3.15/v4.29.1 + matching lean-toolchain
    with PantographEnv(fake_config(command=str(good), project_dir=project, lean_path="")) as env:
        env.open()
        assert env.client.version.pantograph == "0.3.15" and env.client.lean_version == "4.29.1"


# ------------------------------------------------------------------------------ sync/async


def test_sync_env_inside_running_event_loop(sample_proofs):
    async def notebook_cell():
        # Jupyter runs cells inside a live loop: the blocking env must still work there.
        asyncio.get_running_loop()
        with PantographEnv(fake_config()) as env:
            state = env.start(sample_proofs[0])
            _, tactic, after = first_step(sample_proofs[0])
            return state.goals, env.run_tactic(state, tactic)

    goals, result = asyncio.run(notebook_cell())
    assert goals == first_step(sample_proofs[0])[0]
    assert goals_of(result) == first_step(sample_proofs[0])[2]


def test_async_env_context_manager_and_close(sample_proofs):
    async def main():
        async with AsyncPantographEnv(fake_config()) as env:
            state = await env.start(sample_proofs[0])
            proc = env.client.process
            _, tactic, after = first_step(sample_proofs[0])
            result = await env.run_tactic(state, tactic)
            assert goals_of(result) == after
        assert env.client.closed and not proc.alive
        return proc

    proc = asyncio.run(main())
    assert proc.transport.get_returncode() is not None


def test_sync_close_stops_thread(sample_proofs):
    env = PantographEnv(fake_config())
    env.start(sample_proofs[0])
    thread = env._thread.thread
    env.close()
    assert not thread.is_alive()
    with pytest.raises(Exception, match="closed"):
        env.start(sample_proofs[0])


def test_missing_lake_for_project_is_lean_not_found(tmp_path, monkeypatch):
    from lean_dojo_v2.interaction import LeanNotFoundError

    monkeypatch.setenv("PATH", str(tmp_path))  # no lake anywhere
    env = AsyncPantographEnv(fake_config(project_dir=tmp_path))
    with pytest.raises(LeanNotFoundError) as err:
        asyncio.run(env.open())
    assert "lake" in str(err.value) and "elan" in str(err.value) and "lean_path" in str(err.value)


def test_goal_root_after_finishing_and_contract(env, minif2f_theorems):
    from lean_dojo_v2.interaction import AsyncProofEnv

    assert isinstance(env, ProofEnv) and isinstance(env.aenv, AsyncProofEnv)
    thm = minif2f_theorems[0]
    state = env.start(thm)
    assert env.goal_root(state) is None  # nothing assigned yet
    done = replay_chain(env, thm)
    assert isinstance(done, ProofFinished) and done.handle is not None
    root = env.goal_root(done)
    assert root and thm.traced_tactics[-1].tactic.split()[0] in root


# ---------------------------------------------------------------------------- the real server

REAL_START = {"FAKE_PANTOGRAPH_COPYFROM_RECORDED": "0"}  # copyFrom as the real server answers
VERSIONS = [pytest.param("0.3.4", id="0.3.4"), pytest.param("0.3.15", id="0.3.15")]


@pytest.mark.parametrize("version", VERSIONS)
def test_start_gives_leandojo_first_state_so_first_recorded_tactic_works(version, minif2f_theorems):
    cfg = fake_config(env={**REAL_START, "FAKE_PANTOGRAPH_VERSION": version})
    with PantographEnv(cfg) as env:
        for thm in minif2f_theorems[:5]:
            before, tactic, after = first_step(thm)
            state = env.start(thm)
            assert state.goals == before and state.handle.route == "source", thm.full_name
            assert goals_of(env.run_tactic(state, tactic)) == after, thm.full_name


def test_start_without_statement_falls_back_to_copy_from_labelled(sample_proofs):
    thm = sample_proofs[0]  # a B4 theorem: no statement recorded, no project to read it from
    with PantographEnv(fake_config(env=REAL_START)) as env:
        state = env.start(thm)
    assert state.handle.route == "copyFrom" and len(state.goals) == 1
    assert state.goals[0].startswith("⊢ ∀") or state.goals[0].startswith("⊢ ")
    assert state.goals != first_step(thm)[0]  # the whole type, not LeanDojo's first state


@pytest.mark.parametrize("version", VERSIONS)
def test_frontend_timeout_is_a_timeout_verdict_on_old_and_new_lean(version, sample_proofs):
    name = sample_proofs[0].full_name
    cfg = fake_config(env={"FAKE_PANTOGRAPH_VERSION": version})
    with PantographEnv(cfg) as env:
        verdict = env.check_source(f"theorem {name} : x := by\n  fake_sleep 3000\n", timeout=0.2)
        assert not verdict.ok and verdict.messages[0].startswith("timeout after 0.2 s")
        assert env.client.restarts == 0  # the REPL stopped it; the process was kept


def test_check_source_on_0_3_4_sends_required_frontend_fields(minif2f_theorems):
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    with PantographEnv(fake_config(env={"FAKE_PANTOGRAPH_VERSION": "0.3.4"})) as env:
        assert env.verify(thm, proof).ok


def test_watchdog_grace_is_seconds_and_grows_with_the_limit():
    from lean_dojo_v2.interaction.pantograph import PantographConfig

    cfg = PantographConfig()
    assert cfg.watchdog_limit(1.0) >= 1.0 + 5.0
    assert cfg.watchdog_limit(60.0) >= 60.0 + 30.0
    assert PantographConfig(timeout_grace=0.2, timeout_grace_factor=0).watchdog_limit(1) == 1.2


def test_late_interrupt_within_grace_keeps_the_process(sample_proofs):
    # Lean's interrupt comes late (cooperative cancellation): 0.3 s limit, answer after ~1.1 s.
    cfg = fake_config(tactic_timeout=0.3, env={"FAKE_PANTOGRAPH_INTERRUPT_LATENESS": "0.8"})
    cfg = cfg.with_(timeout_grace=PantographConfig_default_grace())
    with PantographEnv(cfg) as env:
        state = env.start(sample_proofs[0])
        pid, generation = env.client.pid, env.client.generation
        result = env.run_tactic(state, "fake_sleep 5000")
        assert isinstance(result, TacticTimeout) and "interrupted by the REPL" in result.message
        assert (env.client.pid, env.client.generation, env.client.restarts) == (pid, generation, 0)
        assert goals_of(env.run_tactic(state, first_step(sample_proofs[0])[1])) is not None


def PantographConfig_default_grace() -> float:
    from lean_dojo_v2.interaction.pantograph import PantographConfig

    return PantographConfig().timeout_grace


def test_repl_without_project_runs_in_the_binary_directory(tmp_path):
    from fake_pantograph.launcher import write_fake_binary

    need = {"FAKE_PANTOGRAPH_NEED_TOOLCHAIN": "leanprover/lean4:v4.29.1"}
    good = write_fake_binary(tmp_path / "good", env=need)  # lean-toolchain beside the binary
    with PantographEnv(fake_config(command=str(good))) as env:
        assert env.run_async(env.client.stat()) == 0
    bare = write_fake_binary(tmp_path / "bare", lean_toolchain=None, env=need)
    with pytest.raises(ReplStartError) as err:
        with PantographEnv(fake_config(command=str(bare))):
            pass
    msg = str(err.value)
    assert "Init.olean" in msg and "lean-toolchain" in msg and "LEAN_SYSROOT" in msg


# ------------------------------------------------------------- verify in the file's context

CTX_FILE = """import Mathlib

open Real

section
variable (y : ℕ)
end

theorem earlier_sorry : True := by
  sorry

variable (x : ℝ)

/-- x from a `variable` binder -/
theorem {name} (h₀ : x / 50 = 40) : x = 2000 := by
  sorry

theorem later_sorry : True := by
  sorry
"""


def _ctx_theorem(tmp_path, name: str):
    from lean_dojo_v2.data import Theorem

    text = CTX_FILE.replace("{name}", name)
    src = tmp_path / "Ctx" / "Basic.lean"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text, encoding="utf-8")
    line = text[: text.index(f"theorem {name}")].count("\n") + 1
    end = line + 1
    thm = Theorem(
        url="https://example.org/ctx",
        commit="0" * 40,
        file_path="Ctx/Basic.lean",
        full_name=name,
        start=Pos(line, 1),
        end=Pos(end, 8),
    )
    return thm, text


def _frontend_files(log) -> list[str]:
    import json

    files = []
    for line in log.read_text(encoding="utf-8").splitlines():
        cmd, _, payload = line.partition(" ")
        if cmd == "frontend.process":
            files.append(json.loads(payload)["file"])
    return files


def test_verify_checks_the_proof_in_its_file_with_variable_binders(tmp_path):
    # ``ctx_algebra_24`` is not in the REPL's environment: the file itself is checked, up to
    # the theorem, the proof in place; its ``x`` comes from ``variable (x : ℝ)``.
    thm, text = _ctx_theorem(tmp_path, "ctx_algebra_24")
    log = tmp_path / "requests.log"
    cfg = fake_config(project_dir=tmp_path, lean_path="", env={"FAKE_PANTOGRAPH_LOG": str(log)})
    with PantographEnv(cfg) as env:
        verdict = env.verify(thm, "nlinarith")
        assert verdict.ok, verdict.messages
        # the earlier theorem's sorry is reported, but it is not this proof's
        assert any("declaration uses 'sorry'" in m for m in verdict.messages)
        assert not env.verify(thm, "linarith [nothing]").ok
        assert not env.verify(thm, "sorry").ok
        # Out of its context (the statement alone) the same proof cannot check: x is unbound.
        from lean_dojo_v2.interaction.pantograph import proof_file

        alone = env.check_source(
            proof_file("ctx_algebra_24 (h₀ : x / 50 = 40) : x = 2000", "nlinarith")
        )
        assert not alone.ok and any("unknown identifier 'x'" in m for m in alone.messages)
    checked = _frontend_files(log)[0]
    head = text[: text.index("/-- x from")]
    assert "import" not in checked and checked.count("\n") >= head.count("\n")
    assert checked.startswith(" " * len("import Mathlib") + "\n\nopen Real\n")
    # the declaration, then Lean is asked which axioms it depends on
    assert checked.endswith(
        "theorem ctx_algebra_24 (h₀ : x / 50 = 40) : x = 2000 := by\n  nlinarith\n"
        "\n#print axioms ctx_algebra_24\n"
    )
    assert "later_sorry" not in checked


def test_verify_of_an_imported_theorem_reruns_the_context_commands_in_effect(tmp_path):
    # ``mathd_algebra_24`` is in the REPL's environment (its module is imported): the file's
    # declarations exist already, so the theorem is checked renamed after the context commands
    # still in effect at it (the closed section's variable is not).
    thm, _ = _ctx_theorem(tmp_path, "mathd_algebra_24")
    log = tmp_path / "requests.log"
    cfg = fake_config(project_dir=tmp_path, lean_path="", env={"FAKE_PANTOGRAPH_LOG": str(log)})
    with PantographEnv(cfg) as env:
        verdict = env.verify(thm, "nlinarith")
        assert verdict.ok, verdict.messages
        assert not env.verify(thm, "exact not_recorded").ok
    checked = _frontend_files(log)[0]
    assert checked == (
        "open Real\n\nvariable (x : ℝ)\n\n"
        "theorem mathd_algebra_24_ldv2_check (h₀ : x / 50 = 40) : x = 2000 := by\n  nlinarith\n"
        "\n#print axioms mathd_algebra_24_ldv2_check\n"
    )


def test_verify_passes_core_options_into_the_checked_text(tmp_path, minif2f_theorems):
    # frontend.process elaborates with empty options: launch options must be in the text.
    log = tmp_path / "requests.log"
    cfg = fake_config(core_options=("maxHeartbeats=400000",), env={"FAKE_PANTOGRAPH_LOG": str(log)})
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    with PantographEnv(cfg) as env:
        assert env.verify(thm, proof, options={"maxRecDepth": 2000, "pp.all": True}).ok
    ctx_thm, _ = _ctx_theorem(tmp_path, "ctx_algebra_24")
    with PantographEnv(cfg.with_(project_dir=tmp_path, lean_path="")) as env:
        assert env.verify(ctx_thm, "nlinarith", options={"maxHeartbeats": 0}).ok
    statement_route, file_route = _frontend_files(log)
    assert (
        "set_option maxHeartbeats 400000 in\nset_option maxRecDepth 2000 in\n"
        "set_option pp.all true in\ntheorem mathd_algebra_478"
    ) in statement_route
    assert "\nset_option maxHeartbeats 0 in\n/-- x from" in file_route  # the call's value wins


def test_checked_text_of_real_minictx_files_keeps_the_file_context(shared_data):
    import json
    import re

    from lean_dojo_v2.data.lean_lexer import header_end
    from lean_dojo_v2.interaction.pantograph.lean_text import context_check_text, file_check_text

    folder = shared_data / "minictx" / "data" / "minictx"
    records = [
        json.loads(line)
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert records
    for record in records:
        context, statement = record["srcContext"], record["theoremStatement"]
        source = context + statement + " := by\n  sorry\n\ntheorem later : True := trivial\n"
        start = len(context) + statement.index(
            re.search(r"\b(theorem|lemma|instance)\b", statement)[0]
        )
        checked = file_check_text(source, start, "simp", {"maxHeartbeats": 400000})
        head = header_end(source)
        # every byte before the declaration kept, the header blanked line for line
        cut = checked.decl_start  # the declaration's command (its doc comment may be in context)
        assert cut <= start and checked.text[head:cut] == source[head:cut]
        assert (
            checked.text[cut:]
            .replace("set_option maxHeartbeats 400000 in\n", "", 1)
            .startswith(source[cut : source.index(" := by\n  sorry", start)])
        )
        assert checked.text[:head].strip() == "" and checked.text[:head].count("\n") == source[
            :head
        ].count("\n")
        decl = checked.text[checked.decl_start :]
        assert decl.startswith("set_option maxHeartbeats 400000 in\n")
        assert decl.endswith(" := by\n  simp\n") and "later" not in decl
        renamed = context_check_text(source, start, "simp", rename=True)
        assert not re.search(r"^import", renamed.text, re.MULTILINE)
        if not statement.lstrip().startswith("instance"):  # an unnamed instance keeps its name
            assert "_ldv2_check" in renamed.text[renamed.decl_start :]
        # every `variable` of a scope still open at the theorem is kept
        assert renamed.text.count("variable") <= context.count("\nvariable")


def test_theorem_in_a_mutual_block_is_checked_with_its_block():
    from lean_dojo_v2.interaction import InteractionError
    from lean_dojo_v2.interaction.pantograph.lean_text import context_check_text, file_check_text

    source = "mutual\ntheorem a : True := by\n  sorry\ntheorem b : True := trivial\nend\n\ntheorem c : True := trivial\n"
    start = source.index("theorem a")
    checked = file_check_text(source, start, "trivial")
    assert (
        checked.text == source[: source.index("\n\ntheorem c")].replace("sorry", "trivial") + "\n"
    )
    with pytest.raises(InteractionError, match="mutual"):
        context_check_text(source, start, "trivial")


def test_finaliser_and_calls_never_wait_on_a_dead_event_loop(sample_proofs):
    """A PantographEnv garbage-collected after its loop thread is gone used to block the whole
    process forever (``__del__`` → ``close()`` waited on a loop that no longer ran)."""
    import time as _time

    from lean_dojo_v2.interaction import EnvClosedError

    env = PantographEnv(fake_config())
    state = env.start(sample_proofs[0])
    pid = env.client.pid
    assert pid is not None
    env._thread.stop()  # the loop thread dies under the env (as at interpreter shutdown)
    t0 = _time.monotonic()
    with pytest.raises(EnvClosedError):
        env.run_tactic(state, "rfl")
    env.__del__()  # must return at once and leave no REPL behind
    assert _time.monotonic() - t0 < 5
    # gone, or a zombie nobody reaps any more (its loop is dead): either way, killed
    assert wait_until_dead(pid), f"REPL pid {pid} survived the finaliser"


# ------------------------------------------------------------ start() in the file's context


def _start_file(tmp_path, name: str, minif2f_theorems, earlier: str = "mathd_algebra_478"):
    """A file around the recorded ``mathd_algebra_24`` (statement ``(x : ℝ) (h₀ : x / 50 = 40) :
    x = 2000``) whose ``x`` comes from the file's ``variable (x : ℝ)``, after the recorded
    ``earlier`` theorem (renamed ``ctx_…``) left with ``sorry`` (its goal is a distil target
    before ours). Returns the theorem (located in the file, no statement) and the recorded
    ``mathd_algebra_24``."""
    from lean_dojo_v2.data import Theorem

    recorded = {t.full_name: t for t in minif2f_theorems}
    other = recorded[earlier].theorem_statement.replace(earlier, "ctx" + earlier[len("mathd") :])
    text = (
        "import Mathlib\n\nopen Real\n\n"
        f"theorem {other.removesuffix(' := by')} := by\n  sorry\n\n"
        "variable (x : ℝ)\n\n"
        f"theorem {name} (h₀ : x / 50 = 40) : x = 2000 := by\n  nlinarith\n"
    )
    src = tmp_path / "Ctx" / "Start.lean"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text, encoding="utf-8")
    line = text[: text.index(f"theorem {name}")].count("\n") + 1
    thm = Theorem(
        url="https://example.org/ctx",
        commit="0" * 40,
        file_path="Ctx/Start.lean",
        full_name=name,
        start=Pos(line, 1),
        end=Pos(line + 1, 11),
    )
    return thm, recorded["mathd_algebra_24"]


def _sent(log, command: str) -> list[dict]:
    import json

    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        cmd, _, payload = line.partition(" ")
        if cmd == command:
            out.append(json.loads(payload))
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_start_uses_the_files_variable_binders_for_leandojo_first_state(
    tmp_path, version, minif2f_theorems
):
    # ``ctx_algebra_24`` is not in the REPL's environment: start() elaborates its file up to it
    # with ``by sorry``. Its ``x`` exists only through the file's ``variable (x : ℝ)``: the
    # statement alone (the old start) gives no state, and copyFrom the whole type.
    thm, recorded = _start_file(tmp_path, "ctx_algebra_24", minif2f_theorems)
    before, tactic, after = first_step(recorded)
    log = tmp_path / "requests.log"
    env_vars = {**REAL_START, "FAKE_PANTOGRAPH_VERSION": version, "FAKE_PANTOGRAPH_LOG": str(log)}
    cfg = fake_config(project_dir=tmp_path, lean_path="", env=env_vars)
    with PantographEnv(cfg) as env:
        state = env.start(thm)
        assert state.goals == before  # not the earlier theorem's sorry goal
        assert (state.handle.route, state.handle.source_route) == ("source", "file")
        assert state.handle.label == "source/file"
        assert goals_of(env.run_tactic(state, tactic)) == after
    if version == "0.3.4":
        (sent,) = [p["file"] for p in _sent(log, "frontend.process") if p.get("sorrys")]
    else:
        sent = _sent(log, "frontend.distil")[0]["file"]
    assert sent.startswith(" " * len("import Mathlib") + "\n\nopen Real\n")
    assert "variable (x : ℝ)" in sent
    assert sent.endswith("theorem ctx_algebra_24 (h₀ : x / 50 = 40) : x = 2000 := by\n  sorry\n")


def test_start_of_an_imported_theorem_reruns_the_context_commands_in_effect(
    tmp_path, minif2f_theorems
):
    # ``mathd_algebra_24`` is in the REPL's environment: its context commands, then the theorem
    # under a fresh name with ``by sorry`` (core options as ``set_option … in``).
    thm, recorded = _start_file(tmp_path, "mathd_algebra_24", minif2f_theorems)
    log = tmp_path / "requests.log"
    env_vars = {**REAL_START, "FAKE_PANTOGRAPH_LOG": str(log)}
    cfg = fake_config(
        project_dir=tmp_path, lean_path="", env=env_vars, core_options=("maxHeartbeats=400000",)
    )
    with PantographEnv(cfg) as env:
        state = env.start(thm)
        assert state.goals == first_step(recorded)[0]
        assert state.handle.label == "source/context"
    assert _sent(log, "frontend.distil")[0]["file"] == (
        "open Real\n\nvariable (x : ℝ)\n\nset_option maxHeartbeats 400000 in\n"
        "theorem mathd_algebra_24_ldv2_check (h₀ : x / 50 = 40) : x = 2000 := by\n  sorry\n"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_start_never_takes_the_state_of_an_earlier_sorry_in_the_file(
    tmp_path, version, minif2f_theorems
):
    # The theorem's own statement gives no state (the fake cannot elaborate it); the earlier
    # theorem's ``sorry`` does. start() must not hand that one out as this theorem's first state.
    thm, _ = _start_file(tmp_path, "ctx_unrecorded", minif2f_theorems)
    path = tmp_path / thm.file_path
    text = path.read_text(encoding="utf-8").replace("x / 50 = 40) : x = 2000", "x = x) : x = x")
    path.write_text(text, encoding="utf-8")
    cfg = fake_config(
        project_dir=tmp_path, lean_path="", env={**REAL_START, "FAKE_PANTOGRAPH_VERSION": version}
    )
    with PantographEnv(cfg) as env:
        with pytest.raises(UnknownTheoremError):  # no source state, and copyFrom does not know it
            env.start(thm)
        assert env.client.live_states == 0  # the earlier theorem's states were freed


def test_start_from_the_statement_alone_says_so(minif2f_theorems):
    thm = minif2f_theorems[0]  # a statement, no file
    with PantographEnv(fake_config(env=REAL_START)) as env:
        state = env.start(thm)
    assert state.goals == first_step(thm)[0]
    assert state.handle.label == "source/statement" and "source/statement" in repr(state.handle)


def test_start_and_verify_build_their_text_with_one_builder(shared_data):
    """The real miniCTX files: start's text (``by sorry``) is verify's text with the proof
    replaced, by every route, so the first state is elaborated in the same context."""
    import json

    from lean_dojo_v2.interaction.pantograph.lean_text import TheoremSource

    folder = shared_data / "minictx" / "data" / "minictx"
    records = [
        json.loads(line)
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for record in records:
        context, statement = record["srcContext"], record["theoremStatement"]
        source = context + statement + " := by\n  simp\n"
        name = record["theoremName"] or "instance"
        where = TheoremSource(name, source, len(context), statement)
        assert where.routes(False) == [("file", False), ("context", False), ("context", True)]
        assert where.routes(True) == [("context", True)]
        assert where.routes(False, rename=True, statement_last=True) == [
            ("file", False),
            ("context", True),
            ("statement", True),
        ]
        for route in ("file", "context", "statement"):
            for_start = where.text(route, "sorry", rename=True)
            for_verify = where.text(route, "simp", rename=True)
            assert for_start.route == for_verify.route == route
            assert for_start.decl_start == for_verify.decl_start
            assert for_start.text.replace("sorry", "simp") == for_verify.text.replace(
                "sorry", "simp"
            )
        assert where.text("file", "sorry").text.endswith(" := by\n  sorry\n")
    assert TheoremSource("t", statement="theorem t : True").routes(False) == [
        ("statement", False),
        ("statement", True),
    ]
