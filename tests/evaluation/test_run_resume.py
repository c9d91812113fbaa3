"""``eval prove`` end to end, offline: an OpenAI-compatible test server answers each miniF2F
problem with proofs a real Lean run accepted (the recorded ones) for some samples and wrong
proofs for the others; ``--verifier recorded`` decides. The solved set and pass@k are exactly
the ones the answers imply, and a run killed mid-way (SIGKILL to its process group) and resumed
ends with the same totals as an uninterrupted run."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prover._oracle_server import one_line_error
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.cli import main
from lean_dojo_v2.evaluation import RecordedProofs, load_benchmark

REPO = Path(__file__).resolve().parents[2]
N = 4
WRONG = "nlinarith [sq_nonneg (a - b)]"
# correct samples per problem (the last ones of each request: the first k samples of a problem
# hold one only when k > N - c), for the first problems of miniF2F-test with a recorded proof
CORRECT = [4, 2, 1, 0, 3, 1]
UNRECORDED = 2  # and problems with no recorded proof, answered wrongly


def _problems() -> tuple[list[str], dict[str, str], dict[str, int]]:
    """The problems of the test, the recorded proof of each that has one, and c per problem."""
    bench = load_benchmark("minif2f-test")
    records = RecordedProofs.bundled()
    recorded, unrecorded = {}, []
    for p in bench.problems:
        found = records.for_statement(p.header, p.formal_statement)
        if found and len(recorded) < len(CORRECT):
            recorded[p.name] = p.header + p.formal_statement + found[0].proof
        elif not found and len(unrecorded) < UNRECORDED:
            unrecorded.append(p.name)
    names = [*recorded, *unrecorded]
    correct = dict(zip(recorded, CORRECT, strict=True)) | {n: 0 for n in unrecorded}
    return names, recorded, correct


class Answers:
    """The server's answers: choice i of a request about problem P is P's recorded proof (the
    whole Lean code, fenced, as DeepSeek-Prover writes it) when i >= N - c(P), else a wrong one."""

    def __init__(self, recorded: dict[str, str], correct: dict[str, int]) -> None:
        self.recorded, self.correct = recorded, correct
        self.lock = threading.Lock()
        self.seen: dict[int, tuple[dict[str, Any], int]] = {}  # id(body) -> (body, choices)

    def __call__(self, body: dict[str, Any], _k: int) -> str:
        with self.lock:  # the choices of one request come one after another: count them
            kept, i = self.seen.get(id(body), (body, 0))
            self.seen[id(body)] = (kept, i + 1)
        prompt = body["messages"][-1]["content"]
        name = re.search(r"theorem\s+(\S+)", prompt)
        problem = name[1] if name else ""
        if i >= N - self.correct.get(problem, 0):
            return f"```lean4\n{self.recorded[problem]}\n```"
        return f"```lean4\n{WRONG}\n```"


@pytest.fixture(scope="module")
def scenario() -> Iterator[tuple[FakeOpenAI, list[str], dict[str, int]]]:
    names, recorded, correct = _problems()
    with FakeOpenAI(completions=Answers(recorded, correct), models=("prover",)) as server:
        yield server, names, correct


def _argv(server: FakeOpenAI, names: list[str], out: Path) -> list[str]:
    return (
        ["eval", "prove", "--benchmark", "minif2f-test", "--mode", "whole", "--n", str(N)]
        + ["--generator", "openai", "--model", "prover", "--base-url", server.base_url]
        + ["--verifier", "recorded", "--verdict-cache", "none", "--out", str(out), "--json"]
        + ["--problems", *names]
    )


def _expected_pass_at(correct: dict[str, int]) -> dict[str, float]:
    """pass@k by the formula, problem by problem: 1 - C(n-c, k) / C(n, k)."""
    return {
        str(k): sum(1 - math.comb(N - c, k) / math.comb(N, k) for c in correct.values())
        / len(correct)
        for k in range(1, N + 1)
    }


def _totals(summary: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on how the run went (time does)."""
    budget = summary["budget"]
    return {
        "attempted": summary["attempted"],
        "solved": summary["solved"],
        "solved_problems": summary["solved_problems"],
        "pass_at": summary["pass_at"],
        "solved_at": summary["solved_at"],
        "problems": {
            name: {k: entry[k] for k in ("solved", "attempts", "correct", "correct_samples")}
            for name, entry in summary["problems"].items()
        },
        "budget": {k: budget[k] for k in ("attempts", "tokens_in", "tokens_out", "lean_calls")},
    }


