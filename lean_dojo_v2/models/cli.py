"""``lean-dojo-v2 generate``: tactic candidates for one goal state."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_generate_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the ``generate`` subcommand on ``sub`` (the top-level subparsers)."""
    p = sub.add_parser(
        "generate",
        help="propose tactics for a goal state with a model",
        description="Print up to N distinct tactic candidates for one goal state, best first, "
        "with their log-probabilities. The default model is the bundled SmolLM2-135M-Instruct "
        "(converted once into the cache); it is a plumbing model, not a prover.",
    )
    p.add_argument("state", help="the goal state text, or - to read it from stdin")
    p.add_argument(
        "--model",
        default=None,
        help="smollm2 (default), a Hugging Face id, a model directory, a .gguf file, or a PEFT "
        "adapter directory",
    )
    p.add_argument("--adapter", default=None, help="a PEFT adapter directory to apply")
    p.add_argument("-n", "--num-samples", type=int, default=8, help="candidates (default 8)")
    p.add_argument(
        "--strategy", default="sample", choices=["sample", "beam", "greedy"], help="decoding"
    )
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--prefix", default=None, help="every tactic starts with this text")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--seed", type=int, default=None, help="seed sampling (reproducible output)")
    p.add_argument("--json", action="store_true", help='print [{"tactic", "logprob"}, ...]')
    p.set_defaults(func=cmd_generate)
    return p


def cmd_generate(args: argparse.Namespace) -> int:
    from ..errors import ModelError
    from .generator import HFTacticGenerator

    state = sys.stdin.read() if args.state == "-" else args.state
    if not state.strip():
        raise ModelError("the goal state is empty; pass the goal text, or - and pipe it in")
    gen = HFTacticGenerator(
        args.model,
        adapter=args.adapter,
        device=args.device,
        strategy=args.strategy,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
    candidates = gen.generate([state], args.num_samples, prefix=args.prefix)[0]
    if args.json:
        print(json.dumps([{"tactic": c.tactic, "logprob": c.logprob} for c in candidates]))
        return 0
    if not candidates:
        print("(no candidates: every sample was empty, sorry/admit, or a duplicate)")
    for c in candidates:
        print(f"{c.logprob:10.3f}  {c.tactic}")
    return 0
