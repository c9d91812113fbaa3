"""The verdict cache: a repeated check costs no Lean call (the calls are counted), the verdicts
survive a re-run (on disk, also through worker processes), and the key is the verifier with its
Lean version, the header, the statement and the proof."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
from pathlib import Path

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.evaluation.benchmarks import load_benchmark
from lean_dojo_v2.evaluation.verdict_cache import (
    CachedEnv,
    CachedEnvFactory,
    VerdictCache,
    cached,
    verifier_id,
)
from lean_dojo_v2.interaction import ProofEnv, Verdict
from lean_dojo_v2.interaction.messages import LeanMessage
from lean_dojo_v2.prover.verify import verify_proof

PROBLEM = load_benchmark("minif2f-test").problem("mathd_algebra_478")
THEOREM = PROBLEM.to_theorem()


class CountingEnv(ProofEnv):
    """A verifier that counts the calls that reach it ("Lean calls"); accepts ``norm_num``."""

    backend = "pantograph"
    calls = 0  # across instances: a re-run builds new environments

    def __init__(self, answer: str = "norm_num") -> None:
        self.answer = answer

    def start(self, theorem):
        raise NotImplementedError

    def run_tactic(self, state, tactic, timeout=None):
        raise NotImplementedError

    def verify(self, theorem, proof):
        type(self).calls += 1
        if proof.strip() == self.answer:
            return Verdict(True, self.backend, "lean", axioms=("propext",))
        message = LeanMessage("error", 1, 0, "linarith failed", "x : ℕ\n⊢ False")
        return Verdict(False, self.backend, "lean", ("1:0: error: linarith failed",),
                       lean_messages=(message,))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class CountingFactory:
    """A picklable factory, as the pipeline's workers need one."""

    verifier_id: str = "lean:4.15.0"

    def __call__(self) -> CountingEnv:
        return CountingEnv()


def _verify(factory, theorem, proof) -> Verdict:
    verdict = verify_proof(factory(), theorem, proof)
    assert verdict is not None
    return verdict


def _calls() -> int:
    return CountingEnv.calls


def test_a_repeated_check_costs_no_lean_call(tmp_path):
    start = _calls()
    factory = cached(CountingFactory(), VerdictCache(tmp_path / "v.sqlite"))
    first = _verify(factory, THEOREM, "norm_num")
    assert first.ok and not first.cached and _calls() == start + 1
    again = _verify(factory, THEOREM, "norm_num")
    assert again.ok and again.cached and _calls() == start + 1
    # the same proof up to white space is the same proof
    assert _verify(factory, THEOREM, "by\n    norm_num   \n").cached
    # a wrong proof: asked once, then served, with Lean's messages
    wrong = _verify(factory, THEOREM, "linarith")
    served = _verify(factory, THEOREM, "linarith")
    assert not served.ok and served.cached and _calls() == start + 2
    assert served.first_error == wrong.first_error
    assert served.first_error.goal == "x : ℕ\n⊢ False"
    assert factory.cache.hits == 3 and factory.cache.misses == 2


def test_verdicts_survive_a_re_run(tmp_path):
    path = tmp_path / "cache" / "verdicts.sqlite"
    first = cached(CountingFactory(), VerdictCache(path))
    _verify(first, THEOREM, "norm_num")
    _verify(first, THEOREM, "linarith")
    first.cache.close()
    start = _calls()
    rerun = cached(CountingFactory(), VerdictCache(path))  # a new process would do the same
    assert len(rerun.cache) == 2
    assert _verify(rerun, THEOREM, "norm_num").cached
    assert not _verify(rerun, THEOREM, "linarith").ok
    assert _calls() == start


def test_the_cache_travels_to_worker_processes(tmp_path):
    path = tmp_path / "v.sqlite"
    factory = cached(CountingFactory(), VerdictCache(path))
    _verify(factory, THEOREM, "norm_num")
    copy = pickle.loads(pickle.dumps(factory))  # what a worker process receives
    start = _calls()
    assert _verify(copy, THEOREM, "norm_num").cached and _calls() == start
    _verify(copy, THEOREM, "simp")  # the worker's verdict lands in the shared file
    assert len(VerdictCache(path)) == 2


