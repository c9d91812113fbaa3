"""The files of an evaluation's output directory: attempts.jsonl written per problem and resumed
after a kill, and --out decided before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lean_dojo_v2.errors import DataFormatError
from lean_dojo_v2.evaluation.attempts import AttemptLog, ProblemOutcome
from lean_dojo_v2.evaluation.budget import Budget
from lean_dojo_v2.evaluation.errors import EvalOutputError, EvalOutputExistsError
from lean_dojo_v2.evaluation.out_dir import EVAL_FILE, open_out_dir, plan_out_dir

SETTINGS = {"benchmark": "minif2f-test", "mode": "whole", "n": 4, "model": "m"}


def _outcome(name: str, correct: list[int]) -> ProblemOutcome:
    return ProblemOutcome(
        name,
        "proved" if correct else "failed",
        attempts=4,
        correct_samples=correct,
        budget=Budget(attempts=4, tokens_in=10, lean_calls=4),
        to_solve={"attempts": 1.0, "tokens": 3.0, "lean_calls": 1.0} if correct else None,
    )


def _attempts(n: int, ok: set[int]) -> list[dict]:
    return [{"index": i, "round": 0, "proof": f"p{i}", "ok": i in ok} for i in range(n)]


# -- attempts.jsonl ------------------------------------------------------------------------------


def test_a_killed_run_resumes_with_its_finished_problems_and_nothing_else(tmp_path: Path) -> None:
    log = AttemptLog(tmp_path)
    log.write_problem(_outcome("a", [1]), _attempts(4, {1}), "whole")
    log.write_problem(_outcome("b", []), _attempts(4, set()), "whole")
    # Killed while "c" was proved: a group without its closing line, then half a line.
    with log.path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"problem": "c", "mode": "whole", "index": 0, "ok": True}) + "\n")
        f.write('{"problem": "c", "mode": "whole", "ind')
    finished = AttemptLog(tmp_path).resume()
    assert sorted(finished) == ["a", "b"]
    assert finished["a"].correct_samples == [1] and finished["a"].solved
    assert finished["a"].budget == Budget(attempts=4, tokens_in=10, lean_calls=4)
    assert finished["a"].to_solve == {"attempts": 1.0, "tokens": 3.0, "lean_calls": 1.0}
    assert not finished["b"].solved
    records = [json.loads(line) for line in log.path.read_text("utf-8").splitlines()]
    assert {r["problem"] for r in records} == {"a", "b"}  # c's lines are gone
    assert len(records) == 2 * (4 + 1)
    assert records[0] == {"problem": "a", "mode": "whole", **_attempts(4, {1})[0]}
    # Resuming again changes nothing; a new problem is appended after the kept lines.
    assert sorted(AttemptLog(tmp_path).resume()) == ["a", "b"]
    log.write_problem(_outcome("c", [0]), _attempts(4, {0}), "whole")
    assert sorted(AttemptLog(tmp_path).resume()) == ["a", "b", "c"]


def test_a_problem_whose_search_ended_in_an_error_is_proved_again(tmp_path: Path) -> None:
    """The generator's server went away mid-run: that is no property of the problem."""
    log = AttemptLog(tmp_path)
    log.write_problem(_outcome("a", [1]), _attempts(4, {1}), "whole")
    broken = ProblemOutcome("b", "error", 1, error="the proof generator raised ...")
    log.write_problem(broken, _attempts(1, set()), "whole")
    assert sorted(AttemptLog(tmp_path).resume()) == ["a"]
    lines = log.path.read_text("utf-8").splitlines()
    assert len(lines) == 4 + 1 and all('"problem": "a"' in line for line in lines)


def test_a_broken_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    log = AttemptLog(tmp_path)
    log.write_problem(_outcome("a", [1]), _attempts(2, {1}), "whole")
    text = log.path.read_text("utf-8")
    log.path.write_text("not json\n" + text, "utf-8")
    with pytest.raises(DataFormatError, match="line 1 is not JSON"):
        log.resume()


# -- --out ---------------------------------------------------------------------------------------


def _evaluation_dir(path: Path, settings: dict) -> Path:
    open_out_dir(plan_out_dir(path, settings, resume=False, force=False), settings)
    return path


