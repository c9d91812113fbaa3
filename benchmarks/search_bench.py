"""Proof-search benchmark: engine overhead, several environments, end to end with the default model.

Three measurements on the bundled LeanDojo Benchmark 4 sample (``sample_dataset_path()``, the 51
theorems with tactic proofs) through ``ReplayEnv``:

1. ``overhead``: best-first search with a constant-time generator (a dict lookup of precomputed
   candidates: the tactics recorded for the state's first goal among tactics recorded for other
   goals, fixed log-probs). Engine time = total wall time - generator time - environment time
   (tactic calls, starts, verify), per expansion, summed over all theorems; target <= 1 ms. Run
   with the generator in a worker thread (the default, what keeps the wall clock during a slow
   model) and inline. The best of ``--repeats`` runs counts.
2. ``envs``: expansions/s with 1 and with 4 environments, each a ``ReplayEnv`` behind a blocking
   wrapper that sleeps ``--latency`` s (5 ms) per call, standing in for a Lean process.
3. ``end_to_end``: theorems/minute with the default model (SmolLM2 via
   ``lean_dojo_v2.models.load_generator()``), a small budget (``--e2e-theorems`` theorems,
   ``--e2e-expansions`` expansions, ``--e2e-samples`` samples). ``--skip-e2e`` leaves it out.

Prints one JSON object (also written to ``--out``).

    python benchmarks/search_bench.py [--repeats 3] [--latency 0.005] [--skip-e2e]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_OVERHEAD_MS = 1.0


def _theorems():
    from lean_dojo_v2.data import load_theorems, sample_dataset_path

    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


def _constant_time_generator(theorems, num_samples: int, seed: int = 0):
    """Candidates precomputed for every recorded first goal; ``generate`` is a dict lookup."""
    from lean_dojo_v2.data import goal_texts
    from lean_dojo_v2.models.generator import Candidate, TacticGenerator

    recorded: dict[str, list[str]] = {}
    pool: list[tuple[str, str]] = []
    for thm in theorems:
        for tt in thm.traced_tactics:
            goals = goal_texts(tt.state_before)
            if goals:
                recorded.setdefault(goals[0], [])
                if tt.tactic not in recorded[goals[0]]:
                    recorded[goals[0]].append(tt.tactic)
                pool.append((goals[0], tt.tactic))
    table: dict[str, list] = {}
    for goal, right in recorded.items():
        rng = random.Random(f"{seed}:{goal}")
        wrong = [t for g, t in rng.sample(pool, 4 * num_samples) if g != goal and t not in right]
        wrong = list(dict.fromkeys(wrong))[: max(0, num_samples - len(right))]
        cands = [Candidate(t, -rng.uniform(0.2, 1.5)) for t in right[:num_samples]]
        cands += [Candidate(t, -rng.uniform(0.5, 3.0)) for t in wrong]
        table[goal] = sorted(cands, key=lambda c: -c.logprob)

    class Constant(TacticGenerator):
        def generate(self, states, num_samples, *, prefix=None):
            return [table.get(s.split("\n\n", 1)[0], []) for s in states]

    return Constant()


def _sleepy(env, latency: float):
    from lean_dojo_v2.interaction import ProofEnv

    class SleepyEnv(ProofEnv):
        """A blocking env with a fixed latency per call, over a ReplayEnv (states portable)."""

        backend = env.backend
        shares_states = True

        def start(self, theorem):
            time.sleep(latency)
            return env.start(theorem)

        def run_tactic(self, state, tactic, timeout=None):
            time.sleep(latency)
            return env.run_tactic(state, tactic, timeout)

        def verify(self, theorem, proof):
            time.sleep(latency)
            return env.verify(theorem, proof)

    return SleepyEnv()


def _run(search, envs, theorems) -> dict:
    t0 = time.perf_counter()
    results = [search.search(envs, t) for t in theorems]
    wall = time.perf_counter() - t0
    s = [r.stats for r in results]
    expansions = sum(r.expansions for r in results)
    engine = sum(x["engine_seconds"] for x in s)
    return {
        "theorems": len(results),
        "proved": sum(r.status == "proved" for r in results),
        "expansions": expansions,
        "tactic_calls": sum(x["tactic_calls"] for x in s),
        "wall_seconds": round(wall, 4),
        "search_seconds": round(sum(r.seconds for r in results), 4),
        "generator_seconds": round(sum(x["generator_seconds"] for x in s), 4),
        "env_seconds": round(sum(x["env_wall_seconds"] + x["verify_seconds"] for x in s), 4),
        "engine_seconds": round(engine, 4),
        "engine_ms_per_expansion": round(1000 * engine / max(expansions, 1), 4),
        "expansions_per_s": round(expansions / max(wall, 1e-9), 2),
    }


def bench_overhead(theorems, repeats: int, num_samples: int) -> dict:
    from lean_dojo_v2.interaction import ReplayEnv
    from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

    env = ReplayEnv.from_theorems(theorems)
    gen = _constant_time_generator(theorems, num_samples)
    out = {}
    for name, in_thread in (("generator_in_thread", True), ("generator_inline", False)):
        cfg = SearchConfig(
            num_samples=num_samples, max_expansions=100, generator_in_thread=in_thread
        )
        runs = [_run(BestFirstSearch(gen, cfg), env, theorems) for _ in range(repeats)]
        best = min(runs, key=lambda r: r["engine_ms_per_expansion"])
        best["all_engine_ms_per_expansion"] = [r["engine_ms_per_expansion"] for r in runs]
        out[name] = best
    out["target_ms"] = TARGET_OVERHEAD_MS
    out["meets_target"] = (
        out["generator_in_thread"]["engine_ms_per_expansion"] <= TARGET_OVERHEAD_MS
    )
    return out


def bench_envs(theorems, latency: float, num_samples: int, count: int) -> dict:
    from lean_dojo_v2.interaction import ReplayEnv
    from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

    replay = ReplayEnv.from_theorems(theorems)
    gen = _constant_time_generator(theorems, num_samples)
    cfg = SearchConfig(num_samples=num_samples, max_expansions=100, frontier_batch=4)
    subset = theorems[:count]
    out: dict = {"latency_s": latency, "theorems": len(subset)}
    for n in (1, 4):
        envs = [_sleepy(replay, latency) for _ in range(n)]
        out[f"envs_{n}"] = _run(BestFirstSearch(gen, cfg), envs, subset)
    out["speedup"] = round(
        out["envs_4"]["expansions_per_s"] / max(out["envs_1"]["expansions_per_s"], 1e-9), 2
    )
    return out


def bench_end_to_end(theorems, count: int, expansions: int, samples: int, timeout: float) -> dict:
    from lean_dojo_v2.interaction import ReplayEnv
    from lean_dojo_v2.models.generator import load_generator
    from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

    t = time.perf_counter()
    gen = load_generator()
    load_s = time.perf_counter() - t
    env = ReplayEnv.from_theorems(theorems)
    cfg = SearchConfig(
        num_samples=samples, max_expansions=expansions, frontier_batch=4, timeout=timeout
    )
    subset = theorems[:count]
    run = _run(BestFirstSearch(gen, cfg), env, subset)
    run["model"] = getattr(getattr(gen, "loaded", None), "name_or_path", None) or "default"
    run["model_load_seconds"] = round(load_s, 2)
    run["theorems_per_minute"] = round(60 * run["theorems"] / max(run["wall_seconds"], 1e-9), 2)
    run["config"] = {"num_samples": samples, "max_expansions": expansions, "timeout": timeout}
    return run


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--num-samples", type=int, default=8)
    p.add_argument("--latency", type=float, default=0.005)
    p.add_argument("--env-theorems", type=int, default=20)
    p.add_argument("--skip-e2e", action="store_true")
    p.add_argument("--e2e-theorems", type=int, default=10)
    p.add_argument("--e2e-expansions", type=int, default=4)
    p.add_argument("--e2e-samples", type=int, default=4)
    p.add_argument("--e2e-timeout", type=float, default=120.0)
    p.add_argument("--out", type=Path, default=HERE / "results" / "search_bench.json")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    theorems = _theorems()
    report: dict = {"data": "bundled LeanDojo B4 sample", "theorems": len(theorems)}
    report["overhead"] = bench_overhead(theorems, args.repeats, args.num_samples)
    report["envs"] = bench_envs(theorems, args.latency, args.num_samples, args.env_theorems)
    if not args.skip_e2e:
        report["end_to_end"] = bench_end_to_end(
            theorems, args.e2e_theorems, args.e2e_expansions, args.e2e_samples, args.e2e_timeout
        )
    report["cpu_count"] = os.cpu_count()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
