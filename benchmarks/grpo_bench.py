"""GRPO benchmark: reward throughput (and, to come, seconds per GRPO step).

``reward_throughput``: the Lean-checked tactic reward (``lean_tactic``) on the same completions,
scored serially (one environment) and over a pool of ``--envs`` environments. Each environment
is a ``ReplayEnv`` over the bundled LeanDojo Benchmark 4 sample whose every call sleeps
``--latency`` s (20 ms), standing in for a Lean server's round trip. Completions: for each
recorded tactic of the sample (up to ``--prompts`` prompts), ``--group`` samples as a GRPO group
has them — the recorded tactic, wrong tactics taken from other goals, and repeats (a group
repeats itself, which the (state, tactic) cache answers). Each run starts with a cold cache and
fresh environments. Reported: completions/s serially and over the pool, their ratio, checks run
and cache hits.

``grpo_step_timing``: seconds per GRPO step of ``GRPOTrainer`` (LoRA, the default algorithm,
``lean_tactic`` + ``format`` rewards on replay) on the first ``--step-prompts`` goal states of the
sample, for ``--steps`` steps: TRL's own ``step_time`` of each step (generation, rewards, loss,
backward, optimizer) and the wall time of the whole ``train()`` call (model load included).
Default model: the bundled SmolLM2-135M-Instruct on the CPU (``--model`` takes any name or path
the loading path takes; ``--device cuda`` on a GPU). ``--steps 0`` skips it.

Prints one JSON object (also written to ``--out``).

    python benchmarks/grpo_bench.py [--envs 4] [--latency 0.02] [--prompts 40] [--group 8]
        [--steps 3] [--step-prompts 8] [--model smollm2] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _theorems():
    from lean_dojo_v2.data import load_theorems, sample_dataset_path

    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


def _sleepy_envs(theorems, count: int, latency: float) -> list:
    """``count`` ReplayEnvs that sleep ``latency`` s per call (start, run_tactic, verify)."""
    from lean_dojo_v2.interaction import ReplayEnv, TransitionTable

    class SleepyReplayEnv(ReplayEnv):
        def start(self, theorem):
            time.sleep(latency)
            return super().start(theorem)

        def run_tactic(self, state, tactic, timeout=None):
            time.sleep(latency)
            return super().run_tactic(state, tactic, timeout)

        def verify(self, theorem, proof):
            time.sleep(latency)
            return super().verify(theorem, proof)

    table = TransitionTable.from_theorems(theorems)
    return [SleepyReplayEnv(table) for _ in range(count)]


def _trajectories(theorems, prompts: int, group: int, seed: int) -> list:
    """GRPO-shaped rows: per prompt, ``group`` completions (recorded, wrong, repeats)."""
    from lean_dojo_v2.trainer.rl.rewards import Trajectory

    rng = random.Random(seed)
    steps = [(t, k) for t in theorems for k in range(len(t.traced_tactics))]
    rng.shuffle(steps)
    pool = [tt.tactic for t in theorems for tt in t.traced_tactics]
    rows = []
    for thm, k in steps[:prompts]:
        tt = thm.traced_tactics[k]
        wrong = rng.sample(pool, max(1, group // 2))
        samples = [tt.tactic, *wrong]
        samples += rng.choices(samples, k=max(0, group - len(samples)))
        for completion in samples[:group]:
            rows.append(
                Trajectory(
                    completion=completion,
                    state=tt.state_before,
                    theorem=thm,
                    step=k,
                    recorded_tactic=tt.tactic,
                )  # fmt: skip
            )
    return rows


def _score(theorems, rows, num_envs: int, latency: float) -> dict[str, Any]:
    from lean_dojo_v2.trainer.rl.rewards import LeanTacticScorer, RewardContext

    envs = _sleepy_envs(theorems, num_envs, latency)
    by_key = {f"{t.file_path}::{t.full_name}": t for t in theorems}
    with RewardContext(by_key, envs, backend="replay") as ctx:
        scorer = LeanTacticScorer(ctx)
        t0 = time.perf_counter()
        scored = scorer.score_batch(rows)
        seconds = time.perf_counter() - t0
        stats = ctx.stats()
    return {
        "envs": num_envs,
        "completions": len(rows),
        "seconds": round(seconds, 4),
        "completions_per_s": round(len(rows) / max(seconds, 1e-9), 2),
        "mean_reward": round(sum(r for r, _ in scored) / max(len(scored), 1), 4),
        "checks": stats["checks"],
        "cache_hits": stats["cache_hits"],
        "rewards": [r for r, _ in scored],
    }


def reward_throughput(
    num_envs: int = 4,
    latency: float = 0.02,
    prompts: int = 40,
    group: int = 8,
    seed: int = 0,
) -> dict[str, Any]:
    """Completions/s of ``lean_tactic`` serially vs over ``num_envs`` environments (same
    completions, cold caches), each environment call sleeping ``latency`` s."""
    theorems = _theorems()
    rows = _trajectories(theorems, prompts, group, seed)
    serial = _score(theorems, rows, 1, latency)
    pooled = _score(theorems, _trajectories(theorems, prompts, group, seed), num_envs, latency)
    same = serial.pop("rewards") == pooled.pop("rewards")
    return {
        "latency_s": latency,
        "prompts": prompts,
        "group": group,
        "serial": serial,
        "pool": pooled,
        "speedup": round(pooled["completions_per_s"] / max(serial["completions_per_s"], 1e-9), 2),
        "same_rewards": same,
    }


def grpo_step_timing(
    steps: int = 3,
    prompts: int = 8,
    model: str | None = None,
    device: str = "cpu",
    num_generations: int = 4,
    batch_size: int = 8,
) -> dict[str, Any]:
    """Seconds per GRPO step (TRL's ``step_time``) of a short LoRA run, and the whole call."""
    import tempfile

    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    with tempfile.TemporaryDirectory() as tmp:
        trainer = GRPOTrainer(
            model_name=model,
            output_dir=Path(tmp) / "grpo",
            batch_size=batch_size,
            lr=5e-5,
            lora_config=True,
            num_generations=num_generations,
            max_completion_length=24,
            max_prompts=prompts,
            max_steps=steps,
            reward_backend="replay",
            use_cpu=device == "cpu",
            device=device,
            report_to=["none"],
            progress_bar=False,
            curves=False,
            save_steps=10_000,
        )
        start = time.perf_counter()
        result = trainer.train(data_path=sample_dataset_path())
        wall = time.perf_counter() - start
        times = [
            float(e["step_time"])
            for e in trainer._trl_trainer.state.log_history
            if "step_time" in e
        ]
    return {
        "model": model or "smollm2",
        "device": device,
        "steps": result.steps,
        "completions_per_step": batch_size,
        "num_generations": num_generations,
        "step_seconds": [round(t, 2) for t in times],
        "mean_step_seconds": round(sum(times) / len(times), 2) if times else None,
        "train_call_seconds": round(wall, 1),
        "mean_reward_first": result.mean_reward_first,
        "mean_reward_last": result.mean_reward_last,
        "reward_backend": result.reward_backend,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps to time (0: skip)")
    parser.add_argument("--step-prompts", type=int, default=8)
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "reward_throughput": reward_throughput(
            args.envs, args.latency, args.prompts, args.group, args.seed
        )
    }
    if args.steps > 0:
        report["grpo_step"] = grpo_step_timing(
            args.steps, args.step_prompts, args.model, args.device
        )
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