def test_a_new_or_empty_out_is_started_and_marked(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    plan = plan_out_dir(out, SETTINGS, resume=False, force=False)
    assert plan.action == "new" and not (tmp_path / "deep").exists()  # only looked
    open_out_dir(plan, SETTINGS)
    record = json.loads((out / EVAL_FILE).read_text("utf-8"))
    assert record["settings"] == SETTINGS and "lean_dojo_v2_version" in record
    (tmp_path / "empty").mkdir()
    assert plan_out_dir(tmp_path / "empty", SETTINGS, resume=False, force=False).action == "new"
    # --resume of a directory that holds nothing yet starts it
    assert plan_out_dir(tmp_path / "new", SETTINGS, resume=True, force=False).action == "new"


def test_an_out_holding_this_evaluation_needs_resume_or_force(tmp_path: Path) -> None:
    out = _evaluation_dir(tmp_path / "out", SETTINGS)
    (out / "attempts.jsonl").write_text("kept\n", "utf-8")
    with pytest.raises(EvalOutputExistsError, match="--resume to continue it") as info:
        plan_out_dir(out, SETTINGS, resume=False, force=False)
    assert "\n" not in str(info.value)
    plan = plan_out_dir(out, dict(SETTINGS), resume=True, force=False)
    assert plan.action == "resume"
    open_out_dir(plan, SETTINGS)
    assert (out / "attempts.jsonl").read_text("utf-8") == "kept\n"
    assert len(json.loads((out / EVAL_FILE).read_text("utf-8"))["resumed"]) == 1
    plan = plan_out_dir(out, SETTINGS, resume=False, force=True)
    assert plan.action == "replace"
    open_out_dir(plan, SETTINGS)
    assert not (out / "attempts.jsonl").exists() and (out / EVAL_FILE).is_file()


def test_an_out_of_another_evaluation_is_refused_naming_what_differs(tmp_path: Path) -> None:
    out = _evaluation_dir(tmp_path / "out", SETTINGS)
    other = {**SETTINGS, "n": 8}
    for resume in (False, True):
        with pytest.raises(EvalOutputExistsError, match=r"other settings \(n: 4 there, 8 here\)"):
            plan_out_dir(out, other, resume=resume, force=False)
    assert plan_out_dir(out, other, resume=False, force=True).action == "replace"


def test_an_out_of_someone_elses_files_is_refused_unless_force(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious", "utf-8")
    for resume in (False, True):
        with pytest.raises(EvalOutputExistsError, match="did not write.*; .* --force"):
            plan_out_dir(out, SETTINGS, resume=resume, force=False)
    assert (out / "notes.txt").read_text("utf-8") == "precious"
    assert plan_out_dir(out, SETTINGS, resume=False, force=True).action == "replace"


def test_an_out_that_cannot_be_written_or_overlaps_an_input_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", "utf-8")
    with pytest.raises(EvalOutputError, match="is a file, not a directory"):
        plan_out_dir(a_file, SETTINGS, resume=False, force=True)
    with pytest.raises(EvalOutputError, match="cannot be made: .*file.txt is a file"):
        plan_out_dir(a_file / "sub" / "out", SETTINGS, resume=False, force=True)
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(EvalOutputExistsError, match="overlaps the input"):
        plan_out_dir(data / "out", SETTINGS, resume=False, force=True, sources=[data])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "file.txt"]


def test_where_the_model_is_served_is_not_what_the_evaluation_is(tmp_path: Path) -> None:
    """An eval.json written when base_url was among the settings resumes at another address;
    the resumption notes the move, and eval.json keeps where the model is now."""
    old = {**SETTINGS, "base_url": "http://a:8000/v1"}
    out = _evaluation_dir(tmp_path / "out", old)
    plan = plan_out_dir(out, SETTINGS, resume=True, force=False)
    assert plan.action == "resume"
    open_out_dir(plan, SETTINGS, {"base_url": "http://b:8000/v1"})
    open_out_dir(plan, SETTINGS, {"base_url": "http://b:8000/v1"})
    record = json.loads((out / EVAL_FILE).read_text("utf-8"))
    moved, stayed = record["resumed"]
    assert moved["changed"] == {"base_url": ["http://a:8000/v1", "http://b:8000/v1"]}
    assert "changed" not in stayed
    assert record["where"] == {"base_url": "http://b:8000/v1"}
