"""What best-first and whole-proof search share (``search_run``): the check of a generator's
answer, the counted re-check and the generator clock behave the same in both modes."""

from __future__ import annotations

import time

import pytest

from lean_dojo_v2.interaction import EnvCrashedError
from lean_dojo_v2.models.generator import Candidate
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig, WholeProofSearch
from lean_dojo_v2.prover.search_run import checked_candidates

from ._search_helpers import FINISHED, Graph, GraphEnv, ScriptedGenerator, theorem

GRAPH = Graph("R", {"R": {"t": "A"}, "A": {"a": FINISHED}})
THM = theorem()


class Proofs:
    """A whole-proof generator with a fixed answer (and an optional delay)."""

    def __init__(self, proofs: list[tuple[str, float]], delay: float = 0.0) -> None:
        self.proofs, self.delay = proofs, delay

    def for_theorem(self, theorem):
        return self

    def generate(self, states, num_samples, *, prefix=None):
        return [[] for _ in states]

    def generate_proofs(self, states, num_samples):
        time.sleep(self.delay)
        return [[Candidate(p, lp) for p, lp in self.proofs] for _ in states]


class CrashingVerify(GraphEnv):
    async def verify(self, theorem, proof):
        raise EnvCrashedError("verify died")


def test_checked_candidates_rejects_malformed_answers():
    with pytest.raises(ValueError, match="returned 1 lists for 2 states"):
        checked_candidates([[]], 2, 4, "generate()")
    with pytest.raises(ValueError, match="entry 0 is a str"):
        checked_candidates(["simp"], 1, 4, "generate()")
    with pytest.raises(ValueError, match=r"entry 1 holds \('t', -1.0\)"):
        checked_candidates([[], [("t", -1.0)]], 2, 4, "generate()")
    with pytest.raises(ValueError, match="expected Candidate"):
        checked_candidates([[Candidate("t", True)]], 1, 4, "generate()")


def test_checked_candidates_cleans_each_list_the_search_way():
    raw = [
        [Candidate(" simp ", -2.0), Candidate("simp", -1.0), Candidate("exact sorry", -3.0)],
        [Candidate("", 0.0), Candidate("rfl", float("nan")), Candidate("ring", float("-inf"))],
    ]
    out = checked_candidates(raw, 2, 8, "generate()")
    assert out == [
        [Candidate("simp", -1.0), Candidate("exact sorry", -3.0)],
        [Candidate("ring", float("-inf"))],
    ]
    assert checked_candidates(raw, 2, 1, "generate()")[0] == [Candidate("simp", -1.0)]


def test_both_modes_count_a_crashed_recheck_the_same_way():
    cfg = SearchConfig(verify_retries=1)
    envs = [CrashingVerify(GRAPH, name="e0"), CrashingVerify(GRAPH, name="e1")]
    best_first = BestFirstSearch(
        ScriptedGenerator(GRAPH, {"R": [("t", -1.0)], "A": [("a", -1.0)]}), cfg
    )
    bf = best_first.search(envs, THM)
    wp = WholeProofSearch(Proofs([("t\na", -1.0)]), SearchConfig(whole_proof=True)).search(
        envs, THM
    )
    for result in (bf, wp):
        assert result.status == "failed" and result.proof is None
        s = result.stats
        assert (s["verify_calls"], s["verify_errors"], s["env_crashes"]) == (2, 2, 2)
        assert s["crash_messages"] == ["EnvCrashedError: verify died"] * 2
        assert s["verify_rejected"] == 0 and s["rejections"] == []


@pytest.mark.parametrize("whole_proof", [False, True])
def test_an_abandoned_generator_call_counts_as_generator_time_in_both_modes(whole_proof):
    class Slow(ScriptedGenerator):
        def generate(self, states, num_samples, *, prefix=None):
            time.sleep(0.5)
            return super().generate(states, num_samples, prefix=prefix)

    cfg = SearchConfig(timeout=0.2, whole_proof=whole_proof)
    if whole_proof:
        search = WholeProofSearch(Proofs([("t\na", -1.0)], delay=0.5), cfg)
    else:
        search = BestFirstSearch(Slow(GRAPH, {"R": [("t", -1.0)]}), cfg)
    result = search.search(GraphEnv(GRAPH), THM)
    assert result.status == "timeout"
    assert result.stats["stop_reason"] == "timeout_in_generator"
    assert result.stats["generator_calls"] == 0
    assert result.stats["generator_seconds"] >= 0.15  # the wait up to the deadline
