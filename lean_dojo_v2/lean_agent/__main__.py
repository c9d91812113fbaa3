"""``python -m lean_dojo_v2.lean_agent``: the LeanAgent loop from the command line.

The options become a :class:`~lean_dojo_v2.agent.LeanAgent` (the loop lives there, once) and
its calls: the repositories of the database ``--db FILE`` (its curriculum, easiest first), or
the LeanDojo dataset ``--data DIR`` as it is (default: the bundled sample, offline, small
budget); ``train()`` (the premise retriever, one repository after another, with EWC guarding
the earlier ones, recorded in the database; the retriever exported to
``<output_dir>-retriever``); ``evaluate()`` (the test split of each pass's dataset, else its val
split); then, unless ``--no-prove``, ``prove_dataset()`` on those test splits with a
``RetrievalProver`` (``--generator``, default the bundled SmolLM2, given the premises it
retrieves) and upstream LeanAgent's ``ProverConfig`` settings (``--num-samples``,
``--max-expansions``, ``--timeout``, ``--prove-limit``, ``--workers``), in the environment the
agent picks (``ReplayEnv`` without Lean, and says so). Nothing is recorded or written back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.cli import CommandParser, UsageExit, add_config_options
from ..trainer.cli_options import add_run_options, print_summary
from ..trainer.cli_options import training_config_from_args as config_from_args

if TYPE_CHECKING:
    from ..agent.lean_agent import LeanAgent

# The offline default run: small enough for a CPU in about a minute.
QUICK_DEFAULTS = {"max_epochs": 2, "batch_size": 16, "lr": 5e-5, "output_dir": "outputs-lean-agent"}


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _prove_limit(text: str) -> int:
    try:
        return _at_least_one(text)
    except argparse.ArgumentTypeError:
        # 0 reads as "prove nothing", which --no-prove already says; one way to say it.
        raise argparse.ArgumentTypeError(
            f"must be a whole number >= 1, got {text!r} (to skip proving, pass --no-prove)"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    # CommandParser: a bad option is one line (exit 1), as for every lean-dojo-v2 command.
    p = CommandParser(
        prog="python -m lean_dojo_v2.lean_agent",
        description="LeanAgent's lifelong premise-retrieval loop: curriculum training over the "
        "repositories of a database (--db) with EWC between repositories, then evaluation (R@1, "
        "R@10, MRR, FullRecall@10 over accessible premises) on every repository's held-out "
        "split, then proof search on the test splits with a RetrievalProver on the trained "
        "retriever (--no-prove to skip). Without --db/--data it trains briefly on the bundled "
        "sample (offline).",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--db", metavar="FILE", help="DynamicDatabase file: its curriculum")
    what.add_argument(
        "--data", metavar="DIR", help="one LeanDojo dataset directory (default: bundled sample)"
    )
    add_config_options(
        p,
        config_help="YAML of TrainingConfig keys",
        set_help="override a TrainingConfig key (repeatable), e.g. --set lambda_value=0.5",
    )
    add_run_options(p, force_help="replace output_dir if needed", help_config=None)
    prove = p.add_argument_group("proving (upstream LeanAgent's ProverConfig)")
    prove.add_argument("--no-prove", action="store_true", help="train and evaluate only")
    prove.add_argument(
        "--generator", default=None, help="tactic generator model (default: bundled SmolLM2)"
    )
    prove.add_argument("--num-samples", type=_at_least_one, default=4, help="tactics per state (4)")
    prove.add_argument("--max-expansions", type=_at_least_one, default=8, help="per theorem (8)")
    prove.add_argument(
        "--timeout", type=_at_least_one, default=120, help="seconds per theorem (120)"
    )
    prove.add_argument(
        "--prove-limit", type=_prove_limit, default=4, help="theorems per test split at most (4)"
    )
    prove.add_argument(
        "--workers",
        type=_at_least_one,
        default=1,
        help="provers in parallel, a process each with its own model (1: in this process)",
    )
    return p


def make_agent(args: argparse.Namespace) -> LeanAgent:
    """The ``LeanAgent`` the options describe (nothing read or written yet)."""
    from ..agent.lean_agent import LeanAgent
    from ..agent.prover_config import ProverConfig
    from ..trainer.retrieval_config import TrainingConfig

    # Quick defaults (no --config) apply only to keys --set does not give.
    config = config_from_args(args, TrainingConfig, defaults={} if args.config else QUICK_DEFAULTS)
    run = str(config.output_dir).rstrip("/\\")
    return LeanAgent(
        args.db,
        config,
        ProverConfig(
            num_workers=args.workers,
            timeout=args.timeout,
            max_expansions=args.max_expansions,
            num_sampled_tactics=args.num_samples,
        ),
        generator=None if args.no_prove else args.generator,
        retriever_dir=run + "-retriever",
        progress=False,
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train, evaluate and (unless ``--no-prove``) prove with the options' ``LeanAgent``; the
    summary."""
    from ..data import sample_dataset_path

    with make_agent(args) as agent:
        agent.check_generator()  # before anything is trained or written
        if args.db:
            agent.add_database_repositories()
            lifelong = agent.train()
        else:
            lifelong = agent.train(Path(args.data) if args.data else sample_dataset_path())
        training = lifelong.training
        out: dict[str, Any] = {
            "output_dir": training.output_dir,
            "encoder_dir": training.encoder_dir,
            "passes": [p["label"] for p in training.passes],
            "steps": training.steps,
            "ewc_tasks": training.ewc_tasks,
            "seconds": training.seconds,
            "forgetting": lifelong.forgetting,
            "test": agent.evaluate(),
        }
        if not args.no_prove:
            proved: dict[str, Any] = {
                "retriever": str(agent.retriever_dir),
                "generator": agent.generator or "smollm2",
            }
            for d in agent.held_out_datasets():
                report = agent.prove_dataset(d, "test", limit=args.prove_limit)
                proved[str(d)] = {
                    "backend": report.backend,
                    "attempted": report.attempted,
                    "proved": report.proved,
                    "expansions": report.expansions,
                    "proofs": report.proofs,
                }
            out["prove"] = proved
    return out


def main(argv: list[str] | None = None) -> int:
    import logging

    from ..errors import LeanDojoError

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        args = build_parser().parse_args(argv)
    except UsageExit as exc:
        return int(exc.code or 1)
    try:
        result = run(args)
    except LeanDojoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    def text() -> list[str]:
        lines = [
            f"trained {result['steps']} steps over {len(result['passes'])} pass(es); "
            f"encoder in {result['encoder_dir']}"
        ]
        for d, m in result["test"].items():
            lines.append(f"  {d}: " + ", ".join(f"{k} {v}" for k, v in m.items()))
        for d, p in result.get("prove", {}).items():
            if isinstance(p, dict):
                lines.append(
                    f"  proved {p['proved']} of {p['attempted']} test theorem(s) of {d} "
                    f"(backend {p['backend']}, {p['expansions']} expansions)"
                )
        return lines

    print_summary(result, args.json, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
