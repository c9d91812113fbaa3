"""Search on the bundled real data through ``ReplayEnv``, with a generator that proposes the
recorded tactic among wrong ones (tactics recorded for other states): it proves every theorem a
direct replay of the recorded proofs proves, and best-first needs fewer expansions than
upstream's random-choice DFS at the same budget."""

from __future__ import annotations

import pytest

from lean_dojo_v2.interaction import ReplayEnv
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig
from lean_dojo_v2.prover.baselines import RandomDFS

from ._search_helpers import RecordedTacticGenerator, direct_replay_proof, sample_theorems

pytestmark = pytest.mark.timeout(120)

BUDGET = 100


@pytest.fixture(scope="module")
def theorems():
    return list(sample_theorems())


@pytest.fixture(scope="module")
def env(theorems):
    return ReplayEnv.from_theorems(theorems)


@pytest.fixture(scope="module")
def best_first_results(theorems, env):
    search = BestFirstSearch(
        RecordedTacticGenerator(theorems), SearchConfig(max_expansions=BUDGET, num_samples=8)
    )
    return {t.full_name: search.search(env, t) for t in theorems}


def test_search_proves_every_theorem_a_direct_replay_of_the_recorded_proof_proves(
    theorems, env, best_first_results
):
    replayable = {t.full_name for t in theorems if direct_replay_proof(env, t) is not None}
    proved = {name for name, r in best_first_results.items() if r.status == "proved"}
    print(f"\nreplayable {len(replayable)}/{len(theorems)}, proved by search {len(proved)}")
    assert len(replayable) >= 40  # the bundled sample: 48 of 51
    assert replayable <= proved, sorted(replayable - proved)
    for name in proved:
        r = best_first_results[name]
        assert r.checked_by == "replay" and r.backend == "replay" and r.proof
        thm = next(t for t in theorems if t.full_name == name)
        assert env.verify(thm, r.proof_text).ok  # the returned proof re-checks


def test_best_first_beats_random_dfs_on_expansions_at_equal_budget(
    theorems, env, best_first_results
):
    dfs = RandomDFS(RecordedTacticGenerator(theorems), max_steps=BUDGET, num_samples=8, seed=0)
    dfs_results = {t.full_name: dfs.search(env, t) for t in theorems}

    def totals(results):
        proved = sum(r.status == "proved" for r in results.values())
        # a theorem not proved used the whole budget
        spent = sum(r.expansions if r.status == "proved" else BUDGET for r in results.values())
        return proved, spent

    bf_proved, bf_spent = totals(best_first_results)
    dfs_proved, dfs_spent = totals(dfs_results)
    bf_tactics = sum(r.stats["tactic_calls"] for r in best_first_results.values())
    dfs_tactics = sum(r.stats["tactic_calls"] for r in dfs_results.values())
    print(
        f"\nbest-first: {bf_proved} proved, {bf_spent} expansions ({bf_tactics} tactic calls); "
        f"random DFS: {dfs_proved} proved, {dfs_spent} expansions ({dfs_tactics} tactic calls); "
        f"budget {BUDGET} expansions per theorem"
    )
    assert bf_proved >= dfs_proved
    assert bf_spent < dfs_spent
    both = [
        n
        for n in theorems
        if best_first_results[n.full_name].proved and dfs_results[n.full_name].proved
    ]
    bf_both = sum(best_first_results[t.full_name].expansions for t in both)
    dfs_both = sum(dfs_results[t.full_name].expansions for t in both)
    print(f"on the {len(both)} both prove: best-first {bf_both}, random DFS {dfs_both} expansions")
    assert bf_both <= dfs_both
