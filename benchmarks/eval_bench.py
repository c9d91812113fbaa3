"""Evaluation benchmark: problems per minute through ``evaluate`` when every Lean call takes 50 ms,
at 1 and 8 workers, and a re-run served from the verdict cache.

The problems are the first ``--problems`` of miniF2F-test, in whole mode with ``--n`` samples
each (distinct proofs, so each is a check of its own; the last sample of a problem with a
recorded proof is that proof). The generator answers at once (no model): what is measured is the
evaluation and its Lean calls. The environment stands in for a Lean REPL: every call sleeps
``--latency`` seconds (no CPU used, so 8 workers overlap their waits even on 2 cores) and a
proof is accepted when it is the recorded one. Three runs, each a fresh ``evaluate`` with its own
output directory, worker processes started inside the measured time:

1. ``workers_1``: one worker process, a new verdict cache;
2. ``workers_8``: eight worker processes, a new verdict cache (target: >= 5x the problems per
   minute of 1 worker);
3. ``cached_rerun``: run 1 again (one worker) on run 1's verdict cache (target: >= 20x faster,
   0 Lean calls: every verdict is served by the cache, and in whole mode miniF2F's recorded
   first goals need no Lean either).

Prints one JSON object (also written to ``--out``, default ``benchmarks/results/eval_bench.json``).

    python benchmarks/eval_bench.py [--problems 244] [--n 8] [--latency 0.05] [--workers 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lean_dojo_v2.interaction import ProofEnv  # noqa: E402
from lean_dojo_v2.interaction.types import ProofState, TacticError, Verdict  # noqa: E402
from lean_dojo_v2.models.generator import Completion, TacticGenerator  # noqa: E402

TARGET_WORKER_SPEEDUP = 5.0
TARGET_CACHE_SPEEDUP = 20.0


class LatencyEnv(ProofEnv):
    """A stand-in for Lean: every call takes ``latency`` seconds (a REPL's round trip, no CPU);
    a proof is accepted when it is, up to white space, the one in ``accepted`` for its problem."""

    backend = "lean-standin"
    shares_states = True

    def __init__(self, latency: float, accepted: dict[str, str]) -> None:
        self.latency = latency
        self.accepted = accepted

    def start(self, theorem):  # type: ignore[no-untyped-def]
        time.sleep(self.latency)
        return ProofState(("⊢ True",), self.backend, theorem=theorem)

    def run_tactic(self, state, tactic, timeout=None):  # type: ignore[no-untyped-def]
        time.sleep(self.latency)
        return TacticError("the stand-in runs no tactics", self.backend)

    def verify(self, theorem, proof):  # type: ignore[no-untyped-def]
        time.sleep(self.latency)
        right = self.accepted.get(theorem.full_name)
        ok = right is not None and proof.split() == right.split()
        return Verdict(ok, self.backend, "lean-standin", () if ok else ("error: not accepted",))


@dataclass(frozen=True)
class LatencyEnvFactory:
    latency: float
    accepted: dict[str, str]
    verifier_id: str = "lean-standin"  # the verdict cache's name for this checker

    def __call__(self) -> LatencyEnv:
        return LatencyEnv(self.latency, self.accepted)


class InstantSampler(TacticGenerator):
    """``n`` distinct whole proofs per problem at once: wrong ones, then the recorded proof
    (``proofs``: by problem name) where there is one."""

    def __init__(self, proofs: dict[str, str]) -> None:
        self.proofs = proofs

    def generate(self, states, num_samples, *, prefix=None):  # type: ignore[no-untyped-def]
        return [[] for _ in states]

    def sample_proofs(self, requests, num_samples, *, prompt=None):  # type: ignore[no-untyped-def]
        out = []
        for request in requests:
            answers = [f"nlinarith [sq_nonneg ({i} : ℝ)]" for i in range(num_samples)]
            if request.task.name in self.proofs:
                answers[-1] = self.proofs[request.task.name]
            out.append([Completion(f"```lean4\n{a}\n```") for a in answers])
        return out


@dataclass(frozen=True)
class InstantSamplerFactory:
    proofs: dict[str, str]

    def __call__(self) -> InstantSampler:
        return InstantSampler(self.proofs)


def _recorded_proofs(limit: int) -> dict[str, str]:
    """A recorded proof of each of the first ``limit`` problems that has one."""
    from lean_dojo_v2.evaluation import RecordedProofs, load_benchmark

    records = RecordedProofs.bundled()
    out = {}
    for p in load_benchmark("minif2f-test", limit=limit).problems:
        found = records.for_statement(p.header, p.formal_statement)
        if found:
            out[p.name] = found[0].proof
    return out


def _run(
    args: argparse.Namespace, workers: int, cache: Path, out: Path, proofs: dict[str, str]
) -> dict[str, object]:
    from lean_dojo_v2.evaluation import evaluate

    t0 = time.perf_counter()
    result = evaluate(
        benchmark="minif2f-test",
        limit=args.problems,
        mode="whole",
        n=args.n,
        verifier="lean",  # the stand-in below checks, as Lean would
        workers=workers,
        parallel="process",
        verdict_cache=str(cache),
        out=str(out),
        progress=False,
        make_env=LatencyEnvFactory(args.latency, proofs),
        make_generator=InstantSamplerFactory(proofs),
    )
    seconds = time.perf_counter() - t0
    return {
        "workers": workers,
        "problems": result.attempted,
        "solved": result.solved,
        "seconds": round(seconds, 3),
        "problems_per_minute": round(60 * result.attempted / seconds, 1),
        "lean_calls": result.budget.lean_calls,
        "attempts": result.budget.attempts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=244)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--out", default=str(HERE / "results" / "eval_bench.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="eval_bench-") as tmp:
        root = Path(tmp)
        proofs = _recorded_proofs(args.problems)
        one = _run(args, 1, root / "cache-1.sqlite", root / "one", proofs)
        many = _run(args, args.workers, root / "cache-8.sqlite", root / "many", proofs)
        again = _run(args, 1, root / "cache-1.sqlite", root / "again", proofs)
    worker_speedup = one["seconds"] / many["seconds"]  # type: ignore[operator]
    cache_speedup = one["seconds"] / again["seconds"]  # type: ignore[operator]
    report = {
        "benchmark": "minif2f-test",
        "mode": "whole",
        "n": args.n,
        "latency_per_lean_call_s": args.latency,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "workers_1": one,
        f"workers_{args.workers}": many,
        "cached_rerun": again,
        "speedup_workers": round(worker_speedup, 2),
        "speedup_cached_rerun": round(cache_speedup, 2),
        "targets": {
            f"speedup_workers >= {TARGET_WORKER_SPEEDUP}": worker_speedup >= TARGET_WORKER_SPEEDUP,
            f"speedup_cached_rerun >= {TARGET_CACHE_SPEEDUP}": cache_speedup
            >= TARGET_CACHE_SPEEDUP,
            "cached_rerun lean_calls == 0": again["lean_calls"] == 0,
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n", "utf-8")
    return 0 if all(report["targets"].values()) else 1  # type: ignore[union-attr]


if __name__ == "__main__":
    sys.exit(main())
