"""Picklable factories the Ray tests' actors build: a ``ReplayEnv`` over the bundled sample that
sleeps per tactic, standing in for a Lean process (so a run lasts long enough to lose a node in
the middle of it), and a three-node ``ray.cluster_utils.Cluster`` for one test module."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lean_dojo_v2.data.model import Theorem
from lean_dojo_v2.interaction import ProofEnv, ReplayEnv
from lean_dojo_v2.interaction.types import ProofState, TacticResult, Verdict


class SleepyReplayEnv(ProofEnv):
    """A ``ReplayEnv`` that takes ``latency`` seconds per tactic, as Lean would."""

    shares_states = True

    def __init__(self, data: str, latency: float) -> None:
        self.env = ReplayEnv.from_dataset(data)
        self.backend = self.env.backend
        self.latency = latency

    def start(self, theorem: Theorem) -> ProofState:
        return self.env.start(theorem)

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        time.sleep(self.latency)
        return self.env.run_tactic(state, tactic, timeout)

    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return self.env.verify(theorem, proof)


@dataclass(frozen=True)
class SleepyReplaySpec:
    data: str
    latency: float = 0.05

    def __call__(self) -> SleepyReplayEnv:
        return SleepyReplayEnv(self.data, self.latency)


@contextmanager
def three_node_cluster(cpus_per_worker: int = 2) -> Iterator[Any]:
    """A head (1 CPU) and two worker nodes, each its own raylet. Nodes are declared dead half a
    second after their raylet stops answering (Ray's default waits far longer), so a lost node
    is noticed within a test's time. The nodes' workers get this process's import path (the
    tests' factories are imported there by module name)."""
    from ray.cluster_utils import Cluster

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
            "_system_config": {
                "health_check_initial_delay_ms": 0,
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 3,
            },
        },
    )
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=cpus_per_worker)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
