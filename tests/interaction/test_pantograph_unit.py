"""Pantograph client pieces that need no process: versions, discovery, parsing, rendering,
statements, config."""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys

import pytest

from lean_dojo_v2.data import goal_texts, sorry_declarations
from lean_dojo_v2.data.lean_lexer import find_top_level_assign as _find_top_level_assign
from lean_dojo_v2.data.lean_lexer import index_of
from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.interaction import (
    EnvClosedError,
    InteractionError,
    InvalidRequestError,
    LeanNotFoundError,
    ProofState,
    TacticError,
    VersionMismatchError,
)
from lean_dojo_v2.interaction.pantograph import (
    AsyncPantographEnv,
    GoalInfo,
    PantographConfig,
    PantographEnv,
    ReplProcess,
    StateHandle,
    TacticOutcome,
    Variable,
    canonical_goals,
    locate,
    locate_repl,
    module_name,
    parse_version,
    proof_file,
    render_goals,
    statement_from_source,
)
from lean_dojo_v2.interaction.pantograph.protocol import (
    CompilationUnit,
    GoalPrint,
    Message,
    PantographError,
)

from .conftest import fake_config, write_script

# ----------------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    "text, pantograph, lean",
    [
        ("0.3.4", "0.3.4", None),
        ("0.3.7/v4.21.0", "0.3.7", "4.21.0"),
        ("0.3.15/v4.29.1\n", "0.3.15", "4.29.1"),
        ("Pantograph 0.3.15 / v4.30.0-rc2", "0.3.15", "4.30.0-rc2"),
        ("weird", None, None),
    ],
)
def test_parse_version_is_loose(text, pantograph, lean):
    v = parse_version(text)
    assert (v.pantograph, v.lean) == (pantograph, lean)


def test_normalize_lean_version():
    n = locate.normalize_lean_version
    assert n("leanprover/lean4:v4.29.1\n") == "4.29.1"
    assert n("v4.21.0") == "4.21.0"
    assert n("4.9.0") == "4.9.0"
    assert n("") is None and n(None) is None


def _located(tmp_path, toolchain=None):
    binary = write_script(tmp_path / "repl", "exit 0")
    if toolchain:
        (tmp_path / "lean-toolchain").write_text(toolchain + "\n")
    return locate.Located((str(binary),), "test")