def test_the_key_is_lean_version_header_statement_and_proof(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite")
    _verify(cached(CountingFactory(), cache), THEOREM, "norm_num")
    start = _calls()
    # another Lean version
    _verify(cached(CountingFactory("lean:4.9.0"), cache), THEOREM, "norm_num")
    assert _calls() == start + 1
    # another header
    other = dataclasses.replace(PROBLEM, header="import Mathlib\n\n").to_theorem()
    _verify(cached(CountingFactory(), cache), other, "norm_num")
    assert _calls() == start + 2
    # another statement
    changed = dataclasses.replace(
        PROBLEM, formal_statement=PROBLEM.formal_statement.replace("v = 65", "v = 66")
    ).to_theorem()
    _verify(cached(CountingFactory(), cache), changed, "norm_num")
    assert _calls() == start + 3
    # another proof
    _verify(cached(CountingFactory(), cache), THEOREM, "simp")
    assert _calls() == start + 4
    # white space in the statement or the header changes nothing
    spaced = dataclasses.replace(
        PROBLEM,
        header=PROBLEM.header.replace("\n\n", "\n"),
        formal_statement=PROBLEM.formal_statement.replace("\n    ", " "),
    ).to_theorem()
    assert _verify(cached(CountingFactory(), cache), spaced, "norm_num").cached
    assert _calls() == start + 4


def test_a_repository_theorem_is_keyed_by_where_it_lives():
    cache = VerdictCache()  # in memory
    theorems = load_benchmark("leandojo", data=sample_dataset_path(), split="all").problems
    a, b = theorems[0].to_theorem(), theorems[1].to_theorem()
    key = VerdictCache.key
    assert key("lean", a, "simp") != key("lean", b, "simp")
    assert key("lean", a, "simp") == key("lean", a, "  simp\n")
    cache.put("lean", a, "simp", Verdict(True, "pantograph", "lean"))
    assert cache.get("lean", a, "simp") is not None and cache.get("lean", b, "simp") is None


def test_a_timeout_is_not_kept():
    cache = VerdictCache()
    verdict = Verdict(False, "pantograph", "lean", ("timeout after 300.0 s",))
    assert cache.put("lean", THEOREM, "nlinarith", verdict) is False
    assert cache.get("lean", THEOREM, "nlinarith") is None and len(cache) == 0


def test_each_verifier_keeps_its_own_verdicts():
    assert verifier_id(CountingFactory()) == "lean:4.15.0"
    assert verifier_id(cached(CountingFactory(), VerdictCache())) == "lean:4.15.0"

    @dataclasses.dataclass(frozen=True)
    class Wrapper:  # the budget's meter (MeteredEnvFactory) wraps a factory the same way
        make_env: object

    assert verifier_id(Wrapper(CountingFactory())) == "lean:4.15.0"
    assert verifier_id(CountingEnv()) == "pantograph"

    def my_factory():  # a factory of your own that says nothing: named by where it lives
        return CountingEnv()

    assert verifier_id(my_factory).endswith(
        "test_each_verifier_keeps_its_own_verdicts.<locals>.my_factory"
    )
    cache = VerdictCache()
    cache.put("recorded", THEOREM, "norm_num", Verdict(True, "recorded", "recorded"))
    assert cache.get("lean:4.15.0", THEOREM, "norm_num") is None


def test_other_calls_go_through_unchanged():
    factory = cached(CountingFactory(), VerdictCache())
    assert isinstance(factory, CachedEnvFactory) and factory.verifier_id == "lean:4.15.0"
    env = factory()
    assert isinstance(env, CachedEnv) and env.backend == "pantograph"
    try:
        asyncio.run(env.start(THEOREM))
    except NotImplementedError:
        pass
    else:  # pragma: no cover
        raise AssertionError("start() did not reach the environment")
    asyncio.run(env.close())


def test_verdicts_round_trip_through_dicts():
    message = LeanMessage("error", 3, 2, "unsolved goals\nx : ℕ\n⊢ x = x", "x : ℕ\n⊢ x = x", 3, 9)
    verdict = Verdict(False, "pantograph", "lean", ("3:2: error: …",), ("propext",), (message,))
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    assert Verdict.from_dict(Verdict(True, "recorded", "recorded").to_dict()).axioms is None


def test_the_default_cache_file_can_be_made(tmp_path: Path):
    cache = VerdictCache(tmp_path / "deep" / "dir" / "v.sqlite")
    cache.put("lean", THEOREM, "simp", Verdict(True, "pantograph", "lean"))
    assert (tmp_path / "deep" / "dir" / "v.sqlite").is_file()
