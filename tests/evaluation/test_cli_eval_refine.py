"""``eval prove --mode refine`` as a user runs it, with ``--verifier lean`` on the project's fake
Pantograph REPL (whose error messages follow Lean's format) and an OpenAI-compatible test server:
Lean's first error of a failed attempt reaches the model's next prompt over HTTP, a chain stops
at its first accepted proof, and one that never succeeds stops after R rounds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_pantograph.launcher import write_fake_binary
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.cli import main
from lean_dojo_v2.evaluation import load_benchmark

pytestmark = pytest.mark.timeout(180)

R = 2
FIXED, NEVER = "mathd_algebra_141", "mathd_algebra_478"
# the miniF2F proof the fake REPL has recorded transitions for
RIGHT = (
    "replace h₂ : a + b = 27\nlinarith\n"
    "have h₃ : a ^ 2 + b ^ 2 = (a + b) ^ 2 - 2 * (a * b) := by ring\nrw [h₃, h₂, h₁]\nnorm_num"
)
WRONG = {FIXED: "nlinarith [sq_nonneg (a - b)]", NEVER: "norm_num"}
REFINING = "A previous attempt was rejected by Lean"  # the library's refine prompt says so


def _answer(body: dict[str, Any], _k: int) -> str:
    """A first proof is wrong; a refinement of FIXED is the right proof, of NEVER wrong again."""
    prompt = body["messages"][-1]["content"]
    name = re.search(r"theorem\s+(\S+)", prompt)
    problem = name[1] if name else ""
    proof = RIGHT if problem == FIXED and REFINING in prompt else WRONG.get(problem, "simp")
    return f"```lean4\n{proof}\n```"


def _benchmark(path: Path) -> Path:
    """The two miniF2F-test statements with an empty header: the fake REPL needs no Mathlib."""
    bench = load_benchmark("minif2f-test", problems=[FIXED, NEVER])
    rows = [{"name": p.name, "header": "", "formal_statement": p.formal_statement}
            for p in bench.problems]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_refine_sends_leans_error_to_the_server_and_stops_after_r_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repl = write_fake_binary(
        tmp_path / "repl", "leanprover/lean4:v4.15.0", env={"FAKE_PANTOGRAPH_STRICT": "1"}
    )
    out = tmp_path / "out"
    with FakeOpenAI(completions=_answer, models=("prover",)) as server:
        argv = ["eval", "prove", "--benchmark", str(_benchmark(tmp_path / "p.jsonl"))]
        argv += ["--mode", "refine", "--n", "1", "--refine-rounds", str(R)]
        argv += ["--generator", "openai", "--model", "prover", "--base-url", server.base_url]
        argv += ["--verifier", "lean", "--repl", str(repl), "--verdict-cache", "none"]
        argv += ["--parallel", "inline", "--no-progress", "--out", str(out), "--json"]
        assert main(argv) == 0
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["solved_problems"] == [FIXED] and line["checked_by"] == {"lean": 1}
    records = [json.loads(x) for x in (out / "attempts.jsonl").read_text("utf-8").splitlines()]
    rounds = [(r["problem"], r["round"], r["ok"]) for r in records if "index" in r]
    # FIXED: accepted in round 1, no round 2; NEVER: the first proof and R rounds, then it stops
    assert rounds == [(FIXED, 0, False), (FIXED, 1, True)] + [
        (NEVER, i, False) for i in range(R + 1)
    ]
    assert all(r["checked_by"] == "lean" for r in records if "index" in r)
    assert line["budget"]["attempts"] == 2 + R + 1
    assert len(prompts) == 2 + R + 1  # one request per proof
    for name, goal in ((FIXED, "⊢ a ^ 2 + b ^ 2 = 369"), (NEVER, "⊢ v = 65")):
        first, *refining = [p for p in prompts if f"theorem {name} " in p]
        assert REFINING not in first
        for prompt in refining:  # the failed proof, Lean's first error where it is, the goal
            assert f"  {WRONG[name]}\n```" in prompt
            assert "at line 1, column 0 of the proof:\nunknown tactic" in prompt
            assert "The goal there:\n" in prompt and goal in prompt
    entry = json.loads((out / "putnambench_entry.json").read_text("utf-8"))
    assert entry["prover"]["condensed-compute-budget"] == f"pass@1x{R + 1}"
