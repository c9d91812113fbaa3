"""Whole-proof mode: sampled whole proofs are re-checked with ``verify`` one by one and the first
accepted one is the result (replay on the bundled sample; the fake Lean frontend on miniF2F)."""

from __future__ import annotations

import pytest

from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.interaction import PantographEnv, ReplayEnv
from lean_dojo_v2.models.generator import Candidate
from lean_dojo_v2.prover import SearchConfig, WholeProofSearch, proof_text, search_theorem

from ._search_helpers import direct_replay_proof, sample_theorems
from .test_search_pantograph import fake_config, minif2f

pytestmark = pytest.mark.timeout(120)


class RecordedProofs:
    """``generate_proofs``: per request, the next list of whole proofs of ``rounds``."""

    def __init__(self, rounds: list[list[str]]) -> None:
        self.rounds = rounds
        self.requests: list[tuple[list[str], int]] = []

    def for_theorem(self, theorem):
        return self

    def generate(self, states, num_samples, *, prefix=None):  # a TacticGenerator too
        return [[] for _ in states]

    def generate_proofs(self, states, num_samples):
        self.requests.append((list(states), num_samples))
        proofs = self.rounds[min(len(self.requests) - 1, len(self.rounds) - 1)]
        return [[Candidate(p, -float(i)) for i, p in enumerate(proofs[:num_samples])]]


@pytest.fixture(scope="module")
def replay():
    theorems = list(sample_theorems())
    env = ReplayEnv.from_theorems(theorems)
    proofs = {t.full_name: direct_replay_proof(env, t) for t in theorems}
    provable = [t for t in theorems if proofs[t.full_name]]
    return env, provable, proofs


def test_whole_proof_search_stops_at_the_first_proof_verify_accepts(replay):
    env, provable, proofs = replay
    thm, other1, other2 = provable[0], provable[1], provable[2]
    right = proof_text(proofs[thm.full_name])
    wrong = [proof_text(proofs[other1.full_name]), proof_text(proofs[other2.full_name])]
    gen = RecordedProofs([[*wrong, right, "by\n  " + right]])
    result = WholeProofSearch(gen, SearchConfig(whole_proof=True, num_samples=4)).search(env, thm)
    assert result.status == "proved" and result.checked_by == "replay"
    assert proof_text(result.proof) == right
    assert result.stats["verify_calls"] == 3 and result.stats["verify_rejected"] == 2
    assert result.expansions == 1 and gen.requests[0][1] == 4
    assert gen.requests[0][0] == [env.start(thm).text]  # asked with the first state's text


def test_whole_proof_search_tries_more_rounds_and_never_rechecks_a_proof(replay):
    env, provable, proofs = replay
    thm, other = provable[3], provable[4]
    wrong = proof_text(proofs[other.full_name])
    right = proof_text(proofs[thm.full_name])
    gen = RecordedProofs([[wrong], [wrong, right]])
    cfg = SearchConfig(whole_proof=True, whole_proof_rounds=3)
    result = search_theorem(gen, env, thm, cfg)  # dispatches on config.whole_proof
    assert result.status == "proved" and result.expansions == 2
    assert result.stats["verify_calls"] == 2  # the wrong proof was checked once


def test_whole_proof_search_with_only_wrong_proofs_fails(replay):
    env, provable, proofs = replay
    thm = provable[5]
    gen = RecordedProofs([[proof_text(proofs[provable[6].full_name]), "simp", "exact foo"]])
    envs = [env, ReplayEnv(env.table)]
    result = WholeProofSearch(gen, SearchConfig(whole_proof_rounds=2)).search(envs, thm)
    assert result.status == "failed" and result.proof is None and result.checked_by is None
    assert result.stats["verify_rejected"] == 3 and result.expansions == 2


def test_whole_proof_generator_errors_and_missing_generate_proofs(replay):
    env, provable, _ = replay

    class Broken(RecordedProofs):
        def generate_proofs(self, states, num_samples):
            raise ConnectionError("endpoint down")

    result = WholeProofSearch(Broken([])).search(env, provable[0])
    assert result.status == "error" and "endpoint down" in result.error

    class TacticOnly:
        def generate(self, states, num_samples, *, prefix=None):
            return [[] for _ in states]

    with pytest.raises(ConfigError, match="generate_proofs"):
        WholeProofSearch(TacticOnly())


def test_whole_proof_search_checked_by_the_lean_frontend():
    thm = minif2f("mathd_algebra_478")
    right = "\n".join(t.tactic for t in thm.traced_tactics)
    gen = RecordedProofs([["norm_num", "sorry", right]])
    with PantographEnv(fake_config()) as env:
        result = WholeProofSearch(gen, SearchConfig(whole_proof=True)).search(env, thm)
    assert result.status == "proved" and result.checked_by == "lean"
    assert result.proof == [t.tactic for t in thm.traced_tactics]
    assert result.stats["verify_rejected"] == 2
