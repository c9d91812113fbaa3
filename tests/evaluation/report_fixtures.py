"""Evaluation output directories for the report's tests, written by the evaluation's own writers
(``AttemptLog`` for ``attempts.jsonl``, ``EvalResult`` for ``summary.json``), so the report is
tested on the files ``eval prove`` writes; and a whole-proof sampler of recorded proofs, for an
evaluation run end to end."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from lean_dojo_v2.evaluation.attempts import AttemptLog, ProblemOutcome
from lean_dojo_v2.evaluation.budget import Budget
from lean_dojo_v2.evaluation.recorded import RecordedProofs
from lean_dojo_v2.evaluation.summary import SUMMARY_FILE, EvalResult, write_json
from lean_dojo_v2.models.generator import Candidate, Completion, TacticGenerator
from lean_dojo_v2.models.proof_prompt import ProofRequest

HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\n"
WRONG_PROOF = "nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)]"
GOOD_PROOF = "intro h\nsimp at h\nomega"
# As Lean prints it (``LeanMessage.__str__``): position in the proof, severity, the text with the
# goal the tactic saw under it.
LEAN_ERROR = "3:2: error: linarith failed to find a contradiction\na b : ℝ\nh : a < b\n⊢ False"


def attempt(
    problem: str,
    index: int,
    *,
    ok: bool,
    mode: str = "whole",
    round: int = 0,
    proof: str | None = None,
    messages: Sequence[object] | None = None,
    tree: object = None,
) -> dict[str, object]:
    """One attempt line of ``attempts.jsonl`` (``Attempt.to_dict()`` with problem and mode)."""
    line: dict[str, object] = {
        "problem": problem,
        "mode": mode,
        "index": index,
        "round": round,
        "proof": proof if proof is not None else (GOOD_PROOF if ok else WRONG_PROOF),
        "ok": ok,
        "checked_by": "recorded",
        "messages": list(messages) if messages is not None else ([] if ok else [LEAN_ERROR]),
        "tokens_in": 120,
        "tokens_out": 40 + index,
        "generator_seconds": 0.5,
        "gpu_seconds": 0.0,
        "lean_calls": 0 if index else 1,
        "lean_seconds": 0.25,
        "cached": index > 0,
        "error": None,
    }
    if tree is not None:
        line["tree"] = tree
    return line


def write_out(
    out: Path,
    lines: Sequence[dict[str, object]],
    *,
    problems: Sequence[str],
    n: int,
    mode: str = "whole",
    summary: bool = True,
    closed: Sequence[str] | None = None,
) -> Path:
    """Write an evaluation's output directory, ``problems`` in the benchmark's order. Problems
    with lines are closed in ``attempts.jsonl`` (all of them, or those in ``closed``: a run
    killed before closing the others); ``summary.json`` is written unless ``summary`` is False
    (a run that did not finish)."""
    out.mkdir(parents=True, exist_ok=True)
    log = AttemptLog(out)
    outcomes = []
    by_problem: dict[object, list[dict[str, object]]] = {}
    for line in lines:
        by_problem.setdefault(line["problem"], []).append(
            {k: v for k, v in line.items() if k not in ("problem", "mode")}
        )
    for name in problems:
        mine = by_problem.get(name, [])
        correct = sorted({int(str(line["index"])) for line in mine if line["ok"] is True})
        outcome = ProblemOutcome(
            name,
            "proved" if correct else "failed",
            len(mine),
            correct_samples=correct,
            proof=GOOD_PROOF if correct else None,
            checked_by="recorded" if correct else None,
            budget=Budget(
                attempts=len(mine),
                tokens_in=120 * len(mine),
                tokens_out=45 * len(mine),
                generator_seconds=0.5 * len(mine),
                lean_calls=1 if mine else 0,
                lean_cpu_seconds=0.2,
                wall_seconds=1.25 * len(mine),
                dollars=0.07 * len(mine),
            ),
        )
        outcomes.append(outcome)
        if not mine:
            continue
        if closed is None or name in closed:
            log.write_problem(outcome, mine, mode)
        else:  # killed before the problem was closed: its attempt lines only
            with log.path.open("a", encoding="utf-8") as f:
                f.writelines(_json_line({"problem": name, "mode": mode, **a}) for a in mine)
    if summary:
        result = EvalResult(
            benchmark="minif2f-test",
            mode=mode,
            verifier="recorded",
            model="deepseek-ai/DeepSeek-Prover-V2-7B",
            n=n,
            early_stop=False,
            problems=outcomes,
            out=out,
            settings={"n": n, "early_stop": False, "refine_rounds": 2, "temperature": 1.0},
            statements={
                name: (HEADER, f"theorem {name} (a b : ℝ) : a ≤ b := by") for name in problems
            },
        )
        write_json(out / SUMMARY_FILE, result.to_dict())
    return out


def _json_line(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def synthetic_out(out: Path, *, problems: int, n: int, mode: str = "whole") -> Path:
    """An evaluation of ``problems`` problems with ``n`` attempts each: every third problem
    solved by its first attempt, the others failing with a Lean error; proofs and messages of the
    length whole-proof provers write (a few hundred characters)."""
    names = [f"synthetic_problem_{i:04d}" for i in range(problems)]
    proof = "\n".join(
        f"  have h{j} : a{j} ≤ b{j} := by nlinarith [sq_nonneg (a{j} - b{j})]" for j in range(6)
    )
    lines = [
        attempt(name, k, ok=(i % 3 == 0 and k == 0), proof=proof, mode=mode)
        for i, name in enumerate(names)
        for k in range(n)
    ]
    # Not synced to disk per problem as eval prove does: 672 fsyncs cost seconds and durability
    # is not what the report's tests test.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: None)
        return write_out(out, lines, problems=names, n=n, mode=mode)


class RecordedSampler(TacticGenerator):
    """A whole-proof sampler for ``evaluate``: sample i of a problem with a recorded proof is that
    proof when i is odd, a wrong proof otherwise; problems without one get wrong proofs only."""

    def __init__(self) -> None:
        self.recorded = RecordedProofs.bundled()

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        return [[] for _ in states]

    def sample_proofs(
        self, requests: Sequence[ProofRequest], num_samples: int, *, prompt: object = None
    ) -> list[list[Completion]]:
        out = []
        for request in requests:
            task = request.task
            found = self.recorded.for_statement(task.header or "", task.formal_statement or "")
            good = f"{task.header}{task.formal_statement}\n{found[0].proof}" if found else None
            answers = [
                good if good is not None and i % 2 else f"{task.formal_statement}\n  {WRONG_PROOF}"
                for i in range(num_samples)
            ]
            out.append([Completion(f"```lean4\n{a}\n```") for a in answers])
        return out
