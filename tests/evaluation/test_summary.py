"""``putnambench_entry.json``: the entry PutnamBench's leaderboard lists, with the solved problems
(as its notes name them) and the budget in its note."""

from __future__ import annotations

from pathlib import Path

from lean_dojo_v2.evaluation.attempts import ProblemOutcome
from lean_dojo_v2.evaluation.budget import Budget
from lean_dojo_v2.evaluation.summary import EvalResult, putnambench_entry


def _result(mode: str, settings: dict[str, object]) -> EvalResult:
    spent = Budget(attempts=6, tokens_in=100, tokens_out=50, lean_calls=4, dollars=0.25)
    problems = [
        ProblemOutcome("putnam_1977_a3", "proved", 3, [1], "simp", "lean", budget=spent),
        ProblemOutcome("putnam_2023_b6", "proved", 3, [0, 2], "ring", "lean", budget=spent),
        ProblemOutcome("putnam_1962_a2", "failed", 3, budget=spent),
    ]
    return EvalResult("putnambench", mode, "lean", "org/prover-7b", 3, False, problems,
                      Path("out"), settings)  # fmt: skip


def test_the_entry_has_the_leaderboards_keys_the_count_and_a_note_with_what_it_cost() -> None:
    entry = putnambench_entry(_result("whole", {"temperature": 0.6}))
    (model,) = entry
    fields = entry[model]
    assert model == "org/prover-7b"
    assert set(fields) == {
        "link",
        "open-data",
        "num-solved",
        "size",
        "condensed-compute-budget",
        "note",
    }
    assert fields["num-solved"] == {"lean-wsolution": 2}
    assert fields["condensed-compute-budget"] == "pass@3"
    note = fields["note"]
    assert note.startswith("pass@3 w/ T=0.6; whole mode, verified by lean")
    assert "solved: 1977 A3, 2023 B6." in note and "1962" not in note
    assert "18 proofs checked" in note and "450 tokens (300 in, 150 out)" in note
    assert "12 Lean calls" in note and "cost: $0.75" in note


def test_the_condensed_budget_says_rounds_and_search_size() -> None:
    refine = putnambench_entry(_result("refine", {"refine_rounds": 2}))
    assert refine["org/prover-7b"]["condensed-compute-budget"] == "pass@3x3"
    tactic = _result("tactic", {"num_samples": 8, "max_expansions": 100})
    assert putnambench_entry(tactic)["org/prover-7b"]["condensed-compute-budget"] == "pass@1x8x100"
