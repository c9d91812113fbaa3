"""v1's result types: equality and hashing as in v1 (states compare by ``pp``), pickling (v1 code
sends results through Ray), parsed goals, the older release names, and the v1 data classes."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from lean_dojo_v2.errors import LeanDojoError
from lean_dojo_v2.v1 import (
    DojoCrashError,
    Goal,
    IncompleteSolve1,
    LeanError,
    LeanGitRepo,
    Pos,
    ProofFinished,
    ProofGivenUp,
    TacticError,
    TacticState,
    Theorem,
    TimeoutError,
    V1ArgumentError,
    parse_goals,
)

# A two-goal state recorded in the bundled sample (CancelDenoms.cancel_factors_lt), as Lean
# printed it: goals separated by a blank line.
TWO_GOALS = (
    "α : Type u_1\ninst✝ : LinearOrderedField α\na b ad bd a' b' gcd : α\nha : ad * a = a'\n"
    "⊢ 0 < ad * bd\n\ncase h\nα : Type u_1\nx : α := 2\n⊢ 0 < 1 / gcd"
)


def test_states_compare_and_hash_by_pp_only() -> None:
    a = TacticState(TWO_GOALS, 3, "")
    b = TacticState(TWO_GOALS, 7, "note")
    c = TacticState("⊢ True", 3, "")
    assert a == b and hash(a) == hash(b)
    assert a != c
    nodes = {a: "node"}
    assert nodes[b] == "node"  # v1 search code finds a node again by its state
    assert ProofFinished(4, "x") == ProofFinished(4, "y") != ProofFinished(5)
    assert LeanError("boom") == LeanError("boom") != LeanError("bang")
    assert ProofGivenUp() == ProofGivenUp() and hash(ProofGivenUp()) == hash(ProofGivenUp())


@pytest.mark.parametrize(
    "value",
    [
        TacticState(TWO_GOALS, 3, "msg"),
        ProofFinished(9, ""),
        LeanError("unknown identifier 'x'"),
        ProofGivenUp(),
        DojoCrashError("the Lean process died", out_of_memory=True),
        Theorem(LeanGitRepo("https://github.com/o/r.git", "a" * 40), "A/B.lean", "A.b"),
        Pos(3, 7),
    ],
    ids=lambda v: type(v).__name__,
)
def test_results_pickle_round_trip(value) -> None:
    back = pickle.loads(pickle.dumps(value))
    assert type(back) is type(value)
    if isinstance(value, BaseException):
        assert str(back) == str(value) and back.is_out_of_memory
    else:
        assert back == value
    if isinstance(value, TacticState):
        assert (back.id, back.message, back.num_goals) == (3, "msg", 2)
        assert back.goals == value.goals


def test_parsed_goals_of_a_two_goal_state() -> None:
    state = TacticState(TWO_GOALS, 1)
    assert state.num_goals == 2
    first, second = state.goals
    assert first.conclusion == "0 < ad * bd"
    assert [d.ident for d in first.assumptions] == [
        "α", "inst✝", "a", "b", "ad", "bd", "a'", "b'", "gcd", "ha",
    ]  # fmt: skip
    assert first.assumptions[2].lean_type == "α"
    assert [(d.ident, d.lean_type) for d in second.assumptions] == [
        ("α", "Type u_1"),
        ("x", "α := 2"),
    ]
    assert second.conclusion == "0 < 1 / gcd"
    assert parse_goals("no goals") == []
    assert Goal.from_pp("h : p\n⊢ q").conclusion == "q"
    with pytest.raises(V1ArgumentError, match="one goal"):
        Goal.from_pp(TWO_GOALS)


def test_older_release_names() -> None:
    # v1 1.x code tests `type(r) in (TacticError, TimeoutError, IncompleteSolve1, ...)`.
    assert TacticError is LeanError
    assert type(LeanError("x")) in (TacticError, TimeoutError, IncompleteSolve1, ProofGivenUp)
    assert TimeoutError("t").error == "t" and not issubclass(TimeoutError, BaseException)


def test_pos_is_the_library_pos_with_from_str() -> None:
    from lean_dojo_v2.data import Pos as DataPos

    p = Pos.from_str("(323, 1109)")
    assert p == DataPos(323, 1109) and list(p) == [323, 1109] and repr(p) == "(323, 1109)"
    assert Pos(*[3, 7]) < Pos(3, 8)
    with pytest.raises(V1ArgumentError, match=r"'\(line, column\)'"):
        Pos.from_str("3:7")


def test_repo_and_theorem_as_v1_builds_them() -> None:
    repo = LeanGitRepo("https://github.com/leanprover-community/mathlib4.git/", "b" * 40)
    assert repo.url == "https://github.com/leanprover-community/mathlib4"
    assert repo.name == "mathlib4" and repo == LeanGitRepo(repo.url, "b" * 40)
    assert {repo, LeanGitRepo(repo.url, "b" * 40)} == {repo}
    thm = Theorem(repo, "Mathlib/A.lean", "A.b")
    assert thm.file_path == Path("Mathlib/A.lean") and thm == Theorem(repo, "Mathlib/A.lean", "A.b")
    assert thm.uhash == Theorem(repo, Path("Mathlib/A.lean"), "A.b").uhash


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Theorem(LeanGitRepo("u", "c"), "A/B.py", "x"), r"must be \.lean"),
        (lambda: Theorem("https://github.com/o/r", "A/B.lean", "x"), "must be a LeanGitRepo"),
        (lambda: Theorem(LeanGitRepo("u", "c"), "A/B.lean", ""), "fully qualified name"),
        (lambda: LeanGitRepo(None, "c"), "git URL or a local path"),
        (lambda: LeanGitRepo("u", 123), "commit SHA"),
    ],
)
def test_bad_data_is_one_typed_line(make, match) -> None:
    with pytest.raises(V1ArgumentError, match=match) as info:
        make()
    # v1 checked these with assert: code that caught AssertionError still does.
    assert isinstance(info.value, AssertionError) and isinstance(info.value, LeanDojoError)
    assert "\n" not in str(info.value)
