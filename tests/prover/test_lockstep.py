"""Several searches at once in this process (``prove_theorems(..., backend="inline", workers=N)``):
the shared generator answers their calls together, one batched call per round; the results are
those of one search after another (a deterministic generator), rounds are deterministic (a
seeded random generator gives the same proofs twice, whatever the threads' timing), and what the
batched calls used is shared among the searches.

Real data: the bundled LeanDojo sample through ``ReplayEnv`` (the theorems of ``conftest.py``) and
the recorded-tactics oracle of ``pipeline_oracle.py``."""

from __future__ import annotations

import random
import threading

from lean_dojo_v2.models.generator import Candidate, GeneratorUsage, TacticGenerator
from lean_dojo_v2.prover.lockstep import Lockstep
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems

from .pipeline_oracle import OracleGenerator
from .test_parallel import CONFIG


class Counting(TacticGenerator):
    """The oracle's tactics, with a random wrong one mixed in when seeded; counts its calls and
    the states each one asked for, and what it "used" (a token per state)."""

    def __init__(self, data: str, seed: int | None = None) -> None:
        self.oracle = OracleGenerator(data)
        self.rng = random.Random(seed) if seed is not None else None
        self.calls: list[int] = []
        self.threads: set[int] = set()
        self.used = GeneratorUsage()

    def usage(self) -> GeneratorUsage:
        return self.used

    def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
        self.calls.append(len(states))
        self.threads.add(threading.get_ident())
        self.used = self.used + GeneratorUsage(1, len(states), 2 * len(states), 0.5, 0.0)
        out = self.oracle.generate(states, num_samples, prefix=prefix)
        if self.rng is None:
            return out
        # A draw per state, in the order the call lists them: the round's order decides them.
        return [
            [Candidate(f"exact wrong_{self.rng.randrange(10**6)}", -9.0), *cands][:num_samples]
            if self.rng.random() < 0.5
            else cands
            for cands in out
        ]


def _run(theorems: list, data: str, generator: TacticGenerator, workers: int) -> list:
    return prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        lambda: generator,
        CONFIG,
        workers=workers,
        backend="inline",
        progress=False,
    )


def _summary(results: list) -> list[tuple[str, str, list[str] | None]]:
    return [(r.theorem, r.status, r.proof) for r in results]


def test_searches_at_once_give_one_after_anothers_results_in_fewer_calls(
    theorems: list, data: str
) -> None:
    one, four = Counting(data), Counting(data)
    alone = _run(theorems, data, one, workers=1)
    together = _run(theorems, data, four, workers=4)
    assert _summary(together) == _summary(alone)
    assert any(r.status == "proved" for r in together)
    assert sum(four.calls) == sum(one.calls)  # the same states asked for ...
    assert len(four.calls) < len(one.calls) and max(four.calls) > max(one.calls)  # ... together
    # what the batched calls used is shared: the searches' counts add up to the generator's
    assert sum(r.stats["tokens_out"] for r in together) == four.used.tokens_out


def test_rounds_are_deterministic_whatever_the_threads_timing(theorems: list, data: str) -> None:
    runs = [_summary(_run(theorems, data, Counting(data, seed=7), workers=3)) for _ in range(2)]
    assert runs[0] == runs[1]


def test_a_generator_error_reaches_each_search_of_the_round(theorems: list, data: str) -> None:
    class Failing(Counting):
        def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
            raise RuntimeError("the model ran out of memory")

    results = _run(theorems[:4], data, Failing(data), workers=2)
    assert [r.status for r in results] == ["error"] * 4
    assert all("ran out of memory" in (r.error or "") for r in results)


def test_a_slot_between_theorems_holds_the_round_and_a_closed_one_does_not() -> None:
    class Echo(TacticGenerator):
        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
            self.calls.append(list(states))
            return [[Candidate(s, 0.0)] for s in states]

    echo = Echo()
    lockstep = Lockstep(echo)
    a, b = lockstep.slot(), lockstep.slot()
    a.begin(1)
    answer: list[object] = []
    asking = threading.Thread(target=lambda: answer.append(a.generate(["x"], 1)))
    asking.start()
    asking.join(0.2)
    assert asking.is_alive() and echo.calls == []  # b has not begun: the round waits for it
    b.close()  # b has nothing to prove
    asking.join(5)
    assert echo.calls == [["x"]] and answer == [[[Candidate("x", 0.0)]]]
