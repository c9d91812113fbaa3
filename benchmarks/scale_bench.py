"""Scale-out benchmark: proving and GRPO reward checks on Ray actors spread over the nodes of a
local Ray cluster, with Lean-like latency.

The cluster is ``ray.cluster_utils.Cluster``: a head and ``--nodes - 1`` worker nodes, each its
own raylet with ``--cpus-per-node`` CPUs, on this machine, joined by address (as
``--ray-address`` joins a real one). The environment is a ``ReplayEnv`` over the bundled LeanDojo
Benchmark 4 sample that sleeps ``--latency`` s (50 ms) per tactic: the work is waiting on Lean, as
on a real cluster, so on a machine of 2 cores eight actors can still run side by side.

1. ``prove``: ``prove_theorems(backend="ray")`` (the path of ``prove --parallel ray`` and ``eval
   prove --parallel ray``) on the sample's 51 theorems with tactic proofs, ``--rounds`` times
   over, with 1, 2, 4 and 8 actors. The generator is a constant-time table of the recorded
   tactics among wrong ones (what the model would cost is left out; the search is the real one).
   ``theorems_per_s`` counts the theorems finished once every actor is up, over the seconds from
   then to the last result; ``startup_s`` (connecting, placing the actors, building their
   environments) and the throughput with it (``wall_theorems_per_s``) are reported beside it.
   ``speedup`` is ``theorems_per_s`` over one actor's; the target is at least 0.8 × actors.
2. ``rewards``: GRPO's ``lean_tactic`` reward on a batch of ``--prompts`` prompts × 4
   completions (the recorded tactic and three wrong ones), with 1 and 8 Ray actors
   (``reward_workers_backend: ray``), each holding one sleeping environment; ``checks_per_s``
   over the scoring alone (the actors were started before). ``rewards_local`` is the same batch
   on 1 and 8 environments in this process (``reward_workers_backend: local``), for comparison:
   eight environments each reach their prompts' states themselves, so eight do not check eight
   times as fast on either backend.

Prints one JSON object (also written to ``--out``).

    python benchmarks/scale_bench.py [--latency 0.05] [--rounds 4] [--nodes 4] [--prompts 64]
        [--skip-prove]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lean_dojo_v2.interaction import ProofEnv, ReplayEnv  # noqa: E402
from lean_dojo_v2.models.generator import Candidate, TacticGenerator  # noqa: E402

ACTORS = (1, 2, 4, 8)
TARGET = 0.8  # speed-up per actor
WRONG = ("simp_all [foo_bar_baz]", "exact absurd_not_recorded", "omega_not_a_tactic")


def _theorems() -> list[Any]:
    from lean_dojo_v2.data import load_theorems, sample_dataset_path

    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


# -- what the actors build (defined here, so Ray ships them by value) ---------------------------


class SleepyReplayEnv(ProofEnv):
    """A ``ReplayEnv`` over the bundled sample that takes ``latency`` s per tactic."""

    shares_states = True

    def __init__(self, latency: float) -> None:
        from lean_dojo_v2.data import sample_dataset_path

        self.env = ReplayEnv.from_dataset(sample_dataset_path())
        self.backend = self.env.backend
        self.latency = latency

    def start(self, theorem):  # noqa: ANN001, ANN201
        return self.env.start(theorem)

    def run_tactic(self, state, tactic, timeout=None):  # noqa: ANN001, ANN201
        time.sleep(self.latency)
        return self.env.run_tactic(state, tactic, timeout)

    def verify(self, theorem, proof):  # noqa: ANN001, ANN201
        return self.env.verify(theorem, proof)


@dataclass(frozen=True)
class SleepyEnvSpec:
    latency: float

    def __call__(self) -> SleepyReplayEnv:
        return SleepyReplayEnv(self.latency)


class TableGenerator(TacticGenerator):
    """A wrong tactic, then the tactics recorded for the state's first goal: a dict lookup."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
        out = []
        for state in states:
            right = self.table.get(state.split("\n\n", 1)[0], [])
            tactics = [WRONG[0], *right, *WRONG[1:]][:num_samples]
            out.append([Candidate(t, -0.1 * (k + 1)) for k, t in enumerate(tactics)])
        return out


