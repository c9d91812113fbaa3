"""``lean-dojo-v2 train ...``: the trainers' commands (registered by ``lean_dojo_v2.cli``).

``train sft --data DIR | --db FILE [--config FILE] [--set key=value ...] [--json]``. Nothing
heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_train_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``train`` and its subcommands to the top-level subparsers ``sub``."""
    train = sub.add_parser("train", help="train models (sft)")
    train_sub = train.add_subparsers(dest="train_command", metavar="TRAINER")
    train.set_defaults(func=lambda a: _help(train))

    sft = train_sub.add_parser(
        "sft",
        help="supervised fine-tuning of a tactic generator on traced tactics",
        description="Fine-tune a causal LM (default: the bundled SmolLM2-135M-Instruct) to write the "
        "next tactic for a goal state, on a LeanDojo-layout dataset (--data) or on the database's "
        "curriculum (--db: one pass per repository, easiest first; the run is recorded in the "
        "database). Settings come from SFTConfig: a YAML --config file, then --set overrides "
        "(see --help-config for every key). Output (model or LoRA adapter, checkpoints, "
        "TensorBoard logs, loss_curve.png, summary.json) goes to output_dir; an unfinished run "
        "there is resumed.",
    )
    what = sft.add_mutually_exclusive_group()
    what.add_argument("--data", metavar="DIR", help="LeanDojo dataset directory (or a split file)")
    what.add_argument("--db", metavar="FILE", help="DynamicDatabase file: train on its curriculum")
    sft.add_argument(
        "--config", metavar="FILE", help="YAML file of SFTConfig keys (configs/sft_*.yaml)"
    )
    sft.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override one config key (repeatable), typed by the key: --set lr=1e-4 --set lora=true",
    )
    sft.add_argument("-o", "--output-dir", metavar="DIR", help="same as --set output_dir=DIR")
    sft.add_argument(
        "--repo",
        dest="repos",
        metavar="URL[@COMMIT]",
        action="append",
        help="with --db: train on these repositories only (repeatable; default: all)",
    )
    sft.add_argument(
        "--force",
        action="store_true",
        help="replace output_dir even if it holds files lean-dojo-v2 did not write or another "
        "unfinished run (same as --set overwrite_output_dir=true; its contents are deleted)",
    )
    sft.add_argument("--json", action="store_true", help="end with a one-line JSON summary")
    sft.add_argument(
        "--help-config",
        action="store_true",
        help="list every config key with its default and meaning",
    )
    sft.set_defaults(func=cmd_train_sft)
    from .premise_selector_cli import add_premise_selector_parser

    add_premise_selector_parser(train_sub)
    from .retrieval_cli import add_retrieval_parser

    add_retrieval_parser(train_sub)
    from .progress_cli import add_progress_parser

    add_progress_parser(train_sub)
    return train


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_train_sft(args: argparse.Namespace) -> int:
    from .config import describe_config, load_config
    from .errors import TrainerError
    from .sft_config import SFTConfig

    if args.help_config:
        print(describe_config(SFTConfig))
        return 0
    if not args.data and not args.db:
        raise TrainerError(
            "train sft needs --data DIR (a LeanDojo dataset directory) or --db FILE (the "
            "curriculum of a database); try --data with the bundled sample: "
            "python -c 'import lean_dojo_v2.data as d; print(d.sample_dataset_path())'"
        )
    if args.repos and not args.db:
        raise TrainerError("--repo selects repositories of --db; it cannot be used with --data")
    extra = {}
    if args.output_dir:
        extra["output_dir"] = args.output_dir
    if args.force:
        extra["overwrite_output_dir"] = True
    config = load_config(SFTConfig, args.config, args.overrides, **extra)

    from .sft_trainer import SFTTrainer

    trainer = SFTTrainer.from_config(config)
    repos = [_repo_arg(r) for r in args.repos] if args.repos else None
    result = trainer.train(repos=repos, database=args.db, data_path=args.data)
    summary = result.to_dict()
    if args.json:
        sys.stdout.flush()
        print(json.dumps(summary))
    else:
        loss = (
            f"loss {result.first_loss:.4f} -> {result.last_loss:.4f}"
            if result.first_loss is not None and result.last_loss is not None
            else "no loss logged"
        )
        what = "adapter" if result.adapter else "model"
        print(
            f"trained {result.steps} steps on {result.examples} examples in {result.seconds:.1f} s "
            f"({loss}); {what} in {result.model_dir}"
        )
        if result.merged_dir:
            print(f"merged model in {result.merged_dir}")
    return 0


def _repo_arg(text: str) -> str | tuple[str, str]:
    url, sep, commit = text.rpartition("@")
    if sep and url and "/" not in commit and ":" not in commit:
        return (url, commit)
    return text