def test_whole_mode_with_the_recorded_verifier_gives_the_expected_solved_set_and_pass_at_k(
    scenario: tuple[FakeOpenAI, list[str], dict[str, int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, names, correct = scenario
    out = tmp_path / "out"
    rc = main([*_argv(server, names, out), "--parallel", "inline", "--no-progress"])
    stdout = capsys.readouterr().out
    assert rc == 0
    line = json.loads(stdout.strip().splitlines()[-1])
    assert {
        "benchmark",
        "mode",
        "verifier",
        "attempted",
        "solved",
        "pass_at",
        "budget",
        "out",
    } <= set(line)
    assert (line["benchmark"], line["mode"], line["verifier"]) == (
        "minif2f-test",
        "whole",
        "recorded",
    )
    assert line["out"] == str(out)
    solved = {n for n, c in correct.items() if c}
    assert set(line["solved_problems"]) == solved and line["solved"] == len(solved)
    assert line["attempted"] == len(names)
    for k, value in _expected_pass_at(correct).items():
        assert line["pass_at"][k] == pytest.approx(value, abs=1e-6)
    # the correct samples are the last c of N: a problem is solved within k iff k > N - c
    assert line["solved_at"] == {
        str(k): sum(c > 0 and k > N - c for c in correct.values()) for k in range(1, N + 1)
    }
    assert line["checked_by"] == {"recorded": len(solved)}
    assert line["budget"]["attempts"] == N * len(names)
    assert line["budget"]["tokens_in"] > 0 and line["budget"]["tokens_out"] > 0
    assert line["budget"]["dollars"] is None
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    for name, c in correct.items():
        entry = summary["problems"][name]
        assert (entry["solved"], entry["attempts"], entry["correct"]) == (c > 0, N, c)
        assert entry["correct_samples"] == list(range(N - c, N))
    records = [json.loads(x) for x in (out / "attempts.jsonl").read_text("utf-8").splitlines()]
    attempts = [r for r in records if "index" in r]
    assert len(attempts) == N * len(names)
    assert all(r["checked_by"] == "recorded" for r in attempts if r["ok"])
    entry = json.loads((out / "putnambench_entry.json").read_text("utf-8"))
    assert entry["prover"]["num-solved"] == {"lean-wsolution": len(solved)}
    assert entry["prover"]["condensed-compute-budget"] == f"pass@{N}"
    assert (out / "solved.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "report.html").is_file()


def _closed(out: Path) -> int:
    """Problems closed in attempts.jsonl so far."""
    try:
        text = (out / "attempts.jsonl").read_text("utf-8")
    except OSError:
        return 0
    return text.count('"done": true')


def _start(server: FakeOpenAI, names: list[str], out: Path, closed: int = 2) -> subprocess.Popen:
    """Start the evaluation into ``out`` with two workers in its own process group; return once
    ``closed`` problems are closed in its attempts.jsonl."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    argv = [sys.executable, "-m", "lean_dojo_v2", *_argv(server, names, out)]
    proc = subprocess.Popen(
        [*argv, "--workers", "2", "--no-progress"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A command run in the background of a script (as CI or `nohup … &` may run this
        # suite) inherits SIGINT ignored; a terminal's command has it at its default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while _closed(out) < closed and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        _, err = proc.communicate()
        raise AssertionError(err)
    return proc


def _stop_midway(server: FakeOpenAI, names: list[str], out: Path, sig: int) -> tuple[int, str]:
    """:func:`_start`, then ``sig`` to its process group once two problems are closed (its
    workers get it too, as under a job scheduler or a terminal's Ctrl-C); its exit status and
    stderr."""
    proc = _start(server, names, out)
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def test_a_killed_evaluation_resumes_to_the_totals_of_an_uninterrupted_one(
    scenario: tuple[FakeOpenAI, list[str], dict[str, int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, names, correct = scenario
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main([*_argv(server, names, whole), "--parallel", "inline", "--no-progress"]) == 0
    capsys.readouterr()
    server.script.delay = 0.4  # slow answers: time to kill it half-way
    try:
        _stop_midway(server, names, killed, signal.SIGKILL)
        done_before = _closed(killed)
        assert 2 <= done_before < len(names) and not (killed / "summary.json").exists()
        # The same command again is refused; --resume continues it (with other workers: they
        # change no result).
        assert main([*_argv(server, names, killed), "--no-progress"]) == 1
        assert "--resume" in capsys.readouterr().err
        requests_before = len(server.requests)
        resumed = [*_argv(server, names, killed), "--resume", "--parallel", "inline"]
        assert main([*resumed, "--no-progress"]) == 0
        capsys.readouterr()
    finally:
        server.script.delay = 0.0
    # finished problems were not asked again
    assert len(server.requests) - requests_before == len(names) - done_before
    a = json.loads((whole / "summary.json").read_text("utf-8"))
    b = json.loads((killed / "summary.json").read_text("utf-8"))
    assert _totals(b) == _totals(a)
    lines = (killed / "attempts.jsonl").read_text("utf-8").splitlines()
    attempts = [json.loads(x) for x in lines if '"index"' in x]
    assert len(attempts) == N * len(names)  # nothing counted twice
    assert len({(r["problem"], r["index"], r["round"]) for r in attempts}) == len(attempts)


def test_ctrl_c_ends_in_one_line_and_resume_gives_the_uninterrupted_totals(
    scenario: tuple[FakeOpenAI, list[str], dict[str, int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGINT to the process group, as a terminal's Ctrl-C sends it to the command and its
    workers: exit status 130, one line of ours and no traceback, the lock released; --resume
    then ends with the totals of an uninterrupted run."""
    server, names, _ = scenario
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert main([*_argv(server, names, whole), "--parallel", "inline", "--no-progress"]) == 0
    capsys.readouterr()
    server.script.delay = 0.4
    try:
        status, err = _stop_midway(server, names, stopped, signal.SIGINT)
        assert status == 130, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines[-1].startswith("lean-dojo-v2: interrupted;") and "--resume" in lines[-1]
        assert "Traceback" not in err, err
        done_before = _closed(stopped)
        assert 2 <= done_before < len(names) and not (stopped / "summary.json").exists()
        resumed = [*_argv(server, names, stopped), "--resume", "--parallel", "inline"]
        assert main([*resumed, "--no-progress"]) == 0
        capsys.readouterr()
    finally:
        server.script.delay = 0.0
    a = json.loads((whole / "summary.json").read_text("utf-8"))
    b = json.loads((stopped / "summary.json").read_text("utf-8"))
    assert _totals(b) == _totals(a)
    lines = (stopped / "attempts.jsonl").read_text("utf-8").splitlines()
    attempts = [json.loads(x) for x in lines if '"index"' in x]
    assert len(attempts) == N * len(names)  # nothing counted twice
    assert len({(r["problem"], r["index"], r["round"]) for r in attempts}) == len(attempts)


def test_a_second_run_into_a_running_evaluation_changes_nothing_of_it(
    scenario: tuple[FakeOpenAI, list[str], dict[str, int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """While an evaluation runs (its last problem held at the server), the same command with
    --force, and with --resume, is refused in one line before it touches --out: the running
    one keeps its attempts.jsonl, eval.json and Lean-usage ledger, and ends with the totals of
    an uninterrupted run."""
    server, names, correct = scenario
    whole, running = tmp_path / "whole", tmp_path / "running"
    assert main([*_argv(server, names, whole), "--parallel", "inline", "--no-progress"]) == 0
    capsys.readouterr()
    answers, gate = server.script.completions, threading.Event()
    assert callable(answers)

    def held(body: dict[str, Any], k: int) -> str:
        if re.search(rf"theorem\s+{re.escape(names[-1])}\s", body["messages"][-1]["content"]):
            gate.wait(120)
        return answers(body, k)

    server.script.completions = held
    try:
        proc = _start(server, names, running, closed=len(names) - 1)
        attempts = (running / "attempts.jsonl").read_bytes()
        eval_json = (running / "eval.json").read_bytes()
        for extra in ("--force", "--resume"):
            argv = [*_argv(server, names, running), extra, "--parallel", "inline"]
            line = one_line_error([*argv, "--no-progress"], capsys)
            assert "in use by another run" in line, line
            assert (running / "attempts.jsonl").read_bytes() == attempts
            assert (running / "eval.json").read_bytes() == eval_json
            assert (running / ".lean_usage").is_dir()
        gate.set()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        gate.set()
        server.script.completions = answers
    a = json.loads((whole / "summary.json").read_text("utf-8"))
    b = json.loads((running / "summary.json").read_text("utf-8"))
    assert _totals(b) == _totals(a)
    lines = (running / "attempts.jsonl").read_text("utf-8").splitlines()
    assert sum('"done": true' in x for x in lines) == len(names)
    assert sum('"index"' in x for x in lines) == N * len(names)
