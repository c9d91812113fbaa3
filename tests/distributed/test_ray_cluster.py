"""Proving on a Ray cluster of three nodes (``ray.cluster_utils.Cluster``: a head and two worker
nodes, each its own raylet with its own CPUs), joined by address as ``--ray-address`` joins it:

- ``prove --parallel ray --ray-address`` spreads its actors over the nodes and proves, records
  and writes back what the inline run does;
- a worker node removed mid-run, as a lost machine (its raylet killed, not drained): its
  theorems are retried on the other nodes, every theorem has exactly one result, and the
  database and the write-back are complete, without duplicates;
- actors that no node can place (a GPU each, none there) end in a ``WorkerStartError`` after
  ``start_timeout``, not in a wait without end.

The cluster starts once for the module (about 10-15 s; the file 30-45 s): ``slow``."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from prover._oracle_server import oracle_answer, repo_with_sorries
from prover.fake_openai import FakeOpenAI
from prover.pipeline_oracle import OracleSpec, replay_provable

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.data.model import Theorem
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.interaction import ReplayEnv
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.pipeline import ProofJob, ProveRun, WriteBackRequest
from lean_dojo_v2.prover.result import SearchResult
from lean_dojo_v2.prover.search import SearchConfig

from .ray_factories import SleepyReplaySpec, three_node_cluster

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

SAMPLE = str(sample_dataset_path())
CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60, frontier_batch=1)
STARTED = re.compile(r"a Ray prover actor started on node (\w+)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with three_node_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def theorems() -> list[Theorem]:
    return [t for t in load_theorems(SAMPLE) if t.traced_tactics][:16]


def _nodes_started(caplog: pytest.LogCaptureFixture) -> set[str]:
    return {m.group(1) for r in caplog.records if (m := STARTED.search(r.getMessage()))}


def test_prove_cli_on_three_nodes_spreads_actors_records_and_writes_back(
    cluster: Any,
    theorems: list[Theorem],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    import json

    caplog.set_level(logging.INFO, logger="lean_dojo_v2.prover.ray_backend")
    with ReplayEnv.from_dataset(SAMPLE) as env:
        expected = replay_provable(env, theorems)
    repo = repo_with_sorries(tmp_path / "repo", theorems)
    db_path = tmp_path / "db.sqlite"
    with DynamicDatabase(db_path) as db:
        db.add_repository(SAMPLE)
    names = [x for t in theorems for x in ("--theorem", t.full_name)]
    summaries = {}
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
        common = ["prove", "--data", SAMPLE, "--split", "all", "--generator", "openai"]
        common += ["--model", "oracle", "--base-url", server.base_url, "--json", "--no-progress"]
        common += ["--num-samples", "3", "--max-expansions", "30", *names]
        for parallel in ("inline", "ray"):
            extra = ["--parallel", parallel]
            if parallel == "ray":
                extra += ["--ray-address", cluster.address, "--workers", "4"]
                extra += ["--db", str(db_path), "--write-back", str(repo)]
                extra += ["--out", str(tmp_path / "work")]
            assert main(common + extra) == 0
            out, _ = capsys.readouterr()
            summaries[parallel] = json.loads(out.strip().splitlines()[-1])
    summary = summaries["ray"]
    assert summary["attempted"] == len(theorems)
    assert expected and expected <= set(summary["proofs"])
    assert sorted(summary["proofs"]) == sorted(summaries["inline"]["proofs"])
    assert summary["db"]["recorded"] == summary["proved"]
    assert sorted(summary["write_back"]["written"]) == sorted(summary["proofs"])
    assert len(_nodes_started(caplog)) == 3  # one actor at least on each node
    assert not ray.is_initialized()  # the run joined the cluster and left it


def test_a_node_lost_mid_run_loses_nothing_and_doubles_nothing(
    cluster: Any, theorems: list[Theorem], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lean_dojo_v2.prover")
    inline = prove_theorems(
        theorems, ReplayEnvSpec(SAMPLE), OracleSpec(SAMPLE), CONFIG, backend="inline",
        progress=False,
    )  # fmt: skip
    summary = [(r.theorem, r.status, r.proof) for r in inline]
    proved = {r.theorem for r in inline if r.status == "proved"}

    repo = repo_with_sorries(tmp_path / "repo", theorems)
    db_path = tmp_path / "db.sqlite"
    seen: list[SearchResult] = []
    removed: list[str] = []

    def lose_a_node(result: SearchResult) -> None:
        """After 4 results, remove a worker node that has proved something: it holds actors,
        busy with theorems (the queue is far from empty)."""
        seen.append(result)
        if len(seen) != 4:
            return
        busy = {r.stats["ray_node"] for r in seen}
        workers = sorted(cluster.worker_nodes, key=lambda n: n.node_id not in busy)
        node = workers[0]
        removed.append(node.node_id)
        cluster.remove_node(node, allow_graceful=False)

    with DynamicDatabase(db_path) as db:
        db.add_repository(SAMPLE)
        report = ProveRun(
            OracleSpec(SAMPLE), CONFIG, workers=4, parallel="ray", ray_address=cluster.address,
            progress=False, database=db, model="oracle", observers=[lose_a_node],
        ).run([ProofJob(theorems, SleepyReplaySpec(SAMPLE, 0.05),
                        write_back=WriteBackRequest(repo, out=tmp_path / "work"))])  # fmt: skip
        recorded = Counter(db.get_theorem(p.theorem_id).theorem.full_name for p in db.proofs())
    cluster.add_node(num_cpus=2)  # back to three nodes for whatever runs next

    assert removed, "no worker node was removed"
    lost = [r.getMessage() for r in caplog.records if "trying it again" in r.getMessage()]
    assert lost and all(removed[0] in message for message in lost)
    # Every theorem exactly once, in input order, as the inline run has it.
    results = report.results
    assert [(r.theorem, r.status, r.proof) for r in results] == summary
    assert len(seen) == len(theorems) == len({r.theorem for r in seen})
    nodes = Counter(r.stats["ray_node"] for r in results)
    assert len(nodes) == 3 and removed[0] in nodes  # the lost node worked before it went
    retried = {re.search(r"proving (\S+) died", m).group(1) for m in lost}  # type: ignore[union-attr]
    for r in results:
        if r.theorem in retried:
            assert r.stats["ray_node"] != removed[0] and r.status == "proved"
    # The database and the write-back: every proof once.
    assert recorded == Counter(proved)
    (job,) = report.jobs
    assert job.write_back is not None and sorted(job.write_back["written"]) == sorted(proved)
    work = tmp_path / "work"
    left = sum(p.read_text("utf-8").count("sorry") for p in work.rglob("*.lean"))
    assert left == len(theorems) - len(proved)


def test_actors_no_node_can_place_end_in_an_error_not_a_wait(
    cluster: Any, theorems: list[Theorem]
) -> None:
    """Each actor asks for a GPU and no node has one: after ``start_timeout`` the run stops with
    a WorkerStartError saying so, instead of waiting for ever."""
    import time

    from lean_dojo_v2.prover.ray_backend import run_ray
    from lean_dojo_v2.prover.workers import ResultCollector, WorkerStartError

    collector = ResultCollector(theorems[:2], None, False, "proving")
    t = time.monotonic()
    with pytest.raises(WorkerStartError, match="cannot place an actor asking"):
        run_ray(theorems[:2], ReplayEnvSpec(SAMPLE), OracleSpec(SAMPLE), CONFIG, 2, collector,
                address=cluster.address, num_gpus=1, start_timeout=3)  # fmt: skip
    assert time.monotonic() - t < 30
    assert not ray.is_initialized()
