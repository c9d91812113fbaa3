"""A v1 prover runs unchanged: ``scripts/v1_best_first.py`` (a best-first prover written against
LeanDojo v1's API the way ReProver's ``prover/proof_search.py`` is) goes through
``python -m lean_dojo_v2.v1`` on the bundled sample's theorems and proves, with recorded tactics,
exactly the theorems our own ``BestFirstSearch`` proves with the same candidates; then the same
script against the fake Pantograph REPL, where a sorry, a Lean error, a timeout and a crash
reach it as v1's results and exceptions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data import Theorem as DataTheorem
from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.interaction import ReplayEnv
from lean_dojo_v2.models.generator import Candidate, TacticGenerator
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

from .conftest import MULTI_GOAL, SCRIPTS, candidate_table, fake_project, write_json

pytestmark = pytest.mark.timeout(180)
SCRIPT = SCRIPTS / "v1_best_first.py"


class TableGenerator(TacticGenerator):
    """The same "model" as the script's: candidates looked up by the state's first goal."""

    def __init__(self, table: dict[str, list[list]]) -> None:
        self.table = table

    def generate(self, states, num_samples, *, prefix=None):
        out = []
        for text in states:
            cands = [Candidate(t, lp) for t, lp in self.table.get(text.split("\n\n")[0], [])]
            out.append(sorted(cands, key=lambda c: -c.logprob)[:num_samples])
        return out


def run_v1_script(tmp_path: Path, theorems, candidates: dict, env: dict, *args: str) -> list:
    """Run the v1 script through ``python -m lean_dojo_v2.v1``; its per-theorem results."""
    data = write_json(tmp_path / "theorems.json", [t.to_dict() for t in theorems])
    cands = write_json(tmp_path / "candidates.json", candidates)
    out = tmp_path / "results.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_DOJO_V2_PANTOGRAPH")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lean_dojo_v2.v1",
            str(SCRIPT),
            str(data),
            str(cands),
            str(out),
            *args,
        ],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text("utf-8"))


def test_v1_prover_proves_what_best_first_search_proves(tmp_path: Path, sample_theorems) -> None:
    with_proofs = [t for t in sample_theorems if t.traced_tactics]
    table = candidate_table(with_proofs)
    results = run_v1_script(
        tmp_path,
        sample_theorems,
        {"by_goal": table},
        {"LEAN_DOJO_V2_V1_DATASET": str(sample_dataset_path())},
        "--timeout",
        "120",
    )
    by_name = {r["full_name"]: r for r in results}
    # Term-mode proofs have nothing to replay: DojoInitError, caught as ReProver catches it.
    assert {n for n, r in by_name.items() if "init_error" in r} == {
        t.full_name for t in sample_theorems if not t.traced_tactics
    }
    v1_proved = {n for n, r in by_name.items() if r.get("status") == "Proved"}

    search = BestFirstSearch(
        TableGenerator(table),
        SearchConfig(
            num_samples=max(len(c) for c in table.values()),
            max_expansions=10_000,
            timeout=120,
            frontier_batch=1,
        ),
    )
    env = ReplayEnv.from_dataset(sample_dataset_path())
    ours = {t.full_name: search.search(env, t) for t in with_proofs}
    ours_proved = {n for n, r in ours.items() if r.status == "proved"}

    assert v1_proved == ours_proved
    assert len(v1_proved) >= 45, sorted(set(by_name) - v1_proved)
    # Every v1 proof is a path of recorded tactics that replays to no goals.
    thms = {t.full_name: t for t in with_proofs}
    for name in v1_proved:
        proof = "\n".join(by_name[name]["proof"])
        assert env.verify(thms[name], proof).ok, name
        assert by_name[name]["init_state_id"] == 0


def test_same_script_against_the_fake_pantograph_repl(tmp_path: Path, proofs, fake_lean) -> None:
    chosen: list[DataTheorem] = [proofs[MULTI_GOAL]] + [
        t for n, t in sorted(proofs.items()) if n != MULTI_GOAL and len(t.traced_tactics) <= 3
    ][:3]
    table = candidate_table(list(proofs.values()))
    env = {
        "LEAN_DOJO_V2_PANTOGRAPH": os.environ["LEAN_DOJO_V2_PANTOGRAPH"],
        "LEAN_DOJO_V2_V1_PROJECT": str(fake_project(tmp_path, chosen)),
        "PATH": os.environ["PATH"],
    }
    # The recorded tactics: the theorems replayed proved above are proved here too.
    plain = run_v1_script(tmp_path, chosen, {"by_goal": table}, env, "--timeout", "30")
    assert [r["status"] for r in plain] == ["Proved"] * len(chosen)
    assert plain[0]["responses"]["TacticState"] >= 2  # the two-goal state, then one goal

    # Hostile candidates first: a sorry, an unknown lemma, then a tactic that outlives the
    # Dojo's timeout (ReProver loses the node being expanded and goes on).
    probes = {"by_goal": table, "everywhere": [["sorry", 1.0], ["exact no_such_lemma", 0.9]]}
    given_up = run_v1_script(tmp_path, chosen[:1], probes, env, "--timeout", "30")[0]
    assert given_up["status"] == "Proved"
    assert given_up["responses"]["ProofGivenUp"] >= 1 and given_up["responses"]["LeanError"] >= 1
    probes["everywhere"].append(["fake_sleep 20000", 2.0])
    timed_out = run_v1_script(tmp_path, chosen[:1], probes, env, "--timeout", "2")[0]
    assert timed_out["timeouts"] == 1 and timed_out["status"] == "Open"
    probes["everywhere"] = [["fake_crash", 3.0]]
    crashed = run_v1_script(tmp_path, chosen[:1], probes, env, "--timeout", "30")[0]
    assert "the Lean process died" in crashed["crashed"] and crashed["status"] == "Open"
