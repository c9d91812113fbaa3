"""The low-level ``AsyncPantographClient`` against the fake REPL: every command and every
``goal.tactic`` outcome shape, with shuffled keys and stderr noise on, and what goes on the wire."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.data import goal_texts
from lean_dojo_v2.interaction.pantograph import (
    PantographEnv,
    PantographError,
    canonical_goals,
)

from .conftest import fake_config, first_step


@pytest.fixture(scope="module")
def wire_log(tmp_path_factory):
    return tmp_path_factory.mktemp("wire") / "requests.log"


@pytest.fixture(scope="module")
def penv(wire_log):
    cfg = fake_config(
        env={
            "FAKE_PANTOGRAPH_SHUFFLE_KEYS": "1",
            "FAKE_PANTOGRAPH_STDERR_NOISE": "1",
            "FAKE_PANTOGRAPH_LOG": str(wire_log),
        },
        options={"printDependentMVars": True},
        core_options={"maxHeartbeats": 400000},
    )
    with PantographEnv(cfg) as env:
        yield env


def run(penv, coro):
    return penv.run_async(coro)


def test_options_stat_reset(penv, sample_proofs):
    c = penv.client
    opts = run(penv, c.options_print())
    assert opts["printDependentMVars"] is True  # config options applied after ready.
    assert opts["automaticMode"] is True and opts["printJsonPretty"] is False
    run(penv, c.options_set(printAuxDecls=True))
    assert run(penv, c.options_print())["printAuxDecls"] is True
    assert isinstance(run(penv, c.stat()), int)
    gen = c.generation
    run(penv, c.goal_start(copy_from=sample_proofs[0].full_name))
    n = run(penv, c.reset())
    assert n >= 1 and run(penv, c.stat()) == 0
    assert c.generation == gen + 1  # ids restart at 0: older states are now stale


def test_goal_start_copy_from_and_expr(penv, sample_proofs):
    c = penv.client
    thm = sample_proofs[3]
    before, _, _ = first_step(thm)
    started = run(penv, c.goal_start(copy_from=thm.full_name))
    assert started.root.startswith("_uniq.")
    printed = run(penv, c.goal_print(started.state_id))
    assert canonical_goals(printed.goals) == before
    assert all(g.name.startswith("_uniq.") for g in printed.goals)
    s2 = run(penv, c.goal_start("∀ (a b : Nat), a + b = b + a"))
    p2 = run(penv, c.goal_print(s2.state_id))
    assert [g.target for g in p2.goals] == ["∀ (a b : Nat), a + b = b + a"]
    with pytest.raises(PantographError) as err:
        run(penv, c.goal_start(copy_from="No.Such.theorem"))
    assert err.value.kind == "index" and err.value.is_unknown_symbol
    with pytest.raises(ValueError):
        run(penv, c.goal_start("x", copy_from="y"))


def test_goal_tactic_four_shapes(penv, sample_proofs):
    c = penv.client
    thm = next(t for t in sample_proofs if len(t.traced_tactics) >= 2)
    before, tactic, after = first_step(thm)
    sid = run(penv, c.goal_start(copy_from=thm.full_name)).state_id
    ok = run(penv, c.goal_tactic(sid, tactic))
    assert ok.shape == "success" and canonical_goals(ok.goals) == after
    assert ok.next_state_id is not None and not ok.has_sorry
    fail = run(penv, c.goal_tactic(sid, "exact not_a_recorded_tactic"))
    assert fail.shape == "failure" and fail.messages and fail.messages[0].is_error
    assert "not_a_recorded_tactic" in fail.error_text()
    parse = run(penv, c.goal_tactic(sid, "rw [foo"))
    assert parse.shape == "parse" and "expected" in parse.parse_error
    err = run(penv, c.goal_tactic(10**6, "simp"))
    assert err.shape == "error" and err.error_kind == "index"
    sorry = run(penv, c.goal_tactic(sid, "fake_sorry"))
    assert sorry.shape == "success" and sorry.has_sorry and sorry.next_state_id is not None


@pytest.mark.parametrize(
    "fields",
    [
        {"mode": "conv"},
        {"mode": "calc"},
        {"mode": "tactic"},
        {"expr": "Nat.add_comm a b"},
        {"have": "2 = 1 + 1", "binder_name": "h"},
        {"let": "(2 : Nat)", "binder_name": "x"},
        {"draft": "by sorry"},
    ],
)
def test_goal_tactic_other_modes_are_well_formed(penv, sample_proofs, fields):
    # The fake does not elaborate these; it answers a well-formed failure (not a `command` error,
    # which is what a malformed request would get).
    c = penv.client
    sid = run(penv, c.goal_start(copy_from=sample_proofs[0].full_name)).state_id
    out = run(penv, c.goal_tactic(sid, goal_id=0, auto_resume=True, **fields))
    assert out.shape == "failure", out
    with pytest.raises(ValueError):
        run(penv, c.goal_tactic(sid, "simp", mode="conv"))
    with pytest.raises(ValueError):
        run(penv, c.goal_tactic(sid, mode="bogus"))


def test_goal_continue_delete_print(penv, sample_proofs):
    c = penv.client
    thm = sample_proofs[0]
    sid = run(penv, c.goal_start(copy_from=thm.full_name)).state_id
    printed = run(
        penv, c.goal_print(sid, root_expr=True, parent_exprs=True, extra_mvars=["_uniq.1"])
    )
    assert printed.root is None and printed.root_has_mvar  # root unassigned yet
    names = [g.name for g in printed.goals]
    cont = run(penv, c.goal_continue(sid, goals=names))
    assert [g.name for g in cont.goals] == names and cont.next_state_id != sid
    with pytest.raises(PantographError) as err:  # the target still has goals
        run(penv, c.goal_continue(sid, branch=cont.next_state_id))
    assert err.value.kind == "structure"
    before = run(penv, c.stat())
    run(penv, c.goal_delete([sid, cont.next_state_id, 10**6]))  # unknown ids are ignored
    assert run(penv, c.stat()) == before - 2
    with pytest.raises(PantographError, match="Invalid state index"):
        run(penv, c.goal_print(sid))


def test_frontend_process_and_distil(penv, minif2f_theorems):
    c = penv.client
    thm = minif2f_theorems[0]
    statement = thm.theorem_statement
    proof = "\n".join("  " + t.tactic for t in thm.traced_tactics)
    head = statement[: statement.rindex(":=")].rstrip()
    text = f"theorem {head} := by\n{proof}\n"
    units = run(penv, c.frontend_process(text, new_constants=True, invocations=True))
    assert len(units) == 1 and not units[0].messages
    assert units[0].boundary[0] == 0 and units[0].boundary[1] <= len(text.encode())
    assert units[0].new_constants == (thm.full_name,)
    assert units[0].n_invocations == len(thm.traced_tactics)
    inv = units[0].invocations
    assert [i["tactic"] for i in inv] == [t.tactic for t in thm.traced_tactics]
    assert goal_texts(inv[0]["goalBefore"]) == goal_texts(thm.traced_tactics[0].state_before)

    # sorry: a warning, and distil turns it into a goal state with the recorded goals
    sorry_text = f"theorem {head} := by\n  sorry\n"
    units = run(penv, c.frontend_process(sorry_text))
    assert any(m.is_sorry_warning for u in units for m in u.messages)
    targets = run(penv, c.frontend_distil(sorry_text))
    assert len(targets) == 1
    assert canonical_goals(targets[0].goals) == tuple(
        goal_texts(thm.traced_tactics[0].state_before)
    )

    with pytest.raises(PantographError) as err:
        run(penv, c.frontend_process(file_name="/nonexistent/file.lean"))
    assert err.value.kind == "io"


def test_env_inspect_describe_echo(penv, sample_proofs):
    c = penv.client
    thm = sample_proofs[0]
    info = run(penv, c.env_inspect(thm.full_name, dependency=True, source=True))
    assert info.type and info.module == thm.file_path[:-5].replace("/", ".")
    assert info.data["valueDependency"] == thm.premises
    with pytest.raises(PantographError, match="Symbol not found"):
        run(penv, c.env_inspect("No.Such.name"))
    assert run(penv, c.env_describe())["imports"] == ["Init"]
    with pytest.raises(PantographError) as err:
        run(penv, c.expr_echo("1 + 1"))
    assert err.value.kind == "expr"
    raw = run(penv, c.request("frobnicate", {}))
    assert raw == {"error": "command", "desc": "Unknown command frobnicate"}


def test_wire_format(penv, wire_log, sample_proofs):
    c = penv.client
    sid = run(penv, c.goal_start(copy_from=sample_proofs[0].full_name)).state_id
    # the REPL's own `timeout` option follows the tactic limit, set only when it changes
    run(penv, c.goal_tactic(sid, "simp", timeout=7.5))
    run(penv, c.goal_tactic(sid, "simp", timeout=7.5))
    run(penv, c.goal_tactic(sid, "simp"))  # back to the configured default (none)
    lines = wire_log.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""  # the log ends with a newline
    lines = lines[:-1]
    assert lines and all(line.strip() for line in lines)  # never a blank line
    first = lines[0]
    assert first.startswith("options.set ")  # config options right after ready.
    for line in lines:
        cmd, _, payload = line.partition(" ")
        assert " " not in cmd
        if payload:
            obj = json.loads(payload)
            assert json.dumps(obj, ensure_ascii=False, separators=(",", ":")) == payload  # compact
    timeouts = [line for line in lines if line.startswith('options.set {"timeout"')]
    assert timeouts[-2:] == ['options.set {"timeout":7500}', 'options.set {"timeout":0}']
    assert lines[-1] == f'goal.tactic {{"stateId":{sid},"tactic":"simp"}}'


def test_stderr_is_drained_and_kept(penv):
    tail = penv.client.stderr_tail()
    assert "[fake pantograph] running" in tail  # noise from every command, ring-buffered
    assert len(penv.client.process.pipes.stderr) <= penv.config.stderr_lines


def test_options_print_sends_a_payload_so_the_real_server_knows_it(penv, wire_log):
    assert "timeout" in run(penv, penv.client.options_print())
    sent = wire_log.read_text(encoding="utf-8").splitlines()
    assert sent and all(" " in line or line.startswith("{") for line in sent)
    assert "options.print {}" in sent


# Real goal text with macro scopes in the case tag: a Lean proof's recorded state, as printed
# (``case a.«_@».Mathlib.Data.Matrix.Defs._hyg.177.«0»``), and the hygienic user name Lean gives
# a binder (``a._@._internal.0.test.SimpTrace.Fixtures.2021293418._hygCtx._hyg.21``).
MATRIX_CASE = (
    "case a.«_@».Mathlib.Data.Matrix.Defs._hyg.177.«0»\n"
    "z : Complex\n"
    "i : Fin 2\n"
    "⊢ Eq (Matrix.vecCons z.re (Matrix.vecCons z.im Matrix.vecEmpty) i) (Matrix.vec z i)"
)


def test_canonical_state_erases_macro_scopes_in_case_tags():
    from lean_dojo_v2.data.goals import canonical_state

    erased = canonical_state(MATRIX_CASE)
    assert erased.startswith("case a\nz : Complex\n")
    hyg = "case a._@._internal.0.test.SimpTrace.Fixtures.2021293418._hygCtx._hyg.21\n⊢ True"
    assert canonical_state(hyg) == "case a\n⊢ True"
    assert canonical_state("case h\n⊢ True") == "case h\n⊢ True"


def test_pantograph_goals_erase_macro_scopes_like_traced_states():
    goal = {
        "name": "_uniq.7",
        "userName": "a._@.Mathlib.Data.Matrix.Defs._hyg.177",
        "fragment": "tactic",
        "target": {"pp": "z.re = z.re"},
        "vars": [{"name": "_uniq.3", "userName": "z", "type": {"pp": "Complex"}}],
    }
    assert canonical_goals([goal]) == ("case a\nz : Complex\n⊢ z.re = z.re",)
