"""Benchmarks by name: the bundled ones with their counts, headers, SOURCE and licence;
PutnamBench with every comment out (the expected answer never reaches a model); a user's JSONL;
a LeanDojo dataset's split; and each bad input as one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.data.lean_lexer import COMMENT_KINDS, tokenize
from lean_dojo_v2.data.sorry import strip_comments
from lean_dojo_v2.errors import ConfigError, DataFormatError, LeanDojoError
from lean_dojo_v2.evaluation.benchmarks import (
    BENCHMARKS,
    bundled_benchmarks_dir,
    load_benchmark,
)
from lean_dojo_v2.evaluation.errors import (
    StatementError,
    UnknownBenchmarkError,
    UnknownProblemError,
)
from lean_dojo_v2.evaluation.putnambench import putnam_problem
from lean_dojo_v2.interaction.standalone import (
    recorded_goal,
    standalone_header,
)

COUNTS = {
    "minif2f-test": 244,
    "minif2f-valid": 244,
    "proofnet-test": 186,
    "proofnet-valid": 185,
    "putnambench": 672,
}
LICENCES = {
    "minif2f-test": "MIT",
    "minif2f-valid": "MIT",
    "proofnet-test": "MIT",
    "proofnet-valid": "MIT",
    "putnambench": "Apache-2.0",
}


def test_the_bundled_names_are_the_documented_ones():
    assert set(BENCHMARKS) == set(COUNTS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_bundled_benchmark_loads_by_name_with_its_count(name):
    bench = load_benchmark(name)
    assert len(bench) == COUNTS[name]
    assert len(set(bench.names)) == len(bench), "problem names are unique"
    assert bench.licence == LICENCES[name]
    assert bench.lean_version and bench.lean_version.startswith("leanprover/lean4:v4.")
    assert bench.source
    for p in bench.problems:
        assert p.header.startswith("import ")  # the imports its statement needs
        assert p.header.endswith("\n")
        assert re.match(r"(noncomputable )?(theorem|lemma|def) ", p.formal_statement), p.name
        assert p.formal_statement.endswith(":= by"), p.name
        assert "sorry" not in p.formal_statement
        theorem = p.to_theorem()
        assert theorem.full_name == p.name
        assert standalone_header(theorem) == p.header
        assert theorem.theorem_statement == p.formal_statement


def test_minif2f_problems_keep_their_informal_statement_and_goal():
    p = load_benchmark("minif2f-test").problem("mathd_algebra_478")
    assert p.split == "test"
    assert p.header == (
        "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\n"
        "open BigOperators Real Nat Topology Rat\n\n"
    )
    assert p.informal_statement.startswith("The volume of a cone")
    assert "/-" not in p.informal_statement and "-/" not in p.informal_statement
    assert p.goal.endswith("⊢ v = 65")
    assert recorded_goal(p.to_theorem()) == p.goal
    assert p.to_theorem().extra["informal_statement"] == p.informal_statement


def test_proofnet_statements_are_given_to_provers_ending_in_by():
    # ProofNet's release ends its statements in ":="; constructions are `def`s
    bench = load_benchmark("proofnet-valid")
    assert bench.problem("exercise_2_1_21").formal_statement.startswith("def exercise_2_1_21")
    # exercises of different textbooks share a name upstream: the later ones are numbered
    assert "exercise_3_3#2" in bench.names


@pytest.mark.parametrize("folder", ["deepseek_prover_v15", "putnambench", "kimina_prover_preview"])
def test_every_bundled_folder_has_its_source_and_licence(folder):
    root = bundled_benchmarks_dir() / folder
    source = (root / "SOURCE").read_text("utf-8")
    assert re.search(r"Commit:\s+[0-9a-f]{40}", source)
    assert "Licence:" in source and "github.com" in source
    assert (root / "LICENSE").stat().st_size > 500


# -- PutnamBench: no comment reaches a model -------------------------------------------------------


def _putnam_rows() -> list[dict[str, str]]:
    path = bundled_benchmarks_dir() / "putnambench" / "putnambench.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_putnambench_answers_in_comments_never_reach_a_model():
    rows = _putnam_rows()
    bench = load_benchmark("putnambench")
    by_name = {p.name: p for p in bench.problems}
    answers = 0
    for row in rows:
        problem = by_name[row["name"]]
        shown = "\n".join([problem.header, problem.formal_statement])
        # nothing of a comment is left in the Lean text a prompt shows ...
        assert not [t for t in tokenize(shown) if t.kind in COMMENT_KINDS], row["name"]
        # ... and all of it is the file's code: header and statement, comments out
        code = " ".join(strip_comments(row["lean"]).split())
        assert " ".join(problem.header.split()) in code, row["name"]
        assert " ".join(problem.formal_statement.removesuffix(" := by").split()) in code
        # the answers written in comments appear nowhere but where the code has them too
        seen = " ".join((shown + "\n" + (problem.informal_statement or "")).split())
        for token in tokenize(row["lean"]):
            body = " ".join(token.text.removeprefix("--").strip(" /-\n").split())
            if token.kind in ("line", "block") and len(body) >= 4 and body not in code:
                assert body not in seen, (row["name"], body)
                answers += 1
    # the files do carry answers in comments: the check above had something to check
    assert answers > 300


def test_putnambench_solution_comment_is_gone_and_the_abbrev_stays():
    rows = {r["name"]: r["lean"] for r in _putnam_rows()}
    text = rows["putnam_1962_a2"]
    answer = "{f | (∃ a c : ℝ, 0 ≤ a ∧ f = (fun x : ℝ ↦ a / (1 - c * x) ^ 2))"
    assert answer in text  # the real file writes the answer in a comment
    problem = putnam_problem("putnam_1962_a2", text)
    assert "abbrev putnam_1962_a2_solution : Set (ℝ → ℝ) := sorry" in problem.header
    for shown in (problem.header, problem.formal_statement, problem.informal_statement or ""):
        assert "a / (1 - c * x) ^ 2" not in shown
    assert problem.informal_statement.startswith("Find every real-valued function")
    assert problem.formal_statement.startswith("theorem putnam_1962_a2\n")


# -- a user's JSONL ----------------------------------------------------------------------------------


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_a_users_jsonl_loads_as_a_benchmark(tmp_path):
    path = _write(
        tmp_path / "mine.jsonl",
        [
            {
                "name": "add_zero",
                "header": "import Mathlib\n\n",
                "formal_statement": "theorem add_zero' (n : ℕ) : n + 0 = n := by\n  sorry",
                "informal_statement": "Adding zero changes nothing.",
                "tags": ["ignored"],
            },
            {"name": "t2", "header": "", "formal_statement": "example : 1 + 1 = 2 :="},
        ],
    )
    bench = load_benchmark(path)
    assert bench.name == "mine" and len(bench) == 2
    first = bench.problem("add_zero")
    assert first.formal_statement == "theorem add_zero' (n : ℕ) : n + 0 = n := by"
    assert first.informal_statement == "Adding zero changes nothing."
    assert bench.problem("t2").formal_statement == "example : 1 + 1 = 2 := by"
    assert load_benchmark(str(path), problems=["t2"]).names == ["t2"]
    assert load_benchmark(path, limit=1).names == ["add_zero"]


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([{"name": "a", "header": ""}], "no 'formal_statement'"),
        ([{"name": "a", "header": 3, "formal_statement": "theorem a : True := by"}], "header"),
        (["not an object"], "line 1 is not a JSON object"),
        (
            [
                {"name": "a", "header": "", "formal_statement": "theorem a : True := by"},
                {"name": "a", "header": "", "formal_statement": "theorem b : True := by"},
            ],
            "a second problem named 'a'",
        ),
        ([], "no problems"),
    ],
)
def test_a_bad_jsonl_line_is_a_data_format_error_naming_file_and_line(tmp_path, rows, needle):
    path = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DataFormatError) as info:
        load_benchmark(path)
    message = str(info.value)
    assert needle in message and "bad.jsonl" in message and "\n" not in message


def test_a_jsonl_line_that_is_not_json(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"name": "a", "header": ""\n', "utf-8")
    with pytest.raises(DataFormatError, match="line 1 is not JSON"):
        load_benchmark(path)


# -- a LeanDojo dataset's split ----------------------------------------------------------------------


def test_a_leandojo_split_loads_as_problems_with_their_theorems():
    from lean_dojo_v2.data.dataset import DatasetDir

    data = sample_dataset_path()
    bench = load_benchmark("leandojo", data=data, split="test")
    expected = DatasetDir(data).theorems("random", "test")
    assert [p.theorem for p in bench.problems] == expected
    for p, t in zip(bench.problems, expected, strict=True):
        assert p.to_theorem() is p.theorem and p.theorem == t
        assert p.header == "" and p.split == "test"
    assert bench.data == str(data.resolve())
    everything = load_benchmark("leandojo", data=data, split="all")
    assert len(everything) > len(bench)
    # the same, without naming it
    assert load_benchmark("anything", data=data, split="test").names == bench.names


# -- bad input: one line each ------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    message = str(exc)
    assert message and "\n" not in message
    assert isinstance(exc, LeanDojoError)
    return message


def test_an_unknown_benchmark_lists_the_bundled_names():
    with pytest.raises(UnknownBenchmarkError) as info:
        load_benchmark("minif2f")
    message = _one_line(info.value)
    assert all(name in message for name in BENCHMARKS)
    with pytest.raises(UnknownBenchmarkError, match="did you mean minif2f-test"):
        load_benchmark("minif2f-tset")
    with pytest.raises(UnknownBenchmarkError, match="no benchmark file at"):
        load_benchmark("missing/problems.jsonl")


def test_bundled_names_are_read_leniently():
    assert len(load_benchmark("MiniF2F_Test")) == 244


def test_a_problem_name_not_in_the_benchmark_names_the_closest():
    with pytest.raises(UnknownProblemError) as info:
        load_benchmark("minif2f-test", problems=["mathd_algebra_47"])
    message = _one_line(info.value)
    assert "mathd_algebra_478" in message and "minif2f-test" in message


def test_a_limit_below_one_is_refused():
    with pytest.raises(ConfigError):
        load_benchmark("minif2f-test", limit=0)


@pytest.mark.parametrize(
    ("statement", "needle"),
    [
        ("def f : ℕ", "no top-level `:=`"),
        ("(n : ℕ) : n = n := by", "does not declare"),
        ("theorem t (n : ℕ : n = n := by", "unbalanced brackets"),
        ("theorem t (n : ℕ) : n = n) := by", "closes nothing"),
        ("theorem t (n : ℕ) : n = n", "no top-level `:=`"),
    ],
)
def test_a_statement_that_does_not_parse_is_one_line(tmp_path, statement, needle):
    path = _write(
        tmp_path / "p.jsonl", [{"name": "p", "header": "", "formal_statement": statement}]
    )
    with pytest.raises(StatementError) as info:
        load_benchmark(path)
    message = _one_line(info.value)
    assert needle in message and "'p'" in message and "p.jsonl line 1" in message


def test_a_leandojo_benchmark_needs_its_data():
    with pytest.raises(ConfigError, match="data=DIR"):
        load_benchmark("leandojo")
