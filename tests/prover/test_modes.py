"""The three proving modes through the one search code: ``whole`` records exactly n samples
(duplicates and empty answers included) with what each cost; ``refine`` sends Lean's first error
back to the model (against the fake Pantograph REPL, whose messages follow Lean's format) and
stops after R rounds; ``tactic`` is ``prove``'s best-first search, with one attempt and, when
asked, its tree. Theorems: the bundled LeanDojo sample (replay) and miniF2F (the fake REPL)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.interaction import PantographEnv, ReplayEnv
from lean_dojo_v2.interaction.standalone import standalone_theorem
from lean_dojo_v2.models.generator import Completion, GeneratorUsage, TacticGenerator, UsageMeter
from lean_dojo_v2.models.proof_prompt import ProofPrompt, ProofRequest, default_proof_prompt
from lean_dojo_v2.prover import SearchConfig, SearchResult, proof_text, search_theorem
from lean_dojo_v2.prover.attempt import Attempt, TreeNode
from lean_dojo_v2.prover.best_first import BestFirstSearch
from lean_dojo_v2.prover.parallel import ReplayEnvSpec
from lean_dojo_v2.prover.pipeline import ProofJob, ProveRun
from lean_dojo_v2.prover.refine import RefineSearch
from lean_dojo_v2.prover.search import search_class
from lean_dojo_v2.prover.whole_proof import NO_PROOF, NOT_CHECKED, WholeProofSearch

from ._search_helpers import direct_replay_proof, sample_theorems
from .pipeline_oracle import OracleGenerator, OracleSpec
from .test_search_pantograph import fake_config, minif2f

pytestmark = pytest.mark.timeout(180)

Answer = Callable[[ProofRequest, int], str]


class Sampler(TacticGenerator):
    """A whole-proof generator that answers by a script and records every request with the
    messages it would be sent as; it counts 5 prompt tokens a request and 1 token a character."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.calls: list[list[ProofRequest]] = []
        self.sent: list[list[dict[str, str]]] = []
        self.meter = UsageMeter()

    def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
        return [[] for _ in states]

    def usage(self) -> GeneratorUsage:
        return self.meter.total()

    def sample_proofs(
        self,
        requests: Sequence[ProofRequest],
        num_samples: int,
        *,
        prompt: ProofPrompt | None = None,
    ) -> list[list[Completion]]:
        self.calls.append(list(requests))
        out = []
        for r in requests:
            self.sent.append((prompt or default_proof_prompt(r.task)).messages(r))
            texts = [self.answer(r, k) for k in range(num_samples)]
            self.meter.add(tokens_in=5, tokens_out=sum(len(t) for t in texts))
            out.append([Completion(t, -1.0) for t in texts])
        return out


@pytest.fixture(scope="module")
def replay():
    theorems = list(sample_theorems())
    env = ReplayEnv.from_theorems(theorems)
    proofs = {t.full_name: direct_replay_proof(env, t) for t in theorems}
    provable = [t for t in theorems if proofs[t.full_name]]
    return env, provable, {k: proof_text(v) for k, v in proofs.items() if v}


# --------------------------------------------------------------------------- the config


def test_mode_names_the_search_and_whole_proof_stays_an_alias():
    assert SearchConfig().search_mode == "tactic"
    assert SearchConfig(whole_proof=True).search_mode == "whole"
    assert SearchConfig(mode="refine").search_mode == "refine"
    assert SearchConfig(mode="whole", whole_proof=False).search_mode == "whole"
    assert search_class(SearchConfig()) is BestFirstSearch
    assert search_class(SearchConfig(whole_proof=True)) is WholeProofSearch
    assert search_class(SearchConfig(mode="refine")) is RefineSearch
    with pytest.raises(ConfigError, match="must be one of tactic, whole, refine"):
        SearchConfig(mode="wole")
    with pytest.raises(ConfigError, match="contradicts mode='tactic'"):
        SearchConfig(mode="tactic", whole_proof=True)
    with pytest.raises(ConfigError, match="refine_rounds must be a whole number >= 0"):
        SearchConfig(refine_rounds=-1)
    with pytest.raises(ConfigError, match="early_stop must be true or false"):
        SearchConfig(early_stop="no")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- whole