def test_version_mismatch_refused(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.29.1\n")
    located = _located(bin_dir)
    # from the /vX part of --version
    with pytest.raises(VersionMismatchError, match=r"Lean v4\.21\.0.*v4\.29\.1"):
        locate.check_versions(parse_version("0.3.7/v4.21.0"), located, project)
    # from a lean-toolchain beside the binary when --version has no /vX
    (bin_dir / "lean-toolchain").write_text("leanprover/lean4:v4.28.0\n")
    with pytest.raises(VersionMismatchError, match="4.28.0"):
        locate.check_versions(parse_version("0.3.14"), located, project)
    assert locate.check_versions(parse_version("0.3.15/v4.29.1"), located, project) == "4.29.1"


def test_version_unknown_warns_and_proceeds(tmp_path, caplog):
    located = _located(tmp_path)
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.interaction.pantograph"):
        assert locate.check_versions(parse_version("0.3.4"), located, None) is None
    assert "unknown" in caplog.text


def test_checkout_layout_toolchain(tmp_path):
    binary = tmp_path / ".lake" / "build" / "bin" / "repl"
    binary.parent.mkdir(parents=True)
    write_script(binary, "exit 0")
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.21.0\n")
    assert locate.binary_toolchain(locate.Located((str(binary),), "t")) == "4.21.0"


# ---------------------------------------------------------------------------------- discovery


@pytest.fixture
def clean_discovery(monkeypatch):
    monkeypatch.delenv(locate.ENV_BINARY, raising=False)
    monkeypatch.delenv(locate.ENV_CHECKOUT, raising=False)
    monkeypatch.delitem(sys.modules, "pantograph", raising=False)
    importlib.invalidate_caches()


def test_discovery_order(tmp_path, monkeypatch, clean_discovery):
    # Nothing anywhere: a LeanNotFoundError that says what to install and how to point at it.
    with pytest.raises(LeanNotFoundError) as err:
        locate_repl()
    text = str(err.value)
    assert "elan" in text and locate.ENV_BINARY in text and locate.ENV_CHECKOUT in text

    # 4. a lake-built checkout
    checkout = tmp_path / "Pantograph"
    repl = checkout / ".lake" / "build" / "bin" / "repl"
    repl.parent.mkdir(parents=True)
    write_script(repl, "exit 0")
    monkeypatch.setenv(locate.ENV_CHECKOUT, str(checkout))
    assert locate_repl() == locate.Located((str(repl),), locate.ENV_CHECKOUT)

    # PyPI's unrelated "pantograph" (no pantograph-repl) is ignored ...
    decoy = tmp_path / "decoy"
    (decoy / "pantograph").mkdir(parents=True)
    (decoy / "pantograph" / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    monkeypatch.syspath_prepend(str(decoy))
    importlib.invalidate_caches()
    assert locate_repl().source == locate.ENV_CHECKOUT

    # 3. ... but PyPantograph's pantograph-repl wins over the checkout, found without importing.
    site = tmp_path / "site"
    (site / "pantograph").mkdir(parents=True)
    (site / "pantograph" / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    pyp = write_script(site / "pantograph" / "pantograph-repl", "exit 0")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert locate_repl() == locate.Located((str(pyp),), "PyPantograph")
    assert "pantograph" not in sys.modules

    # 2. the environment variable wins over PyPantograph (a path, or a command line)
    other = write_script(tmp_path / "my-repl", "exit 0")
    monkeypatch.setenv(locate.ENV_BINARY, str(other))
    assert locate_repl() == locate.Located((str(other),), locate.ENV_BINARY)
    monkeypatch.setenv(locate.ENV_BINARY, f"{sys.executable} -u {other}")
    assert locate_repl().command == (sys.executable, "-u", str(other))

    # 1. an explicit argument wins over everything
    explicit = write_script(tmp_path / "explicit-repl", "exit 0")
    assert locate_repl(explicit) == locate.Located((str(explicit),), "argument")
    assert locate_repl([sys.executable, str(explicit)]).command == (sys.executable, str(explicit))


def test_discovery_errors(tmp_path, monkeypatch, clean_discovery):
    with pytest.raises(LeanNotFoundError, match="does not exist"):
        locate_repl(tmp_path / "nope" / "repl")
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(LeanNotFoundError, match="not executable"):
        locate_repl(str(plain))
    monkeypatch.setenv(locate.ENV_CHECKOUT, str(tmp_path))
    monkeypatch.setattr(locate, "pypantograph_binary", lambda: None)
    with pytest.raises(LeanNotFoundError, match="lake build repl"):
        locate_repl()


def test_module_name_from_file_path():
    assert module_name("Mathlib/Foo/Bar.lean") == "Mathlib.Foo.Bar"
    assert module_name("Mathlib/Topology/Semicontinuous.lean") == "Mathlib.Topology.Semicontinuous"
    assert module_name(".lake/packages/batteries/Batteries/Data/List/Basic.lean") == (
        "Batteries.Data.List.Basic"
    )
    assert module_name(".lake/packages/lean4/src/lean/Init/Core.lean") == "Init.Core"


# ----------------------------------------------------------------------------------- protocol


def test_encode_one_compact_line_never_blank():
    line = ReplProcess.encode("goal.tactic", {"stateId": 0, "tactic": "intro x\n  simp ⊢"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.startswith(b'goal.tactic {"stateId":0,')
    assert "⊢".encode() in line  # raw UTF-8, no \u escapes
    assert ReplProcess.encode("stat", None) == b"stat {}\n"
    for bad in ("", " ", "goal tactic", "x\n"):
        with pytest.raises(ValueError):
            ReplProcess.encode(bad, {})


def _goal_json(name, target, vars_, user=None, fragment="tactic"):
    d = {"name": name, "fragment": fragment, "target": {"pp": target}, "vars": vars_}
    if user is not None:
        d["userName"] = user
    return d


def _var(user, type_, value=None):
    d = {"name": f"_uniq.{user}", "userName": user, "isInaccessible": "✝" in user}
    d["type"] = {"pp": type_}
    if value is not None:
        d["value"] = {"pp": value}
    return d


def test_goal_rendering_groups_like_ppgoal(sample_proofs):
    # The recorded state of a real theorem: `C : Type u₁`, `inst✝² : Category.{v₁, u₁} C`, …
    thm = next(t for t in sample_proofs if t.full_name.endswith("invFunIdAssoc_hom_app"))
    expected = goal_texts(thm.traced_tactics[0].state_before)
    # Rebuild the goal the way Pantograph sends it: one variable per name, then render.
    from lean_dojo_v2.data.goals import parse_goal

    g = parse_goal(expected[0])
    vars_ = [_var(n, h.type, h.value) for h in g.hypotheses for n in h.names]
    goal = GoalInfo.from_json(_goal_json("_uniq.1", g.target, vars_))
    assert canonical_goals([goal]) == tuple(expected)

    # grouping: consecutive, same type, no value; case line; let values; conv marker
    goal = GoalInfo.from_json(
        _goal_json(
            "_uniq.9",
            "a + b = b + a",
            [
                _var("a", "ℕ"),
                _var("b", "ℕ"),
                _var("x", "ℕ", "a"),
                _var("c", "ℕ"),
                _var("h", "0 < a"),
            ],
            user="succ",
        )
    )
    assert goal.render() == "case succ\na b : ℕ\nx : ℕ := a\nc : ℕ\nh : 0 < a\n⊢ a + b = b + a"
    conv = GoalInfo.from_json(_goal_json("_uniq.2", "a", [], fragment="conv"))
    assert conv.render() == "| a"
    assert render_goals([]) == "no goals"
    # multi-line pretty-printing is made one line (as LeanDojo's canonical form does)
    wrapped = GoalInfo("_uniq.3", "foo\n    bar", (Variable("_uniq.4", "h", "p ∧\n  q"),))
    assert canonical_goals([wrapped]) == ("h : p ∧ q\n⊢ foo bar",)


def test_legacy_goal_fields():
    g = GoalInfo.from_json(
        {
            "name": "_uniq.1",
            "isConversion": True,
            "target": {"pp": "x"},
            "vars": [],
            "userName": "[anonymous]",
        }
    )
    assert g.fragment == "conv" and g.user_name is None


def test_tactic_outcome_shapes():
    ok = TacticOutcome.from_json(
        {"goals": [], "hasSorry": False, "hasUnsafe": False, "messages": [], "nextStateId": 2}
    )
    assert ok.shape == "success" and ok.is_solved and ok.next_state_id == 2
    msg = {
        "caption": "",
        "data": "The rfl tactic failed",
        "endPos": None,
        "fileName": "<Pantograph>",
        "isSilent": False,
        "keepFullRange": False,
        "kind": "[anonymous]",
        "pos": {"column": 0, "line": 0},
        "severity": "error",
    }
    fail = TacticOutcome.from_json({"hasSorry": False, "hasUnsafe": False, "messages": [msg]})
    assert fail.shape == "failure" and fail.error_text() == "The rfl tactic failed"
    parse = TacticOutcome.from_json(
        {"hasSorry": False, "hasUnsafe": False, "parseError": "<Pantograph>:1:16: x"}
    )
    assert parse.shape == "parse" and parse.error_text().endswith("x")
    err = TacticOutcome.from_json({"desc": "interrupt", "error": "io"})
    assert err.shape == "error" and err.interrupted
    old = TacticOutcome.from_json({"tacticErrors": ["bad"]})  # ≤ 0.3.0
    assert old.shape == "failure" and old.error_text() == "bad"
    strings = TacticOutcome.from_json({"messages": ["oops"], "hasSorry": False, "hasUnsafe": False})
    assert strings.error_text() == "oops"  # 0.3.1–0.3.3 string messages


def test_other_reply_objects():
    gp = GoalPrint.from_json(
        {
            "goals": [],
            "extraMVars": [],
            "rootHasSorry": False,
            "rootHasUnsafe": False,
            "rootHasMVar": True,
        }
    )
    assert gp.root is None and gp.root_has_mvar
    unit = CompilationUnit.from_json(
        {
            "boundary": [0, 22],
            "messages": [
                {
                    "data": "declaration uses 'sorry'",
                    "severity": "warning",
                    "kind": "hasSorry",
                    "pos": {"line": 1, "column": 8},
                    "endPos": None,
                }
            ],
        }
    )
    assert unit.boundary == (0, 22) and unit.messages[0].is_sorry_warning and not unit.errors
    assert (
        str(Message.from_json({"data": "x", "pos": {"line": 3, "column": 1}, "severity": "error"}))
        == "3:1: error: x"
    )
    e = PantographError("index", "Symbol not found: Foo.bar", "goal.start")
    assert e.is_unknown_symbol and not e.is_interrupt


# --------------------------------------------------------------------------------- statements


def test_top_level_assign_skips_brackets_comments_strings():
    s = 'theorem t (x : ℕ := 3) {s : S} (h : s = { a := 1 }) -- := no\n /- := -/ : "a:=b" = "" := by'
    assert s[_find_top_level_assign(s) :] == ":= by"
    assert _find_top_level_assign("theorem t : P") == -1


def test_statement_from_source_uses_1_based_positions(minif2f_theorems):
    thm = minif2f_theorems[0]
    statement = thm.theorem_statement
    text = "import Mathlib\n\nopen Real\n\n/-- doc -/\ntheorem " + statement + "\n  sorry\n"
    line = text[: text.index("theorem")].count("\n") + 1
    got = statement_from_source(text, line, 1)
    assert got == "theorem " + statement[: statement.rindex(":=")].rstrip()
    with pytest.raises(Exception, match="outside the file"):
        statement_from_source(text, 999, 1)


@pytest.mark.parametrize("char", ["'('", "')'", "'⟨'", "'⟩'", "'\"'", "'\\''", "'\\n'", "'{'"])
def test_statement_from_source_reads_char_literals(char):
    text = f"theorem t : {char} = {char} := by rfl"
    assert statement_from_source(text, 1, 1) == f"theorem t : {char} = {char}"
    # Whatever follows the literal: the bracket inside it opens nothing.
    text = f"theorem t (c : Char := {char}) : c = c := by\n  rfl\n"
    assert statement_from_source(text, 1, 1) == f"theorem t (c : Char := {char}) : c = c"


def test_statement_from_source_on_putnam_bench_files(shared_data):
    # Oracle: each ``sorry`` declaration ends ``:= sorry`` / ``:= by sorry``; statements hold
    # ``let … :=`` (putnam_2025_b5), binders, set-builder braces and doc comments.
    root = shared_data / "prover_benchmarks" / "putnambench_lean4" / "src"
    files = sorted(root.glob("*.lean"))
    assert files
    for path in files:
        source = path.read_text(encoding="utf-8")
        for decl in sorry_declarations(source):
            start = index_of(source, *decl.start)
            sorry_at = index_of(source, *decl.sorry_positions[-1])
            expected = source[start : source.rindex(":=", 0, sorry_at)].rstrip()
            assert statement_from_source(source, *decl.start) == expected, path.stem


def test_statement_from_source_skips_binder_default_values():
    text = "theorem t (a : Char := ')') (b : Nat := 0) : a = a := rfl"
    assert statement_from_source(text, 1, 1) == "theorem t (a : Char := ')') (b : Nat := 0) : a = a"
    text = 'theorem t (s : String := "(") (n : Nat := 0) : s = s := rfl'
    assert statement_from_source(text, 1, 1) == text[: text.rindex(" :=")]


def test_statement_from_source_skips_let_in_the_statement():
    # PutnamBench writes ``let ⟨a, b⟩ := putnam_..._solution`` in statements (1965 B4, 1984 A5).
    text = "theorem t (n : ℕ) :\n    let (a, b) := sol;\n    a = b := by\n  sorry\n"
    assert (
        statement_from_source(text, 1, 1)
        == "theorem t (n : ℕ) :\n    let (a, b) := sol;\n    a = b"
    )


def test_statement_from_source_does_not_run_into_the_next_declaration():
    text = "instance : Inhabited Nat where\n  default := 0\n\ntheorem u : True := trivial\n"
    with pytest.raises(InteractionError, match="no ':='"):
        statement_from_source(text, 1, 1)
    text = "def f : Nat → Nat\n  | 0 => 1\n  | n + 1 => n\n\ntheorem u : True := trivial\n"
    with pytest.raises(InteractionError, match="no ':='"):
        statement_from_source(text, 1, 1)
    assert statement_from_source(text, 5, 1) == "theorem u : True"


def test_proof_file_accepts_crlf_line_endings():
    for proof in ("by\n  intro h\n  trivial", "intro h\n  trivial", "by intro h\n   trivial"):
        lf = proof_file("theorem t : True → True", proof)
        assert proof_file("theorem t : True → True", proof.replace("\n", "\r\n")) == lf
        assert "\r" not in lf and lf.startswith("theorem t : True → True := by\n  intro h\n")


def test_proof_file_layout(minif2f_theorems):
    thm = minif2f_theorems[0]
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    text = proof_file(thm.theorem_statement, proof, thm.full_name)
    head = thm.theorem_statement[: thm.theorem_statement.rindex(":=")].rstrip()
    assert text.startswith("theorem " + head + " := by\n  ")
    assert all(line.startswith("  ") for line in text.split(":= by\n", 1)[1].splitlines() if line)
    # a namespaced theorem whose statement names it relative to its namespace
    t2 = proof_file("theorem comp_apply (x : α) : f x = f x", "by rfl", "Function.comp_apply")
    assert t2.startswith("namespace Function\n\ntheorem comp_apply") and t2.endswith(
        "end Function\n"
    )
    t3 = proof_file("theorem comp_apply : True", "trivial", "Function.comp_apply", rename=True)
    assert "theorem comp_apply_ldv2_check : True := by\n  trivial" in t3


# ------------------------------------------------------------------------------------- config


def test_config_validation():
    cfg = PantographConfig(core_options={"maxHeartbeats": 400000, "pp.raw": True})
    assert cfg.core_option_args() == ["--maxHeartbeats=400000", "--pp.raw=true"]
    assert PantographConfig(core_options=["maxHeartbeats=1", "--x=y"]).core_option_args() == [
        "--maxHeartbeats=1",
        "--x=y",
    ]
    for bad in (
        dict(ready_timeout=0),
        dict(tactic_timeout=-1),
        dict(max_requests=0),
        dict(imports="Mathlib"),
        dict(options={"printJsonPretty": True}),
        dict(options={"noRepeat": True}),
        dict(options={"automaticMode": False}),
    ):
        with pytest.raises(ConfigError):
            PantographConfig(**bad)


def test_package_import_is_light():
    import subprocess

    code = (
        "import sys, lean_dojo_v2.interaction as i; "
        "from lean_dojo_v2.interaction import PantographEnv, PantographPool, PantographConfig, "
        "AsyncPantographEnv; "
        "import threading; assert threading.active_count() == 1, threading.enumerate(); "
        "assert 'psutil' not in sys.modules and 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _as_repl_json(goal_text: str) -> dict:
    """A recorded goal as Pantograph sends it: one variable per hypothesis name."""
    from lean_dojo_v2.data.goals import parse_goal

    g = parse_goal(goal_text)
    vars_ = [_var(n, h.type, h.value) for h in g.hypotheses for n in h.names]
    return _goal_json("_uniq.0", g.target, vars_, user=g.case)


def test_every_recorded_state_renders_back_to_its_canonical_text(sample_proofs, minif2f_theorems):
    """ppGoal-style rendering + canonicalisation of Pantograph-shaped goals reproduces every
    recorded LeanDojo/miniCTX state (both from JSON and from parsed GoalInfo)."""
    n = 0
    for thm in [*sample_proofs, *minif2f_theorems]:
        for tt in thm.traced_tactics:
            for state in (tt.state_before, tt.state_after):
                expected = tuple(goal_texts(state))
                raw = [_as_repl_json(t) for t in expected]
                assert canonical_goals(raw) == expected, (thm.full_name, state)
                assert canonical_goals([GoalInfo.from_json(g) for g in raw]) == expected
                n += 1
    assert n > 400


# ------------------------------------------------------------------- run_tactic argument checks

BAD_TACTIC_CALLS = [
    ("rfl\ud800", None),  # a lone surrogate cannot be encoded for Lean
    ("\udc80", 5.0),
    (None, None),
    (["rfl"], None),
    ("rfl", float("nan")),
    ("rfl", "5"),
    ("rfl", -1),
    ("rfl", 0),
    ("rfl", float("-inf")),
    ("rfl", float("inf")),  # refused: every call is bounded; None means the default limit
    ("rfl", False),
]


@pytest.mark.parametrize("tactic, timeout", BAD_TACTIC_CALLS)
def test_async_run_tactic_rejects_bad_arguments_before_sending(tactic, timeout):
    # No REPL is started: the check comes before anything else (the state is not even looked at).
    aenv = AsyncPantographEnv(fake_config())
    state = ProofState(("⊢ True",), "pantograph")
    with pytest.raises(InvalidRequestError) as info:
        asyncio.run(aenv.run_tactic(state, tactic, timeout))
    assert isinstance(info.value, ValueError)
    assert aenv.client._proc is None and aenv.generation == 0
    if not isinstance(tactic, str) or not isinstance(timeout, str | None):
        return
    with pytest.raises(InvalidRequestError):
        asyncio.run(aenv.run_tactic_raw(state, timeout, expr=tactic))


def test_run_tactic_bad_arguments_leave_the_repl_running(sample_proofs):
    thm = next(t for t in sample_proofs if t.traced_tactics)
    with PantographEnv(fake_config()) as env:
        state = env.start(thm)
        generation, restarts = env.client.generation, env.client.restarts
        for bad_tactic, bad_timeout in BAD_TACTIC_CALLS:
            with pytest.raises(InvalidRequestError, match="timeout|tactic"):
                env.run_tactic(state, bad_tactic, bad_timeout)
        # The REPL was neither killed nor restarted: the same state still answers.
        result = env.run_tactic(state, "exact this_is_not_recorded", 5)
        assert isinstance(result, TacticError) and result.kind == "tactic"
        assert (env.client.generation, env.client.restarts) == (generation, restarts)


def test_pantograph_env_after_close_raises_env_closed(sample_proofs):
    thm = next(t for t in sample_proofs if t.traced_tactics)
    env = PantographEnv(fake_config())
    state = env.start(thm)
    env.close()
    with pytest.raises(EnvClosedError):
        env.run_tactic(state, "rfl")
    with pytest.raises(EnvClosedError):
        env.start(thm)


def test_parse_axioms_reads_leans_answers_and_nothing_else():
    from lean_dojo_v2.interaction.pantograph.lean_text import parse_axioms

    assert parse_axioms("'Classical.em' depends on axioms: [propext, Classical.choice, Quot.sound]") \
        == ("propext", "Classical.choice", "Quot.sound")  # fmt: skip
    assert parse_axioms("'contra' depends on axioms: [sorryAx]") == ("sorryAx",)
    assert parse_axioms("'f' depends on axioms:\n  [propext,\n   Lean.ofReduceBool]") == (
        "propext",
        "Lean.ofReduceBool",
    )
    assert parse_axioms("'Nat.add_zero' does not depend on any axioms") == ()
    assert parse_axioms("unknown constant 'x'") is None
    assert parse_axioms("declaration uses 'sorry'") is None


def test_the_checked_name_follows_the_declaration_as_checked():
    from lean_dojo_v2.interaction.pantograph.lean_text import (
        CheckedText,
        renamed_name,
        statement_name,
    )

    assert renamed_name("A.b") == "A.b_ldv2_check"
    assert renamed_name("A.«b c»") == "A.«b c_ldv2_check»"
    # proof_file puts `theorem b` of `A.b` into namespace A: Lean knows it as A.b
    assert statement_name("theorem b : True", "A.b") == "A.b"
    assert statement_name("theorem b : True", "A.b_ldv2_check") == "A.b_ldv2_check"
    assert statement_name("theorem A.b : True", "A.b") == "A.b"
    assert statement_name("theorem other : True", "A.b") == "other"
    assert statement_name("theorem other : True", "A.b_ldv2_check") == "other_ldv2_check"
    assert statement_name("theorem _root_.c : True", "A.c") == "c"
    assert statement_name("example : True", "A.b") is None
    text, start = CheckedText("theorem b : True := by\n  trivial\n", "statement", 0, "b") \
        .with_axioms_query()  # fmt: skip
    assert text.endswith(" := by\n  trivial\n\n#print axioms b\n")
    assert text[start:].startswith("\n#print") and text[:start].endswith("trivial\n")
    assert CheckedText("x", "text").with_axioms_query() is None


def test_goals_without_a_state_id_are_a_pantograph_error(monkeypatch):
    # A "success" reply with goals must name the new state; without one, nothing could continue it.
    aenv = AsyncPantographEnv(fake_config())
    handle = StateHandle(aenv.env_id, aenv.client.generation, 1, ())
    state = ProofState(("⊢ True",), "pantograph", handle=handle)
    goal = {"name": "_uniq.1", "target": {"pp": "True"}, "vars": []}

    async def goal_tactic(*args: object, **kwargs: object) -> TacticOutcome:
        return TacticOutcome.from_json({"goals": [goal], "hasSorry": False, "hasUnsafe": False})

    monkeypatch.setattr(aenv.client, "goal_tactic", goal_tactic)
    with pytest.raises(PantographError, match="nextStateId"):
        asyncio.run(aenv.run_tactic(state, "constructor"))
