"""``python -m lean_dojo_v2.lean_agent``: LeanAgent's lifelong retrieval loop.

With ``--db FILE``: for each repository of the database's curriculum (easiest first) train the
premise retriever on it, continuing from the previous repository's weights, with EWC (the Fisher
information of each finished repository, λ = ``lambda_value``) guarding the earlier ones; the run
is recorded in the database. Then evaluate the final retriever on every repository's test split
(LeanAgent's "stability": does it still retrieve well on the earlier repositories?).

With ``--data DIR`` (default: the bundled sample, offline, small budget): one training pass on that
LeanDojo dataset, then its test split.

Then it proves: the retriever is exported beside the run (``<output_dir>-retriever``) and a
``RetrievalProver`` (the tactic generator ``--generator``, default the bundled SmolLM2, given the
premises it retrieves) searches the test split of each dataset, with the seed's ``ProverConfig``
settings (``--num-samples``, ``--max-expansions``, ``--timeout``, ``--prove-limit``) in the
environment :mod:`lean_dojo_v2.agent.environment` picks (``ReplayEnv`` without Lean, and says so).
``--no-prove`` stops after the evaluation. ``LeanAgent`` (``lean_dojo_v2.agent``) is the same loop
from Python, with write-back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..config.cli import CommandParser, UsageExit, add_config_options
from ..trainer.cli_options import add_run_options, print_summary
from ..trainer.cli_options import training_config_from_args as config_from_args

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
        "R@10, MRR, FullRecall@10 over accessible premises) on every repository's test split, "
        "then proof search on those test splits with a RetrievalProver on the trained retriever "
        "(--no-prove to skip). Without --db/--data it trains briefly on the bundled sample "
        "(offline).",
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
    prove = p.add_argument_group("proving (the seed's ProverConfig)")
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


def run(args: argparse.Namespace) -> dict:
    from ..trainer.retrieval_config import TrainingConfig
    from ..trainer.retrieval_trainer import RetrievalTrainer
    from ..trainer.run_dir import DATA

    # Quick defaults (no --config) apply only to keys --set does not give.
    defaults = {} if args.config else QUICK_DEFAULTS
    config = config_from_args(args, TrainingConfig, defaults=defaults)
    settings = prover_settings(args)  # checked before anything trains or is written
    if not args.no_prove:
        check_generator(args.generator)
    trainer = RetrievalTrainer.from_config(config)
    if args.db:
        result = trainer.train(database=args.db)
        datasets = sorted((Path(config.output_dir) / DATA).glob("pass-*"))
    else:
        from ..data import sample_dataset_path

        data = Path(args.data) if args.data else sample_dataset_path()
        result = trainer.train(data_path=data)
        datasets = [data]
    evaluations = {}
    from ..errors import LeanDojoError

    for d in datasets:
        try:
            evaluations[str(d)] = trainer.evaluate(data_path=d, split="test")
        except LeanDojoError as exc:  # e.g. a repository whose test split has no premise use
            evaluations[str(d)] = {"error": str(exc)}
    out = {
        "output_dir": result.output_dir,
        "encoder_dir": result.encoder_dir,
        "passes": [p["label"] for p in result.passes],
        "steps": result.steps,
        "ewc_tasks": result.ewc_tasks,
        "seconds": result.seconds,
        "test": evaluations,
    }
    if not args.no_prove:
        out["prove"] = prove(args, trainer, datasets, settings)
    return out


def prover_settings(args: argparse.Namespace) -> Any:
    """The seed's ``ProverConfig`` of the proving options (a bad value is a one-line error)."""
    from .config import ProverConfig

    return ProverConfig(
        num_workers=args.workers,
        timeout=args.timeout,
        max_expansions=args.max_expansions,
        num_sampled_tactics=args.num_samples,
    )


def check_generator(generator: str | None) -> None:
    """``--generator`` names a model that can be loaded (a local model, or a hub id in the local
    cache when offline): a ``ModelNotFoundError`` before training, not after it."""
    from ..models.loading import DEFAULT_ALIASES, resolve_model_path

    if generator is not None and generator.strip().lower() not in DEFAULT_ALIASES:
        resolve_model_path(generator)


def prove(args: argparse.Namespace, trainer, datasets: list[Path], settings: Any) -> dict:
    """Proof search on the test split of each dataset with a RetrievalProver on the trained
    retriever (exported to ``<output_dir>-retriever``); a summary per dataset."""
    import functools

    from ..agent.environment import choose_env
    from ..agent.hf_agent import search_config_from_prover_config
    from ..data.dataset import DatasetDir
    from ..prover.parallel import prove_theorems
    from ..prover.retrieval_prover import RetrievalProver

    search = search_config_from_prover_config(settings)
    export = Path(str(trainer.config.output_dir).rstrip("/\\") + "-retriever")
    retriever = trainer.export(export, force=args.force)
    factory = functools.partial(RetrievalProver, args.generator, retriever=str(retriever))
    parallel = settings.num_workers > 1
    prover = None if parallel else factory()
    summary: dict = {"retriever": str(retriever), "generator": args.generator or "smollm2"}
    for d in datasets:
        theorems = [t for t in DatasetDir(d).theorems("random", "test") if t.traced_tactics]
        theorems = theorems[: args.prove_limit]
        choice = choose_env(None, d)
        if choice.notice:
            print(choice.notice, file=sys.stderr)
        results = prove_theorems(
            theorems,
            choice.make_env,
            factory if parallel else (lambda: prover),
            search,
            workers=settings.num_workers,
            backend="process" if parallel else "inline",
            progress=False,
        )
        summary[str(d)] = {
            "backend": choice.backend,
            "attempted": len(results),
            "proved": sum(r.status == "proved" for r in results),
            "expansions": sum(r.expansions for r in results),
            "proofs": {r.theorem: r.proof for r in results if r.status == "proved"},
        }
    return summary


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