@dataclass(frozen=True)
class TableGeneratorSpec:
    """Builds the generator (the actor's last step of starting) and notes the time it is ready
    in ``ready_dir`` (the cluster is on this machine: one clock)."""

    table: dict[str, list[str]]
    ready_dir: str

    def __call__(self) -> TableGenerator:
        generator = TableGenerator(self.table)
        Path(self.ready_dir, f"{os.getpid()}-{time.time_ns()}").write_text(str(time.time()))
        return generator


def _table(theorems: list[Any]) -> dict[str, list[str]]:
    from lean_dojo_v2.data import goal_texts

    table: dict[str, list[str]] = {}
    for thm in theorems:
        for tt in thm.traced_tactics:
            goals = goal_texts(tt.state_before)
            if goals and tt.tactic not in table.setdefault(goals[0], []):
                table[goals[0]].append(tt.tactic)
    return table


# -- the cluster ------------------------------------------------------------------------------------


def _cluster(nodes: int, cpus: int) -> Any:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": cpus, "include_dashboard": False}
    )
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=cpus)
    cluster.wait_for_nodes()
    return cluster


# -- 1. proving -----------------------------------------------------------------------------------


def bench_prove(address: str, theorems: list[Any], latency: float, rounds: int) -> dict:
    from lean_dojo_v2.prover.parallel import prove_theorems
    from lean_dojo_v2.prover.search import SearchConfig

    config = SearchConfig(num_samples=4, max_expansions=50, timeout=120, frontier_batch=1)
    work = theorems * rounds
    table = _table(theorems)
    out: dict[str, dict] = {}
    for n in ACTORS:
        with tempfile.TemporaryDirectory() as ready_dir:
            done: list[float] = []
            t0 = time.time()
            results = prove_theorems(
                work,
                SleepyEnvSpec(latency),
                TableGeneratorSpec(table, ready_dir),
                config,
                workers=n,
                backend="ray",
                ray_address=address,
                progress=False,
                on_result=lambda _r, seen=done: seen.append(time.time()),
            )
            end = time.time()
            ready = max(float(p.read_text()) for p in Path(ready_dir).iterdir())
        after = [t for t in done if t >= ready]
        steady = len(after) / max(end - ready, 1e-9)
        out[str(n)] = {
            "actors": n,
            "theorems": len(results),
            "proved": sum(r.status == "proved" for r in results),
            "nodes": len({r.stats.get("ray_node") for r in results}),
            "startup_s": round(ready - t0, 2),
            "wall_s": round(end - t0, 2),
            "theorems_per_s": round(steady, 3),
            "wall_theorems_per_s": round(len(results) / (end - t0), 3),
        }
    base = out["1"]
    for n in ACTORS:
        row = out[str(n)]
        row["speedup"] = round(row["theorems_per_s"] / base["theorems_per_s"], 2)
        row["wall_speedup"] = round(row["wall_theorems_per_s"] / base["wall_theorems_per_s"], 2)
        row["meets_target"] = row["speedup"] >= TARGET * n
    return out


# -- 2. reward checks -----------------------------------------------------------------------------


def _reward_rows(theorems: list[Any], prompts: int) -> list[Any]:
    """``prompts`` goal states, each with a GRPO group of 4 distinct completions."""
    from lean_dojo_v2.trainer.rl.rewards import Trajectory

    steps = [(t, k) for t in theorems for k in range(len(t.traced_tactics))][:prompts]
    rows = []
    for thm, k in steps:
        for completion in (thm.traced_tactics[k].tactic, *WRONG):
            rows.append(Trajectory(completion=completion, state=thm.traced_tactics[k].state_before,
                                   theorem=thm, step=k))  # fmt: skip
    return rows