def test_whole_mode_records_exactly_n_samples_each_checked_once(replay):
    env, provable, proofs = replay
    thm, other = provable[0], provable[1]
    right, wrong = proofs[thm.full_name], proofs[other.full_name]
    fenced = f"Here it is:\n```lean4\n{right}\n```"
    answers = [wrong, right, right, "", "intro h\nsorry", fenced]
    gen = Sampler(lambda r, k: answers[k])
    cfg = SearchConfig(mode="whole", num_samples=6, early_stop=False)
    result = search_theorem(gen, env, thm, cfg)
    assert result.status == "proved" and proof_text(result.proof or []) == right
    a = result.attempts
    assert [x.index for x in a] == [0, 1, 2, 3, 4, 5] and {x.round for x in a} == {0}
    assert [x.ok for x in a] == [False, True, True, False, False, True]
    assert [x.cached for x in a] == [False, False, True, False, False, True]
    assert [x.lean_calls for x in a[1:]] == [1, 0, 0, 0, 0] and a[0].lean_calls >= 1
    assert a[3].messages == a[4].messages == [NO_PROOF] and a[3].checked_by == ""
    assert a[1].checked_by == "replay" and a[0].messages  # the verdict's reason
    assert result.stats["verify_calls"] == 2 and result.stats["attempts"] == 6
    # the call's usage is shared out: prompt tokens evenly, and every second of it
    used = gen.usage()
    assert sum(x.tokens_in for x in a) == used.tokens_in == 5
    assert sum(x.tokens_out for x in a) == used.tokens_out
    seconds = sum(x.generator_seconds for x in a)  # stats round to the microsecond
    assert seconds == pytest.approx(result.stats["generator_seconds"], abs=1e-6)
    assert len(gen.calls) == 1 and result.expansions == 1


def test_whole_mode_with_early_stop_ends_at_the_first_accepted_proof(replay):
    env, provable, proofs = replay
    thm = provable[2]
    answers = [proofs[provable[3].full_name], proofs[thm.full_name], proofs[provable[4].full_name]]
    gen = Sampler(lambda r, k: answers[k])
    result = search_theorem(gen, env, thm, SearchConfig(mode="whole", num_samples=3))
    assert result.status == "proved" and result.stats["verify_calls"] == 2
    assert [x.ok for x in result.attempts] == [False, True, False]
    assert result.attempts[2].messages == [NOT_CHECKED] and result.attempts[2].checked_by == ""


def test_whole_mode_numbers_samples_across_requests(replay):
    env, provable, proofs = replay
    thm = provable[5]
    gen = Sampler(lambda r, k: proofs[provable[6].full_name] if k else "simp")
    cfg = SearchConfig(mode="whole", num_samples=3, whole_proof_rounds=2, early_stop=False)
    result = search_theorem(gen, env, thm, cfg)
    assert result.status == "failed" and result.expansions == 2 and len(gen.calls) == 2
    assert [x.index for x in result.attempts] == list(range(6))
    assert [x.cached for x in result.attempts] == [False, False, True, True, True, True]


# --------------------------------------------------------------------------- refine

HEADER = (
    "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\n"
    "open BigOperators Real Nat Topology Rat\n\n"
)


def minif2f_problem(name: str):
    """The miniF2F statement as a benchmark poses it (header + statement), and its proof."""
    thm = minif2f(name)
    statement = "theorem " + (thm.theorem_statement or "")
    problem = standalone_theorem(name, HEADER, statement)
    return problem, "\n".join(t.tactic for t in thm.traced_tactics)


def test_refine_sends_leans_error_back_and_stops_at_success():
    problem, right = minif2f_problem("mathd_algebra_478")

    def answer(r: ProofRequest, k: int) -> str:
        if not r.failed:
            return right if k == 0 else "```lean4\nnorm_num\n```"
        return right  # a chain that failed is answered with the proof

    gen = Sampler(answer)
    cfg = SearchConfig(mode="refine", num_samples=2, refine_rounds=3, early_stop=False)
    with PantographEnv(fake_config()) as env:
        result = search_theorem(gen, env, problem, cfg)
    assert result.status == "proved" and result.checked_by == "lean"
    got = [(x.index, x.round, x.ok, x.cached) for x in result.attempts]
    assert got == [(0, 0, True, False), (1, 0, False, False), (1, 1, True, True)]
    assert [len(c) for c in gen.calls] == [1, 1]  # round 1 asks only for the failed chain
    (refined,) = gen.calls[1]
    (failed,) = refined.failed
    assert failed.proof == "norm_num" and failed.feedback.line == 1
    assert "unknown tactic" in failed.feedback.message and "⊢ v = 65" in failed.feedback.goal
    prompt = gen.sent[-1][-1]["content"]
    assert "theorem mathd_algebra_478" in prompt and "  norm_num\n```" in prompt
    assert "at line 1, column 0 of the proof:\nunknown tactic" in prompt
    assert "The goal there:\nb h v : ℝ" in prompt
    assert result.attempts[1].messages[0].startswith("1:0: error: unknown tactic")
    assert result.stats["mode"] == "refine" and result.stats["refine_rounds"] == 1


