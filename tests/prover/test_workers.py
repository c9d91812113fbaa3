"""The pieces every parallel backend shares (``prover/workers.py``): the worker body, the task
queue that retries a theorem whose worker died, and the collector that keeps input order.

Real theorems of the bundled sample; the worker proves through ``ReplayEnv`` with the oracle
generator of ``pipeline_oracle.py``."""

from __future__ import annotations

from typing import Any

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.prover.parallel import ReplayEnvSpec
from lean_dojo_v2.prover.search import SearchConfig
from lean_dojo_v2.prover.workers import (
    ProofWorker,
    ResultCollector,
    TaskQueue,
    backend_of,
    error_result,
)

from .pipeline_oracle import OracleSpec

CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60, frontier_batch=2)


@pytest.fixture(scope="module")
def theorems() -> list:
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics][:3]


class _Env:
    backend = "fake"

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_worker_proves_with_its_env_and_closes_it(theorems: list) -> None:
    data = str(sample_dataset_path())
    worker = ProofWorker(ReplayEnvSpec(data), OracleSpec(data), CONFIG)
    assert worker.backend() == "replay"
    result = worker.prove(theorems[0])
    assert result.theorem == theorems[0].full_name
    assert result.status == "proved" and result.checked_by == "replay"
    worker.close()


def test_search_that_raises_becomes_an_error_result(theorems: list) -> None:
    # an env without the ProofEnv methods makes the search itself raise
    worker = ProofWorker(_Env, lambda: object(), CONFIG)
    result = worker.prove(theorems[0])
    assert result.status == "error" and result.backend == "fake" and result.error
    assert result.theorem == theorems[0].full_name and result.proof is None


def test_env_is_closed_when_the_generator_factory_fails() -> None:
    env = _Env()

    def broken() -> Any:
        raise RuntimeError("no model")

    with pytest.raises(RuntimeError, match="no model"):
        ProofWorker(lambda: env, broken, CONFIG)
    assert env.closed == 1


def test_backend_of_a_list_is_its_first_env() -> None:
    assert backend_of([_Env(), object()]) == "fake"
    assert backend_of([]) == "unknown"
    assert backend_of(object()) == "unknown"


def test_collector_keeps_input_order_and_reports_each_theorem_once(theorems: list) -> None:
    seen: list[str] = []
    collector = ResultCollector(theorems, seen.append, progress=False, desc="t")
    late = error_result(theorems[2], "late", "replay")
    collector.put(2, late)
    assert not collector.done()
    collector.put(0, error_result(theorems[0], "a"))
    collector.put(2, error_result(theorems[2], "second result, ignored"))
    collector.put(1, error_result(theorems[1], "b"))
    assert collector.done()
    results = collector.finish()
    assert [r.theorem for r in results] == [t.full_name for t in theorems]
    assert results[2] is late
    assert seen == [late, results[0], results[1]]


def test_task_queue_retries_a_lost_theorem_first_then_gives_an_error(theorems: list) -> None:
    collector = ResultCollector(theorems, None, progress=False, desc="t")
    queue = TaskQueue(theorems, collector, retries=1)
    assert queue.pop() == 0 and queue.pop() == 1
    queue.lost(1, who="worker", how="signal 9", error="died", backend="replay", seconds=0.5)
    assert queue.pop() == 1  # retried before theorem 2
    queue.lost(1, who="worker", error="died again", backend="replay", seconds=1.5)
    assert collector.results[1] is not None
    assert collector.results[1].status == "error"
    assert collector.results[1].error == "died again" and collector.results[1].seconds == 1.5
    assert queue.pop() == 2 and not queue
