"""A standalone statement (a benchmark's header + statement, no repository) started and verified
by ``PantographEnv`` from its text, against the fake REPL; Lean's messages as ``LeanMessage``s
placed in the proof (the first error's position, text and the goal Lean printed there)."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.data.model import Theorem
from lean_dojo_v2.interaction.messages import (
    LeanMessage,
    ProofSpan,
    goal_in_message,
    parse_lean_messages,
)
from lean_dojo_v2.interaction.pantograph import PantographEnv
from lean_dojo_v2.interaction.pantograph.lean_text import TheoremSource
from lean_dojo_v2.interaction.standalone import (
    declared_name,
    header_imports,
    recorded_goal,
    standalone_header,
    standalone_source,
    standalone_theorem,
)
from lean_dojo_v2.interaction.types import Verdict

from .conftest import fake_config

HEADER = (
    "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\n"
    "open BigOperators Real Nat Topology Rat\n\n"
)
STATEMENT = (
    "theorem mathd_algebra_141 (a b : ℝ) (h₁ : a * b = 180) (h₂ : 2 * (a + b) = 54) :\n"
    "    a ^ 2 + b ^ 2 = 369 := by"
)
GOAL = "a b : ℝ\nh₁ : a * b = 180\nh₂ : 2 * (a + b) = 54\n⊢ a ^ 2 + b ^ 2 = 369"
PROOF = (
    "replace h₂ : a + b = 27\nlinarith\n"
    "have h₃ : a ^ 2 + b ^ 2 = (a + b) ^ 2 - 2 * (a * b) := by ring\nrw [h₃, h₂, h₁]\nnorm_num"
)


def test_a_standalone_theorem_carries_its_header_through_to_dict():
    theorem = standalone_theorem("p", HEADER, STATEMENT, goal=GOAL, informal="In words.")
    assert standalone_header(theorem) == HEADER and recorded_goal(theorem) == GOAL
    again = Theorem.from_dict(json.loads(json.dumps(theorem.to_dict())))
    assert standalone_header(again) == HEADER and again.theorem_statement == STATEMENT
    assert again.extra["informal_statement"] == "In words."
    assert (theorem.url, theorem.file_path) == ("", "")
    # a repository's theorem is no standalone statement
    assert standalone_header(Theorem("u", "c", "F.lean", "t", (1, 1), (1, 1))) is None


def test_header_imports_and_declared_names():
    assert header_imports(HEADER) == ["Mathlib", "Aesop"]
    assert header_imports("import A B\n  import C.D\nopen X\n") == ["A", "B", "C.D"]
    assert declared_name(STATEMENT) == "mathd_algebra_141"
    assert declared_name("def exercise_2_1_21 (G : Type*) : CommGroup G := by") == (
        "exercise_2_1_21"
    )
    assert declared_name("example : 1 = 1 := by") is None


def test_the_source_puts_the_statement_after_its_header():
    text, start = standalone_source(HEADER, STATEMENT)
    assert text.startswith(HEADER) and text[start:].startswith("theorem mathd_algebra_141")
    assert text.endswith("a ^ 2 + b ^ 2 = 369 := sorry\n")
    # checked by the file route: imports blanked (the REPL imported them), the rest kept
    checked = TheoremSource("mathd_algebra_141", text, start).text("file", "norm_num")
    assert "import" not in checked.text and "open BigOperators" in checked.text
    assert "set_option maxHeartbeats 400000" in checked.text
    lines = checked.text.split("\n")
    assert checked.span is not None
    assert lines[checked.span.first_line - 1] == " " * checked.span.indent + "norm_num"


@pytest.mark.parametrize("route", ["file", "context", "statement"])
def test_every_route_says_where_the_proof_lies(route):
    text, start = standalone_source(HEADER, STATEMENT)
    where = TheoremSource("mathd_algebra_141", text, start, STATEMENT)
    proof = "by\n  intro x\n  · simp\n    ring"
    checked = where.text(route, proof, rename=route != "file")
    span = checked.span
    assert span is not None and span.num_lines == 3
    lines = checked.text.split("\n")
    body = [line[span.indent :] for line in lines[span.first_line - 1 : span.first_line + 2]]
    assert body == ["intro x", "· simp", "  ring"]
    assert lines[span.first_line - 2].endswith("by")


# -- with the fake REPL --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def env():
    config = fake_config(
        imports=("Mathlib", "Aesop"),
        env={"FAKE_PANTOGRAPH_COPYFROM_RECORDED": "0", "FAKE_PANTOGRAPH_STRICT": "1"},
    )
    with PantographEnv(config) as e:
        yield e


def test_a_standalone_statement_is_started_from_its_text(env):
    theorem = standalone_theorem("mathd_algebra_141", HEADER, STATEMENT)
    state = env.start(theorem)
    assert state.handle.route == "source"  # elaborated from the text, not copyFrom
    assert state.text == GOAL
    # under another name (not in the REPL's environment): the file route, the same goal
    renamed = STATEMENT.replace("mathd_algebra_141", "my_problem")
    state = env.start(standalone_theorem("p1", HEADER, renamed))
    assert state.handle.label == "source/file" and state.text == GOAL


def test_a_standalone_statement_is_verified_from_its_text(env):
    theorem = standalone_theorem("p1", HEADER, STATEMENT.replace("mathd_algebra_141", "mine"))
    verdict = env.verify(theorem, PROOF)
    assert verdict.ok and verdict.checked_by == "lean" and not verdict.errors
    assert set(verdict.axioms or ()) == {"propext", "Classical.choice", "Quot.sound"}
    assert verdict.first_error is None


def test_a_failing_tactic_is_lean_s_first_error_placed_in_the_proof(env):
    theorem = standalone_theorem("p1", HEADER, STATEMENT.replace("mathd_algebra_141", "mine"))
    # indented as a model may write it: the proof is placed as checked, dedented
    proof = "    replace h₂ : a + b = 27\n    linarith\n    nlinarith [sq_nonneg (a - b)]"
    verdict = env.verify(theorem, proof)
    assert not verdict.ok
    # Lean's own text keeps the checked file's position ...
    assert any(":" in m and "error: unknown tactic" in m for m in verdict.messages)
    # ... and the LeanMessage is placed in the proof: its line 3
    error = verdict.first_error
    assert error == verdict.errors[0]
    assert (error.severity, error.line, error.column) == ("error", 3, 0)
    assert (error.end_line, error.end_column) == (3, len("nlinarith [sq_nonneg (a - b)]"))
    assert error.text.startswith("unknown tactic (not among recorded transitions): nlinarith")
    assert error.goal == "a b : ℝ\nh₁ : a * b = 180\nh₂ : a + b = 27\n⊢ a ^ 2 + b ^ 2 = 369"
    assert str(error).startswith("3:0: error: unknown tactic")


def test_unsolved_goals_carry_the_goals_left(env):
    theorem = standalone_theorem("mathd_algebra_141", HEADER, STATEMENT)
    verdict = env.verify(theorem, "replace h₂ : a + b = 27\nlinarith")
    error = verdict.first_error
    assert not verdict.ok and error is not None
    assert error.text.startswith("unsolved goals") and error.line == 0  # Lean puts it at `by`
    assert error.goal == "a b : ℝ\nh₁ : a * b = 180\nh₂ : a + b = 27\n⊢ a ^ 2 + b ^ 2 = 369"


def test_a_statement_the_fake_has_no_record_of_is_not_accepted(env):
    theorem = standalone_theorem("x", HEADER, "theorem x (n : ℕ) : n + 0 = n := by")
    verdict = env.verify(theorem, "simp")
    assert not verdict.ok and "does not emulate" in verdict.first_error.text


# -- messages ------------------------------------------------------------------------------------------


def test_messages_in_lean_s_text_format_are_read():
    span = ProofSpan(first_line=10, indent=2, num_lines=3)
    found = parse_lean_messages(
        [
            "<anonymous>:11:4: error: linarith failed to find a contradiction\ncase a\nx : ℕ\n⊢ False",
            "/tmp/File.lean:9:30: error: unsolved goals\nx : ℕ\n⊢ x = x",
            "12:2: warning: declaration uses 'sorry'",
            "13:0: info: not in the proof",
            "no position at all",
        ],
        span,
    )
    assert found[0] == LeanMessage(
        "error",
        2,
        2,
        "linarith failed to find a contradiction\ncase a\nx : ℕ\n⊢ False",
        "case a\nx : ℕ\n⊢ False",
    )
    assert (found[1].line, found[1].column, found[1].goal) == (0, 0, "x : ℕ\n⊢ x = x")
    assert (found[2].severity, found[2].line, found[2].column) == ("warning", 3, 0)
    assert (found[3].severity, found[3].line) == ("information", 0)
    assert (found[4].severity, found[4].line, found[4].text) == ("error", 0, "no position at all")


def test_goal_in_message():
    assert goal_in_message("unsolved goals\nx : ℕ\n⊢ x = x") == "x : ℕ\n⊢ x = x"
    assert goal_in_message("unknown identifier 'foo'") is None
    assert goal_in_message("type mismatch\n  h\nhas type\n  P") is None


def test_a_verdict_without_structured_messages_reads_them_from_its_text():
    verdict = Verdict(False, "replay", "replay", ("tactic 2: unknown tactic",))
    assert verdict.first_error == LeanMessage("error", 0, 0, "tactic 2: unknown tactic")
    assert Verdict(True, "pantograph", "lean").first_error is None
    both = Verdict(
        False,
        "pantograph",
        "lean",
        ("5:2: warning: unused variable", "6:4: error: simp made no progress"),
    )
    assert [m.severity for m in both.errors] == ["error"]
