"""Who decides that a proof counts: the recorded verifier (exactly the bundled proofs a real
Lean run accepted, up to white space, for the exact statement), the Lean verifier's axiom check,
and every refusal of ``make_verifier_env`` as one line."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.errors import LeanDojoError, LeanNotFoundError
from lean_dojo_v2.evaluation.benchmarks import load_benchmark
from lean_dojo_v2.evaluation.errors import VerifierError
from lean_dojo_v2.evaluation.recorded import RecordedEnv, RecordedProofs, split_lean_file
from lean_dojo_v2.evaluation.verifiers import (
    AxiomCheckedEnv,
    LeanVerifier,
    RecordedVerifier,
    ReplayVerifier,
    make_verifier_env,
)
from lean_dojo_v2.interaction import ProofEnv, ReplayEnv, Verdict
from lean_dojo_v2.interaction.types import UnknownTheoremError
from lean_dojo_v2.prover.verify import verify_proof

from .proof_variants import other_proofs

MINIF2F_TEST = load_benchmark("minif2f-test")
RECORDS = RecordedProofs.bundled()


def _recorded(name: str) -> tuple[object, str]:
    problem = MINIF2F_TEST.problem(name)
    (record,) = RECORDS.for_statement(problem.header, problem.formal_statement)
    return problem, record.proof


# -- the recorded verifier ---------------------------------------------------------------------------


def test_the_records_hold_kimina_and_deepseek_proofs():
    assert len(RECORDS) == 217 + 67
    with_proof = [
        p for p in MINIF2F_TEST.problems if RECORDS.for_statement(p.header, p.formal_statement)
    ]
    # 16 of Kimina-Prover's 217 proofs are of statements it formalised differently
    assert len(with_proof) == 201
    valid = load_benchmark("minif2f-valid")
    assert sum(1 for p in valid.problems if RECORDS.for_statement(p.header, p.formal_statement))


def test_every_bundled_proof_is_accepted_for_its_own_statement():
    env = RecordedEnv()
    problems = {
        p.name: p for b in ("minif2f-test", "minif2f-valid") for p in load_benchmark(b).problems
    }
    accepted = 0
    for records in RECORDS.by_statement.values():
        for record in records.values():
            problem = problems.get(record.name)
            if problem is None or not RECORDS.lookup(
                problem.header, problem.formal_statement, record.proof
            ):
                continue  # a statement the benchmark words differently
            verdict = env.verify(problem.to_theorem(), record.proof)
            assert verdict.ok and verdict.checked_by == "recorded", record.name
            accepted += 1
    assert accepted == 201 + 67


def test_the_recorded_verifier_says_it_decided():
    problem, proof = _recorded("mathd_algebra_478")
    verdict = RecordedEnv().verify(problem.to_theorem(), proof)
    assert (verdict.ok, verdict.backend, verdict.checked_by) == (True, "recorded", "recorded")
    assert verdict.messages[0].startswith("recorded: the proof is, up to white space, one Lean")
    assert "leanprover/lean4:v4.15.0" in verdict.messages[0]
    assert verdict.axioms is None  # nothing was asked of Lean


def test_white_space_and_comments_do_not_matter():
    problem, proof = _recorded("mathd_algebra_478")
    lines = proof.strip("\n").split("\n")
    # indented further, blank lines between, trailing spaces, a leading `by`, a comment
    variant = "by\n" + "\n\n".join("    " + line + "   " for line in lines) + "\n  -- done\n"
    assert RecordedEnv().verify(problem.to_theorem(), variant).ok


def test_line_ends_and_line_comments_do_not_matter():
    problem, proof = _recorded("mathd_algebra_478")
    env = RecordedEnv()
    for variant in (
        proof.replace("\n", "\r\n"),  # Lean reads CRLF as LF
        proof.replace("\n", "  \n") + "  \n\n",
        proof.replace("at h₁", "at h₁  -- substitute") + "\n-- done",
        "by " + proof.strip(),
    ):
        assert env.verify(problem.to_theorem(), variant).ok, repr(variant)


def test_what_lean_reads_otherwise_is_another_proof():
    """A tab, a Unicode space, an unterminated comment: Lean rejects each, and so must the
    records of the clean proof."""
    problem, proof = _recorded("mathd_algebra_478")
    env = RecordedEnv()
    assert env.verify(problem.to_theorem(), proof).ok
    accepted = [
        what
        for what, variant in other_proofs(proof).items()
        if env.verify(problem.to_theorem(), variant).ok
    ]
    assert accepted == []


def test_spaces_inside_a_line_are_kept():
    """`·  intro x` puts `intro` a column further than `· intro x`: the next line, aligned with
    it before, no longer belongs to the bullet."""
    problem, proof = _recorded("imo_1968_p5_1")
    widened = proof.replace("· intro x", "·  intro x", 1)
    assert widened != proof
    assert RecordedEnv().verify(problem.to_theorem(), proof).ok
    assert not RecordedEnv().verify(problem.to_theorem(), widened).ok


def test_anything_else_is_rejected():
    env = RecordedEnv()
    problem, proof = _recorded("mathd_algebra_478")
    theorem = problem.to_theorem()
    # a changed proof
    assert not env.verify(theorem, proof + "\n  norm_num").ok
    assert not env.verify(theorem, "linarith").ok
    # the same tactics under another structure (indentation decides which goal a tactic is for)
    nested, nested_proof = _recorded("aime_1983_p1")
    flat = "\n".join(line.strip() for line in nested_proof.split("\n"))
    assert env.verify(nested.to_theorem(), nested_proof).ok
    assert not env.verify(nested.to_theorem(), flat).ok
    # a changed statement
    changed = dataclasses.replace(
        problem, formal_statement=problem.formal_statement.replace("v = 65", "v = 66")
    )
    verdict = env.verify(changed.to_theorem(), proof)
    assert not verdict.ok and "no proof of this statement is recorded" in verdict.messages[0]
    # a changed header (another Lean context is another statement)
    other_header = dataclasses.replace(problem, header="import Mathlib\n\n")
    assert not env.verify(other_header.to_theorem(), proof).ok
    # another problem's proof
    _, other_proof = _recorded("mathd_algebra_141")
    verdict = env.verify(theorem, other_proof)
    assert not verdict.ok and verdict.checked_by == "recorded"
    assert "none of the 1 proof(s) Lean accepted" in verdict.messages[0]
    assert (
        verdict.first_error is not None and "cannot check a new proof" in verdict.first_error.text
    )


def test_a_repository_theorem_has_no_record():
    theorem = load_benchmark("leandojo", data=sample_dataset_path()).problems[0].to_theorem()
    assert not RecordedEnv().verify(theorem, "simp").ok


def test_start_gives_the_recorded_goal_and_tactics_are_refused():
    env = RecordedEnv()
    problem, _ = _recorded("mathd_algebra_478")
    state = env.start(problem.to_theorem())
    assert state.backend == "recorded" and state.text.endswith("⊢ v = 65")
    with pytest.raises(VerifierError, match="runs no tactics"):
        env.run_tactic(state, "norm_num")
    putnam = load_benchmark("putnambench").problems[0].to_theorem()
    with pytest.raises(UnknownTheoremError, match="no initial goal is recorded"):
        env.start(putnam)
    env.close()
    with pytest.raises(LeanDojoError, match="closed"):
        env.verify(problem.to_theorem(), "simp")


def test_the_pipelines_recheck_takes_the_recorded_verdict():
    problem, proof = _recorded("mathd_algebra_141")
    make_env = make_verifier_env("recorded", MINIF2F_TEST)
    assert isinstance(make_env, RecordedVerifier) and make_env.verifier_id == "recorded"
    env = make_env()
    verdict = verify_proof(env, problem.to_theorem(), proof)
    assert verdict is not None and verdict.ok and verdict.checked_by == "recorded"


def test_split_lean_file_reads_header_statement_and_proof():
    text = "import Mathlib\n\nopen Real\n\ntheorem t (x : ℝ) : x = x := by\n  rfl\n"
    assert split_lean_file(text) == (
        "import Mathlib\n\nopen Real\n\n",
        "theorem t (x : ℝ) : x = x",
        "\n  rfl",
    )
    assert split_lean_file("theorem t : 1 = 1 := rfl\n") is None  # a term proof


# -- the Lean verifier's axiom check -----------------------------------------------------------------


class _FixedEnv(ProofEnv):
    backend = "pantograph"

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def start(self, theorem):
        raise NotImplementedError

    def run_tactic(self, state, tactic, timeout=None):
        raise NotImplementedError

    def verify(self, theorem, proof):
        return self.verdict


@pytest.mark.parametrize(
    ("axioms", "ok"),
    [
        (("propext", "Classical.choice", "Quot.sound"), True),
        ((), True),
        (None, True),  # unknown: left as Lean said
        (("propext", "sorryAx"), False),
        (("Lean.ofReduceBool",), False),
    ],
)
def test_the_axiom_check_refuses_proofs_beyond_the_standard_axioms(axioms, ok):
    theorem = MINIF2F_TEST.problems[0].to_theorem()
    env = AxiomCheckedEnv(_FixedEnv(Verdict(True, "pantograph", "lean", axioms=axioms)), [
        "propext", "Classical.choice", "Quot.sound"
    ])  # fmt: skip
    verdict = asyncio.run(env.verify(theorem, "simp"))
    assert verdict.ok is ok
    if not ok:
        assert verdict.checked_by == "lean"
        assert verdict.first_error is not None
        assert verdict.first_error.text.startswith("axiom check: the proof depends on")


# -- make_verifier_env: what it builds and what it refuses --------------------------------------------


def test_replay_replays_the_dataset_as_prove_does():
    bench = load_benchmark("leandojo", data=sample_dataset_path(), split="test")
    factory = make_verifier_env("replay", bench)
    assert isinstance(factory, ReplayVerifier) and factory.verifier_id.startswith("replay:")
    assert isinstance(factory(), ReplayEnv)


def _one_line(exc: BaseException) -> str:
    assert isinstance(exc, LeanDojoError)
    assert "\n" not in str(exc)
    return str(exc)


def test_an_unknown_verifier_is_one_line():
    with pytest.raises(VerifierError) as info:
        make_verifier_env("lena", MINIF2F_TEST)
    assert "lean, recorded, replay" in _one_line(info.value)


def test_replay_needs_a_dataset_and_recorded_a_benchmark():
    with pytest.raises(VerifierError, match="--data DIR"):
        make_verifier_env("replay", MINIF2F_TEST)
    bench = load_benchmark("leandojo", data=sample_dataset_path())
    with pytest.raises(VerifierError, match="replay"):
        make_verifier_env("recorded", bench)


def test_lean_without_a_repl_is_one_line(tmp_path):
    with pytest.raises(LeanNotFoundError) as info:
        make_verifier_env("lean", MINIF2F_TEST, repl=str(tmp_path / "no-such-repl"))
    _one_line(info.value)


@pytest.fixture
def fake_repl_command() -> str:
    from fake_pantograph.launcher import fake_command

    return " ".join(fake_command())


def test_lean_with_mathlib_imports_needs_a_built_project(tmp_path, fake_repl_command):
    with pytest.raises(VerifierError) as info:
        make_verifier_env("lean", MINIF2F_TEST, repl=fake_repl_command)
    assert "--project" in _one_line(info.value) and "Mathlib" in str(info.value)
    with pytest.raises(VerifierError, match="no Lean project at"):
        make_verifier_env("lean", MINIF2F_TEST, repl=fake_repl_command, project=tmp_path / "x")
    with pytest.raises(VerifierError, match="no lakefile"):
        make_verifier_env("lean", MINIF2F_TEST, repl=fake_repl_command, project=tmp_path)
    (tmp_path / "lakefile.lean").write_text("import Lake\n", "utf-8")
    with pytest.raises(VerifierError, match="not built"):
        make_verifier_env("lean", MINIF2F_TEST, repl=fake_repl_command, project=tmp_path)
    (tmp_path / ".lake").mkdir()
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.15.0\n", "utf-8")
    factory = make_verifier_env("lean", MINIF2F_TEST, repl=fake_repl_command, project=tmp_path)
    assert isinstance(factory, LeanVerifier)
    assert factory.config["imports"] == ["Mathlib", "Aesop"]
    assert factory.config["project_dir"] == str(tmp_path.resolve())
    assert factory.verifier_id == "lean:4.15.0"
    assert factory.allowed_axioms == ("Classical.choice", "Quot.sound", "propext")
    # another axiom check is another verifier: its verdicts are kept apart
    wider = make_verifier_env(
        "lean",
        MINIF2F_TEST,
        repl=fake_repl_command,
        project=tmp_path,
        allowed_axioms=["propext", "Classical.choice", "Quot.sound", "Lean.ofReduceBool"],
    )
    assert wider.verifier_id == (
        "lean:4.15.0[axioms=Classical.choice,Lean.ofReduceBool,Quot.sound,propext]"
    )


def _jsonl(path: Path, names: list[str]) -> Path:
    """miniF2F-test problems with an empty header: the fake REPL needs no Mathlib."""
    rows = []
    for name in names:
        p = MINIF2F_TEST.problem(name)
        rows.append({"name": p.name, "header": "", "formal_statement": p.formal_statement})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_lean_checks_a_benchmark_statement_with_the_repl(tmp_path, fake_repl_command):
    """The Lean verifier end to end on the fake REPL: the pipeline's re-check of a standalone
    statement, accepted for the recorded proof, rejected (with Lean's first error in the proof)
    for a wrong one."""
    bench = load_benchmark(_jsonl(tmp_path / "p.jsonl", ["mathd_algebra_141"]))
    factory = make_verifier_env(
        "lean",
        bench,
        repl=fake_repl_command,
        timeout=10,
        pantograph={"ready_timeout": 30.0, "env": {"FAKE_PANTOGRAPH_STRICT": "1"}},
    )
    theorem = bench.problems[0].to_theorem()
    good = (
        "replace h₂ : a + b = 27\nlinarith\n"
        "have h₃ : a ^ 2 + b ^ 2 = (a + b) ^ 2 - 2 * (a * b) := by ring\nrw [h₃, h₂, h₁]\nnorm_num"
    )
    env = factory()
    try:
        verdict = verify_proof(env, theorem, good)
        assert verdict is not None and verdict.ok and verdict.checked_by == "lean"
        assert set(verdict.axioms or ()) == {"propext", "Classical.choice", "Quot.sound"}
        bad = verify_proof(env, theorem, "replace h₂ : a + b = 27\nlinarith\nnlinarith [h₁]")
        assert bad is not None and not bad.ok
        error = bad.first_error
        assert error is not None and (error.line, error.column) == (3, 0)
        assert error.text.startswith("unknown tactic") and error.goal.endswith("369")
    finally:
        asyncio.run(env.close())
