"""Tactic-generation benchmark: batched vs one state at a time, with the default model.

16 distinct real goal states (the first ones of the bundled LeanDojo sample, in file order) × 8
sampled candidates each, generated twice in one run by the same :class:`HFTacticGenerator`:

* ``batched``: one ``generate`` call over all 16 states (128 sequences decoded together),
* ``sequential``: 16 calls of one state each (8 sequences decoded together),

with the same seed and settings. Reports tokens/s (generated tokens, each sequence up to and
including its end), states/s and the batched/sequential ratio of states/s. Prints one JSON object.
Target: ratio >= 3 on 2 CPU cores.

On a shared machine other jobs' load changes from minute to minute and can slow a run several
times over. ``--repeats N`` runs the two modes N times each, interleaved in an ABBA order
(batched, sequential, sequential, batched, ...) so that a drift in load hits both alike, and
reports each mode's fastest run (interference only ever adds time) and the ratio of those; each
adjacent pair gives a ratio too (``pair_ratios``, and their median). ``cpu_seconds`` is the
process CPU time of the reported run, ``loadavg`` the 1-minute load average before and after.
``--max-seconds S`` starts no new pair after S seconds (a loaded machine can take an hour).

    python benchmarks/generation_bench.py [--model smollm2] [--states 16] [--samples 8]
        [--max-new-tokens 32] [--device auto] [--dtype auto] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TARGET_RATIO = 3.0


def real_states(n: int) -> list[str]:
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import DatasetDir

    states: list[str] = []
    for thm in DatasetDir(sample_dataset_path()).all_theorems():
        for tac in thm.traced_tactics:
            if tac.state_before not in states:
                states.append(tac.state_before)
            if len(states) == n:
                return states
    raise SystemExit(f"the bundled sample has only {len(states)} distinct states")


def run(gen, states: list[str], samples: int, batch_size: int) -> dict[str, float]:
    """One timed ``generate`` over ``states``, ``batch_size`` states per call inside it
    (1 = one state at a time: the same as calling the generator once per state)."""
    gen.batch_size = batch_size
    gen.tokens_generated = 0
    t0, c0 = time.perf_counter(), time.process_time()
    out = gen.generate(states, samples)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "tokens": gen.tokens_generated,
        "tokens_per_s": round(gen.tokens_generated / seconds, 1),
        "states_per_s": round(len(states) / seconds, 3),
        "candidates": sum(len(c) for c in out),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--states", type=int, default=16)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=0,
        help="start no new pair of runs after this many seconds (0: no limit)",
    )
    args = parser.parse_args()

    import torch

    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.models.generator import HFTacticGenerator

    states = real_states(args.states)
    t0 = time.perf_counter()
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    load_s = time.perf_counter() - t0
    gen = HFTacticGenerator(
        loaded, strategy="sample", max_new_tokens=args.max_new_tokens, seed=args.seed
    )
    gen.generate(states[:1], 2)  # warm-up (first-call allocations)
    load_before = os.getloadavg()[0]
    modes = {"batched": len(states), "sequential": 1}
    runs: dict[str, list[dict[str, float]]] = {"batched": [], "sequential": []}
    repeats = max(1, args.repeats)
    order = [
        ("batched", "sequential") if i % 2 == 0 else ("sequential", "batched")
        for i in range(repeats)
    ]
    started = time.perf_counter()
    for i, pair in enumerate(order):
        if i and args.max_seconds and time.perf_counter() - started > args.max_seconds:
            print(f"--max-seconds reached: {i} pairs of runs", file=sys.stderr, flush=True)
            break
        for mode in pair:
            runs[mode].append(run(gen, states, args.samples, batch_size=modes[mode]))
            print(f"{mode}: {runs[mode][-1]}", file=sys.stderr, flush=True)
    batched = min(runs["batched"], key=lambda r: r["seconds"])
    sequential = min(runs["sequential"], key=lambda r: r["seconds"])
    ratio = batched["states_per_s"] / sequential["states_per_s"]
    pair_ratios = [
        round(s["seconds"] / b["seconds"], 2)
        for b, s in zip(runs["batched"], runs["sequential"], strict=True)
    ]
    result = {
        "bench": "generation",
        "model": loaded.source,
        "device": loaded.device,
        "dtype": str(next(loaded.model.parameters()).dtype).replace("torch.", ""),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "states": len(states),
        "samples_per_state": args.samples,
        "max_new_tokens": args.max_new_tokens,
        "load_seconds": round(load_s, 2),
        "repeats": len(runs["batched"]),
        "repeats_asked": repeats,
        "loadavg": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "all_seconds": {k: [r["seconds"] for r in v] for k, v in runs.items()},
        "batched": batched,
        "sequential": sequential,
        "ratio_states_per_s": round(ratio, 2),
        "ratio_tokens_per_s": round(batched["tokens_per_s"] / sequential["tokens_per_s"], 2),
        "pair_ratios": pair_ratios,
        "median_pair_ratio": round(statistics.median(pair_ratios), 2),
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
