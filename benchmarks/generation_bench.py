"""Tactic-generation benchmark: batched vs one state at a time, with the default model.

16 distinct real goal states (the first ones of the bundled LeanDojo sample, in file order) × 8
sampled candidates each, generated twice in one run by the same :class:`HFTacticGenerator`:

* ``batched``: one ``generate`` call over all 16 states (128 sequences decoded together),
* ``sequential``: 16 calls of one state each (8 sequences decoded together),

with the same seed and settings. ``--compare-hf`` adds a third mode in the same run:

* ``hf``: transformers' own batched ``model.generate`` on the same prompts (left-padded, the same
  number of samples, ``max_new_tokens``, temperature and top-p, no top-k; it stops a sequence at
  the end marker only, not at the end of its tactic), and reports ``ratio_vs_hf``: batched
  states/s over ``hf`` states/s (and ``pair_ratios_vs_hf``).

Reports tokens/s (generated tokens, each sequence up to and
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
        [--max-new-tokens 32] [--device auto] [--dtype auto] [--repeats 2] [--compare-hf]
        [--no-sequential]
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


def run_hf(gen, states: list[str], samples: int, max_new_tokens: int, seed: int) -> dict:
    """One timed batched ``model.generate`` over ``states``, sampling as ``gen`` does."""
    import torch

    from lean_dojo_v2.models.prompts import add_special_tokens_for

    tok, model = gen.tokenizer, gen.model
    enc = tok(
        gen.prompts(states),
        return_tensors="pt",
        padding=True,
        padding_side="left",
        add_special_tokens=add_special_tokens_for(gen.style),
    ).to(gen.loaded.device)
    stops = gen.stop_ids
    torch.manual_seed(seed)
    _sync(gen.loaded.device)
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=gen.temperature,
            top_p=gen.top_p,
            top_k=None,
            repetition_penalty=None,
            num_return_sequences=samples,
            max_new_tokens=max_new_tokens,
            eos_token_id=stops or None,
            pad_token_id=tok.pad_token_id,
        )
    rows = out[:, enc["input_ids"].shape[1] :].tolist()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    ends = set(stops)
    tokens = sum(next((i + 1 for i, t in enumerate(r) if t in ends), len(r)) for r in rows)
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "states_per_s": round(len(states) / seconds, 3),
        "sequences": len(rows),
    }


def _sync(device: str) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


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
    parser.add_argument(
        "--compare-hf",
        action="store_true",
        help="also time transformers' batched model.generate on the same prompts",
    )
    parser.add_argument(
        "--no-sequential", action="store_true", help="skip the one-state-at-a-time mode"
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
    if args.compare_hf:
        run_hf(gen, states[:1], 2, 4, args.seed)
    load_before = os.getloadavg()[0]
    modes = ["batched"] + ([] if args.no_sequential else ["sequential"])
    modes += ["hf"] if args.compare_hf else []
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    repeats = max(1, args.repeats)
    # ABBA: every other round runs the modes in reverse, so a drift in load hits all alike.
    order = [modes if i % 2 == 0 else modes[::-1] for i in range(repeats)]
    started = time.perf_counter()
    for i, rounds in enumerate(order):
        if i and args.max_seconds and time.perf_counter() - started > args.max_seconds:
            print(f"--max-seconds reached: {i} rounds of runs", file=sys.stderr, flush=True)
            break
        for mode in rounds:
            if mode == "hf":
                result = run_hf(gen, states, args.samples, args.max_new_tokens, args.seed)
            else:
                size = len(states) if mode == "batched" else 1
                result = run(gen, states, args.samples, batch_size=size)
            runs[mode].append(result)
            print(f"{mode}: {result}", file=sys.stderr, flush=True)
    best = {m: min(r, key=lambda x: x["seconds"]) for m, r in runs.items()}
    batched = best["batched"]
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
        **best,
    }
    for other, key in (("sequential", ""), ("hf", "_vs_hf")):
        if other not in best:
            continue
        ratio = batched["states_per_s"] / best[other]["states_per_s"]
        pair_ratios = [
            round(o["seconds"] / b["seconds"], 2)
            for b, o in zip(runs["batched"], runs[other], strict=False)
        ]
        result[f"ratio{key or '_states_per_s'}"] = round(ratio, 2)
        result[f"ratio_tokens_per_s{key}"] = round(
            batched["tokens_per_s"] / best[other]["tokens_per_s"], 2
        )
        result[f"pair_ratios{key}"] = pair_ratios
        result[f"median_pair_ratio{key}"] = round(statistics.median(pair_ratios), 2)
        if other == "sequential":
            result["target_ratio"] = TARGET_RATIO
            result["meets_target"] = ratio >= TARGET_RATIO
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