def _score(context: Any, rows: list[Any]) -> dict:
    from lean_dojo_v2.trainer.rl.rewards import LeanTacticScorer

    t = time.perf_counter()
    rewards = [r for r, _ in LeanTacticScorer(context).score_batch(rows)]
    seconds = time.perf_counter() - t
    checks = int(context.stats()["checks"])
    return {
        "envs": len(context.envs),
        "completions": len(rows),
        "checks": checks,
        "seconds": round(seconds, 3),
        "checks_per_s": round(checks / seconds, 2),
        "mean_reward": round(sum(rewards) / len(rewards), 4),
    }


def bench_rewards(address: str, theorems: list[Any], latency: float, prompts: int) -> dict:
    from lean_dojo_v2.trainer.rl.rewards import RewardContext
    from lean_dojo_v2.trainer.rl.rewards.context import theorems_by_key
    from lean_dojo_v2.trainer.rl.rewards.ray_envs import ray_proof_envs

    by_key = theorems_by_key(theorems)
    rows = _reward_rows(theorems, prompts)
    out: dict[str, dict] = {}
    for n in (1, 8):
        t = time.perf_counter()
        envs = ray_proof_envs(SleepyEnvSpec(latency), n, address=address)
        startup = time.perf_counter() - t
        with RewardContext(by_key, list(envs), backend="replay") as context:
            out[str(n)] = {**_score(context, rows), "startup_s": round(startup, 2)}
        out[str(n)]["nodes"] = len({env.node for env in envs})
    out["8"]["speedup"] = round(out["8"]["checks_per_s"] / out["1"]["checks_per_s"], 2)
    return out


def bench_rewards_local(theorems: list[Any], latency: float, prompts: int) -> dict:
    from lean_dojo_v2.trainer.rl.rewards import RewardContext
    from lean_dojo_v2.trainer.rl.rewards.context import theorems_by_key

    out = {}
    for n in (1, 8):
        envs: list[ProofEnv] = [SleepyReplayEnv(latency) for _ in range(n)]
        with RewardContext(theorems_by_key(theorems), envs, backend="replay") as context:
            out[str(n)] = _score(context, _reward_rows(theorems, prompts))
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--latency", type=float, default=0.05, help="seconds per tactic (0.05)")
    p.add_argument("--rounds", type=int, default=4, help="times over the 51 theorems (4)")
    p.add_argument("--nodes", type=int, default=4, help="nodes of the local cluster (4)")
    p.add_argument("--cpus-per-node", type=int, default=2, help="CPUs Ray sees per node (2)")
    p.add_argument("--prompts", type=int, default=64, help="reward batch: prompts × 4 (64)")
    p.add_argument("--skip-prove", action="store_true", help="measure the reward checks only")
    p.add_argument("--out", type=Path, default=HERE / "results" / "scale_bench.json")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    logging.basicConfig(level=logging.WARNING)
    import ray

    theorems = _theorems()
    t = time.perf_counter()
    cluster = _cluster(args.nodes, args.cpus_per_node)
    cluster_s = time.perf_counter() - t
    try:
        report: dict = {
            "data": "bundled LeanDojo B4 sample",
            "latency_s": args.latency,
            "cluster": {
                "nodes": args.nodes,
                "cpus_per_node": args.cpus_per_node,
                "start_s": round(cluster_s, 1),
            },
            "cpu_count": os.cpu_count(),
            "target_speedup_per_actor": TARGET,
        }
        if not args.skip_prove:
            report["prove"] = bench_prove(cluster.address, theorems, args.latency, args.rounds)
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        try:
            report["rewards"] = bench_rewards(cluster.address, theorems, args.latency, args.prompts)
        finally:
            ray.shutdown()
        report["rewards_local"] = bench_rewards_local(theorems, args.latency, args.prompts)
    finally:
        cluster.shutdown()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