def test_refine_stops_after_r_rounds():
    problem, _ = minif2f_problem("mathd_algebra_478")
    wrong = ["norm_num", "linarith", "simp", "ring"]
    gen = Sampler(lambda r, k: wrong[len(r.failed)])
    cfg = SearchConfig(mode="refine", num_samples=1, refine_rounds=2)
    with PantographEnv(fake_config()) as env:
        result = search_theorem(gen, env, problem, cfg)
    assert result.status == "failed" and result.stats["stop_reason"] == "rounds"
    assert len(gen.calls) == 3 and result.expansions == 3  # the first proof and R = 2 rounds
    assert [(x.index, x.round, x.ok) for x in result.attempts] == [
        (0, 0, False),
        (0, 1, False),
        (0, 2, False),
    ]
    assert all(x.lean_calls >= 1 and x.checked_by == "lean" for x in result.attempts)
    # every round sees the error of the proof before it
    assert [c[0].failed[-1].proof for c in gen.calls[1:]] == ["norm_num", "linarith"]
    assert "linarith" in gen.sent[2][-1]["content"]


def test_refine_needs_a_generator_that_samples_answers(replay):
    with pytest.raises(ConfigError, match="refinement needs a generator with sample_proofs"):
        RefineSearch(OracleGenerator(str(sample_dataset_path())))


# --------------------------------------------------------------------------- tactic


def test_tactic_mode_records_one_attempt_and_its_tree(replay):
    env, provable, _ = replay
    thm = provable[0]
    gen = OracleGenerator(str(sample_dataset_path()))
    cfg = SearchConfig(mode="tactic", num_samples=4, max_expansions=30, record_tree=True)
    result = search_theorem(gen, env, thm, cfg)
    assert result.status == "proved"
    (attempt,) = result.attempts
    assert attempt.ok and attempt.index == 0 and attempt.round == 0
    assert attempt.proof == proof_text(result.proof or []) and attempt.checked_by == "replay"
    stats = result.stats
    assert (
        attempt.lean_calls == stats["start_calls"] + stats["tactic_calls"] + stats["verify_calls"]
    )
    tree = result.tree or []
    assert tree[0].parent is None and tree[0].tactic is None and tree[0].proved
    assert len(tree) == stats["edges"] + 1
    path = [n.tactic for n in tree if n.proved and n.parent is not None]
    assert path == result.proof
    assert tree[[n.tactic for n in tree].index(path[-1])].outcome == "proof"
    assert any(n.outcome.startswith("error:") for n in tree)  # the oracle's wrong tactics
    for node in tree[1:]:
        assert 0 <= node.parent < node.id  # every node hangs under one drawn before it
    back = SearchResult.from_dict(json.loads(json.dumps(result.to_dict(), allow_nan=False)))
    assert back.attempts == result.attempts and back.tree == result.tree
    assert BestFirstSearch(gen, SearchConfig()).search(env, thm).tree is None  # not asked


def test_tactic_mode_proves_what_prove_proves_at_the_same_budget():
    data = str(sample_dataset_path())
    theorems = [t for t in load_theorems(data) if t.traced_tactics][:12]
    budget = dict(num_samples=4, max_expansions=20, timeout=60)
    proved = {}
    for cfg in (SearchConfig(**budget), SearchConfig(mode="tactic", record_tree=True, **budget)):
        run = ProveRun(OracleSpec(data), cfg, parallel="inline", progress=False)
        report = run.run([ProofJob(theorems, ReplayEnvSpec(data))])
        proved[cfg.mode] = {r.theorem for r in report.results if r.proved}
        assert all(len(r.attempts) == 1 for r in report.results)
    assert proved[None] == proved["tactic"] and proved[None]


def test_attempt_and_tree_node_round_trip_through_json():
    a = Attempt(3, 2, "simp", False, "lean", ["1:0: error: simp made no progress"], 7, 9,
                0.5, 0.25, 2, 0.125, False, None)  # fmt: skip
    assert Attempt.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    n = TreeNode(4, 1, "⊢ True", "trivial", float("-inf"), "proof", None, True)
    back = TreeNode.from_dict(json.loads(json.dumps(n.to_dict(), allow_nan=False)))
    assert back.score == 0.0 and back.proved and back.goal == "⊢ True"  # -inf is written null
