"""``lean-dojo-v2 eval prove``: bad input is one line and writes nothing; an ``--out`` of another
evaluation is refused unless ``--resume`` (same settings) or ``--force``; the config system
(``--help-config``, ``--set``, ``--config``); dollars from a price table; and tactic mode on a
LeanDojo dataset proves what ``prove`` proves at the same budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prover._oracle_server import one_line_error, oracle_answer
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.evaluation import RecordedProofs, load_benchmark

SAMPLE = str(sample_dataset_path())
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    """Answers every whole-proof request with a proof of the first miniF2F-test problem."""
    p = load_benchmark("minif2f-test", limit=1).problems[0]
    proof = RecordedProofs.bundled().for_statement(p.header, p.formal_statement)[0].proof
    with FakeOpenAI(completions=[f"```lean4\n{p.header}{p.formal_statement}{proof}\n```"],
                    models=("prover",)) as s:  # fmt: skip
        yield s


def _eval(server: FakeOpenAI, out: Path, *extra: str) -> list[str]:
    return (
        ["eval", "prove", "--benchmark", "minif2f-test", "--limit", "2", "--n", "2"]
        + ["--generator", "openai", "--model", "prover", "--base-url", server.base_url]
        + ["--verifier", "recorded", "--verdict-cache", "none", "--out", str(out)]
        + ["--parallel", "inline", "--no-progress", "--json", *extra]
    )


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


# -- bad input: one line, nothing written ---------------------------------------------------------


def test_bad_input_is_one_line_and_nothing_is_written(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    bad_statement = tmp_path / "mine.jsonl"
    bad_statement.write_text(
        json.dumps({"name": "p", "header": "import Mathlib\n", "formal_statement": "x + 1 = 2"})
        + "\n",
        "utf-8",
    )
    typo = tmp_path / "prices.yaml"
    typo.write_text("prover: {inptu: 1.0, output: 2.0}\n", "utf-8")
    a_file = tmp_path / "a_file"
    a_file.write_text("", "utf-8")
    cases = {
        "unknown benchmark 'minif2f-tst' (did you mean minif2f-test?)": [
            "--benchmark",
            "minif2f-tst",
        ],
        "mathd_algebra_47": ["--problems", "mathd_algebra_47"],
        "does not declare `theorem NAME`": ["--benchmark", str(bad_statement)],
        "unknown key 'inptu'": ["--price-table", str(typo)],
        "only used with --generator openai": ["--generator", "hf"],
        "tactic mode runs tactics": ["--mode", "tactic"],
        "resume and force contradict": ["--resume", "--force"],
        "config key 'n' must be at least 1": ["--n", "0"],
    }
    for says, extra in cases.items():
        line = one_line_error(_eval(server, out, *extra), capsys)
        assert says in line, line
    assert not out.exists()
    line = one_line_error(_eval(server, a_file / "out"), capsys)
    assert "is a file, not a directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "mine.jsonl", "prices.yaml"]
    assert not (tmp_path / ".out.lock").exists()


def test_an_unwritable_out_is_the_only_line_on_stderr(server: FakeOpenAI, tmp_path: Path) -> None:
    """As a user runs it, in a process of its own whose logging the command sets up: the server
    is asked for its models first, yet stderr holds the one error line alone. /sys takes no new
    file, not even from root (for whom a directory's permission bits decide nothing)."""
    out = Path("/sys/kernel/lean-dojo-v2-eval-out")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2", *_eval(server, out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert line.startswith(f"lean-dojo-v2: error: --out {out} cannot be written"), line
    assert not out.exists()


def test_an_out_of_another_evaluation_needs_resume_or_force(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(_eval(server, out)) == 0
    first = _json(capsys)
    assert first["attempted"] == 2 and first["solved"] == 1
    summary = (out / "summary.json").read_bytes()
    line = one_line_error(_eval(server, out, "--n", "4"), capsys)
    assert "other settings (n: 2 there, 4 here)" in line and "--force" in line
    line = one_line_error(_eval(server, out, "--n", "4", "--resume"), capsys)
    assert "other settings" in line
    line = one_line_error(_eval(server, out), capsys)
    assert "--resume" in line
    assert (out / "summary.json").read_bytes() == summary  # refused: untouched
    requests = len(server.requests)
    assert main(_eval(server, out, "--resume", "--workers", "3")) == 0
    assert _json(capsys)["pass_at"] == first["pass_at"]
    assert len(server.requests) == requests  # every problem was finished: none asked again
    assert main(_eval(server, out, "--n", "4", "--force")) == 0
    assert _json(capsys)["n"] == 4


def test_config_file_set_and_flags_and_a_price_table(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:  # like --help: printed, then exit 0
        main(["eval", "prove", "--help-config"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "refine_rounds = 2" in text and "price_table = null" in text
    config = tmp_path / "eval.yaml"
    config.write_text("n: 3\nlimit: 1\n", "utf-8")
    prices = tmp_path / "prices.yaml"
    prices.write_text("prover: {input: 2.0, output: 10.0}\n", "utf-8")
    argv = _eval(server, tmp_path / "out", "--config", str(config), "--set", "limit=2")
    assert main([*argv, "--n", "1", "--price-table", str(prices)]) == 0
    line = _json(capsys)
    # YAML, then --set (limit 2 over the file's 1), then flags (--n 1 over the file's 3; --limit
    # of _eval says 2 too)
    assert line["n"] == 1 and line["attempted"] == 2
    budget = line["budget"]
    expected = (budget["tokens_in"] * 2.0 + budget["tokens_out"] * 10.0) / 1e6
    assert budget["dollars"] == pytest.approx(expected) and budget["dollars"] > 0
    entry = json.loads((tmp_path / "out" / "putnambench_entry.json").read_text("utf-8"))
    assert "cost: $" in entry["prover"]["note"]


# -- tactic mode is prove --------------------------------------------------------------------------


def test_tactic_mode_on_a_leandojo_dataset_proves_what_prove_proves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theorems = [t for t in load_theorems(SAMPLE) if t.traced_tactics][:30]
    # a budget that proves some of them, not all: the same set is then a real agreement
    budget = ["--num-samples", "2", "--max-expansions", "4", "--timeout", "60"]
    names = [t.full_name for t in theorems]
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as s:
        argv = ["prove", "--data", SAMPLE, "--split", "all", "--generator", "openai"]
        argv += ["--model", "oracle", "--base-url", s.base_url, "--parallel", "inline"]
        argv += [*budget, "--no-progress", "--json"]
        for name in names:
            argv += ["--theorem", name]
        assert main(argv) == 0
        proved = set(_json(capsys)["proofs"])
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as s:
        argv = ["eval", "prove", "--data", SAMPLE, "--split", "all", "--mode", "tactic"]
        argv += ["--verifier", "replay", "--generator", "openai", "--model", "oracle"]
        argv += ["--base-url", s.base_url, "--parallel", "inline", *budget, "--no-progress"]
        argv += ["--verdict-cache", "none", "--out", str(tmp_path / "out"), "--json"]
        argv += ["--problems", *names]
        assert main(argv) == 0
        line = _json(capsys)
    assert proved and set(line["solved_problems"]) == proved
    assert proved < set(names)
    assert line["n"] == 1 and set(line["pass_at"]) == {"1"}
    assert line["pass_at"]["1"] == pytest.approx(len(proved) / len(names))
    assert line["checked_by"] == {"replay": len(proved)}
    # the search trees are in attempts.jsonl, for the report
    records = (tmp_path / "out" / "attempts.jsonl").read_text("utf-8").splitlines()
    trees = [json.loads(r)["tree"] for r in records if '"tree"' in r]
    assert len(trees) == len(names) and all(tree[0]["parent"] is None for tree in trees)


def test_the_progress_bar_shows_the_running_pass_at_1_and_budget(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a for a in _eval(server, tmp_path / "out") if a != "--no-progress"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "eval minif2f-test" in err and "2/2" in err
    # one of the two problems solved, both samples of it: pass@1 = (2/2 + 0/2) / 2
    assert "pass@1=0.500" in err and "solved=1" in err and "lean_calls=" in err
    assert json.loads(out.strip().splitlines()[-1])["pass_at"]["1"] == 0.5


def test_early_stop_reports_counts_not_pass_at_k(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(server, tmp_path / "out", "--early-stop")) == 0
    line = _json(capsys)
    assert line["early_stop"] is True and line["pass_at"] is None
    assert line["solved"] == 1 and line["solved_at"] == {"1": 1, "2": 1}
    entry = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert entry["pass_at"] is None
    text = [a for a in _eval(server, tmp_path / "text", "--early-stop") if a != "--json"]
    assert main(text) == 0
    assert "solved within the first k samples (early stop: no pass@k)" in capsys.readouterr().out


# -- inputs kept in --out; what is refused before anything is written ----------------------------


def test_an_input_inside_out_is_refused_even_with_force(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--force replaces what eval prove wrote, never the command's own inputs: a config file or a
    verdict cache kept in --out is an overlapping input, as a prompt or benchmark file is."""
    out = tmp_path / "out"
    assert main(_eval(server, out)) == 0
    capsys.readouterr()
    config = out / "cfg.yaml"
    config.write_text("n: 2\n", "utf-8")
    before = sorted(p.name for p in out.iterdir())
    line = one_line_error(_eval(server, out, "--force", "--config", str(config)), capsys)
    assert "overlaps the input" in line and "cfg.yaml" in line, line
    cache = out / "verdicts.sqlite"
    line = one_line_error(_eval(server, out, "--force", "--verdict-cache", str(cache)), capsys)
    assert "overlaps the input" in line and "verdicts.sqlite" in line, line
    assert sorted(p.name for p in out.iterdir()) == before
    assert config.read_text("utf-8") == "n: 2\n"


def test_what_cannot_be_evaluated_is_refused_up_front(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An n past the documented maximum, --split where it chooses nothing (a bundled benchmark)
    or names no split (../../x), and problems without a recorded goal for --verifier recorded:
    one line each, nothing written."""
    from lean_dojo_v2.evaluation.config import MAX_N

    out = tmp_path / "out"
    p = load_benchmark("minif2f-test", limit=1).problems[0]
    no_goal = tmp_path / "no_goal.jsonl"
    line = {"name": p.name, "header": p.header, "formal_statement": p.formal_statement}
    no_goal.write_text(json.dumps(line) + "\n", "utf-8")
    cases = {
        f"must be at most {MAX_N}": ["--n", str(MAX_N + 1)],
        "--split chooses a split of a LeanDojo dataset": ["--split", "valid"],
        "records no initial goal": ["--benchmark", str(no_goal)],
    }
    for says, extra in cases.items():
        got = one_line_error(_eval(server, out, *extra), capsys)
        assert says in got, got
    got = one_line_error(_eval(server, out, "--data", SAMPLE, "--split", "../../x"), capsys)
    assert "config key 'split'" in got, got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no_goal.jsonl"]


# -- resuming ------------------------------------------------------------------------------------


def test_a_server_at_another_address_resumes_the_same_evaluation(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where a model is served is not what it is: the same model at another base_url resumes,
    and eval.json's note of the resumption says where it moved."""
    out = tmp_path / "out"
    assert main(_eval(server, out)) == 0
    first = _json(capsys)
    assert "base_url" not in first["settings"]
    with FakeOpenAI(completions=server.script.completions, models=("prover",)) as moved:
        argv = [*_eval(server, out, "--resume"), "--base-url", moved.base_url]
        assert main(argv) == 0
    assert _json(capsys)["pass_at"] == first["pass_at"]
    record = json.loads((out / "eval.json").read_text("utf-8"))
    (note,) = record["resumed"]
    assert note["changed"] == {"base_url": [server.base_url, moved.base_url]}


def test_attempt_lines_of_a_problem_not_in_the_benchmark_are_refused(
    server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary counts the benchmark's problems; a line of another problem (an edited or
    concatenated attempts.jsonl) would be shown by the report and counted by nothing: resume
    and the report refuse it alike, naming the line, and nothing is written."""
    out = tmp_path / "out"
    assert main(_eval(server, out)) == 0
    capsys.readouterr()
    attempts = out / "attempts.jsonl"
    ghost = [
        {"problem": "ghost", "mode": "whole", "index": 0, "round": 0, "proof": "rfl", "ok": True},
        {"problem": "ghost", "done": True, "status": "proved", "correct_samples": [0]},
    ]
    with attempts.open("a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in ghost)
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    lines = len(attempts.read_text("utf-8").splitlines())
    line = one_line_error(_eval(server, out, "--resume"), capsys)
    assert f"line {lines - 1}" in line and "'ghost'" in line and "not in" in line, line
    line = one_line_error(["eval", "report", str(out)], capsys)
    assert f"line {lines - 1}" in line and "'ghost'" in line, line
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == files


def test_a_report_that_cannot_be_written_is_an_error_and_leaves_no_stale_page(
    server: FakeOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lean_dojo_v2.evaluation import report_html

    out = tmp_path / "out"
    assert main(_eval(server, out)) == 0
    capsys.readouterr()
    assert (out / "report.html").is_file()

    def broken(out_dir: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_html, "write_report_html", broken)
    line = one_line_error(_eval(server, out, "--resume"), capsys)
    assert "report.html" in line and "eval report" in line, line
    assert not (out / "report.html").exists()
    assert (out / "summary.json").is_file()
