"""Integration tests against a real Lean toolchain and Pantograph binary.

They run only where ``lean``/``lake`` are on PATH (the shared conftest skips ``lean``-marked tests
otherwise) and a Pantograph REPL is found (``LEAN_DOJO_V2_PANTOGRAPH``, PyPantograph, or
``LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT``). Only ``Init`` is imported, so no project is needed; the
Lean version check is skipped (no project ``lean-toolchain`` to compare with).
"""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import Pos, Theorem
from lean_dojo_v2.interaction import (
    LeanNotFoundError,
    PantographConfig,
    PantographEnv,
    ProofFinished,
    ProofState,
    TacticError,
    TacticTimeout,
)
from lean_dojo_v2.interaction.pantograph import locate_repl

pytestmark = [pytest.mark.lean, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def lean_env():
    try:
        locate_repl()
    except LeanNotFoundError as exc:
        pytest.skip(f"no Pantograph binary: {exc}")
    with PantographEnv(PantographConfig(imports=("Init",), ready_timeout=300)) as env:
        yield env


def test_expr_start_intro_omega(lean_env):
    state = lean_env.start_expr("∀ (a b : Nat), a + b = b + a")
    assert state.goals == ("⊢ ∀ (a b : Nat), a + b = b + a",)
    after = lean_env.run_tactic(state, "intro a b")
    assert isinstance(after, ProofState) and len(after.goals) == 1
    lines = after.goals[0].split("\n")
    assert lines[0] == "a b : Nat" and lines[-1] == "⊢ a + b = b + a"  # grouped like ppGoal
    assert isinstance(lean_env.run_tactic(after, "omega"), ProofFinished)
    bad = lean_env.run_tactic(after, "exact rfl")
    assert isinstance(bad, TacticError) and bad.kind == "tactic" and bad.message
    parse = lean_env.run_tactic(after, "rw [Nat.add_comm")
    assert parse.kind == "parse"
    sorry = lean_env.run_tactic(after, "sorry")
    assert sorry.kind == "sorry"


def test_copy_from_named_theorem(lean_env):
    thm = Theorem(
        "https://github.com/leanprover/lean4",
        "",
        "src/Init/Core.lean",
        "Nat.add_comm",
        Pos(1, 1),
        Pos(1, 1),
    )
    state = lean_env.start(thm)
    assert len(state.goals) == 1 and state.goals[0].startswith("⊢ ∀ (n m : Nat)")


def test_repl_timeout_keeps_process(lean_env):
    state = lean_env.start_expr("True")
    pid = lean_env.client.pid
    result = lean_env.run_tactic(state, "sleep 5000; trivial", timeout=0.5)
    assert isinstance(result, TacticTimeout)
    assert lean_env.client.pid == pid
    assert isinstance(lean_env.run_tactic(state, "trivial"), ProofFinished)


def test_check_and_verify_tiny_file(lean_env):
    ok = lean_env.check_source("theorem ldv2_t (a b : Nat) : a + b = b + a := by\n  omega\n")
    assert ok.ok and ok.checked_by == "lean"
    bad = lean_env.check_source("theorem ldv2_u : 1 = 2 := by\n  decide\n")
    assert not bad.ok
    sorry = lean_env.check_source("theorem ldv2_v : 1 = 1 := by\n  sorry\n")
    assert not sorry.ok
    thm = Theorem(
        "local",
        "",
        "Scratch.lean",
        "ldv2_w",
        Pos(1, 1),
        Pos(1, 1),
        theorem_statement="theorem ldv2_w (a b : Nat) : a + b = b + a := by",
        has_statement_field=True,
    )
    verdict = lean_env.verify(thm, "omega")
    assert verdict.ok and verdict.axioms is not None and verdict.nonstandard_axioms == ()
    native = lean_env.verify(thm, "exact Nat.add_comm a b")
    assert native.ok and native.nonstandard_axioms == ()
    # native_decide trusts the compiler: Lean names the axiom it adds
    decided = Theorem("local", "", "Scratch.lean", "ldv2_nd", Pos(1, 1), Pos(1, 1),
                      theorem_statement="theorem ldv2_nd : 2 + 2 = 4 := by",
                      has_statement_field=True)  # fmt: skip
    nd = lean_env.verify(decided, "native_decide")
    assert nd.ok and "Lean.ofReduceBool" in nd.nonstandard_axioms, nd
    # a theorem that is already in the environment is re-checked under a fresh name
    core = Theorem(
        "local",
        "",
        "Init/Core.lean",
        "Nat.add_comm",
        Pos(1, 1),
        Pos(1, 1),
        theorem_statement="theorem Nat.add_comm (n m : Nat) : n + m = m + n",
        has_statement_field=True,
    )
    assert lean_env.verify(core, "omega").ok


def test_start_from_statement_is_leandojo_first_state(lean_env):
    # Binders before the colon are hypotheses (inside `by`), as LeanDojo records the first state.
    thm = Theorem(
        "https://github.com/leanprover/lean4",
        "",
        "Ldv2/Check.lean",
        "ldv2_add_comm_start",
        Pos(1, 1),
        Pos(1, 1),
        theorem_statement="theorem ldv2_add_comm_start (a b : Nat) : a + b = b + a :=",
        has_statement_field=True,
    )
    state = lean_env.start(thm)
    assert state.handle.route == "source"
    assert state.goals == ("a b : Nat\n⊢ a + b = b + a",)
    assert isinstance(lean_env.run_tactic(state, "omega"), ProofFinished)


def test_options_print_and_frontend_fields_accepted(lean_env):
    assert "timeout" in lean_env.run_async(lean_env.client.options_print())


def test_first_recorded_tactic_of_traced_theorem_succeeds_from_start():
    """``make test-lean``: a traced theorem of a small public Lean project (the environment
    variables of the Makefile's ``test-lean`` target name it) starts in LeanDojo's first state and
    its first recorded tactic applies."""
    import os

    from lean_dojo_v2.data import goal_texts, load_theorems
    from lean_dojo_v2.interaction.pantograph import module_name

    project = os.environ.get("LEAN_DOJO_V2_TEST_PROJECT")
    dataset = os.environ.get("LEAN_DOJO_V2_TEST_DATASET")
    if not project or not dataset:
        pytest.skip(
            "LEAN_DOJO_V2_TEST_PROJECT / LEAN_DOJO_V2_TEST_DATASET not set (make test-lean)"
        )
    theorems = [t for t in load_theorems(dataset) if t.traced_tactics]
    if not theorems:
        pytest.skip(f"no traced theorem with tactics in {dataset}")
    thm = theorems[0]
    cfg = PantographConfig(
        project_dir=project, imports=("Init", module_name(thm.file_path)), ready_timeout=600
    )
    with PantographEnv(cfg) as env:
        state = env.start(thm)
        tt = thm.traced_tactics[0]
        assert state.handle.route == "source"
        assert state.goals == tuple(goal_texts(tt.state_before))
        after = env.run_tactic(state, tt.tactic)
        assert isinstance(after, (ProofState, ProofFinished)), after
