"""Layer 3 (trainer): ``lean-dojo-v2 train progress``, train a LeanProgress steps-remaining model."""

from __future__ import annotations

import argparse

from ..config.cli import ParserT, add_config_options, print_config_help
from .cli_options import add_run_options, print_summary, training_config_from_args

RESTART_NOTE = (
    "train progress does not resume: an interrupted run leaves output_dir as it was and the "
    "same command trains again from the start (one short fine-tuning, staged and swapped in)"
)


def add_progress_parser(train_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``progress`` to the subcommands of ``train``."""
    p = train_sub.add_parser(
        "progress",
        help="train a LeanProgress model that predicts the proof steps remaining",
        description="Fine-tune a regression head (default: the bundled all-MiniLM-L6-v2) to "
        "predict how many tactics remain, on a LeanProgress JSONL file (--data; write one from "
        "real traced proofs with `python -m lean_dojo_v2.lean_progress.create_sample_dataset "
        "--output FILE`). Settings come from ProgressConfig: a YAML --config file, then --set "
        "overrides (see --help-config for every key). The model, progress_metadata.json and "
        "summary.json go to output_dir; point search at it with LEANPROGRESS_MODEL=<output_dir>.",
    )
    p.add_argument(
        "--data", metavar="FILE", help="LeanProgress JSONL file (same as --set data_path=FILE)"
    )
    add_config_options(
        p,
        config_help="YAML file of ProgressConfig keys (configs/progress_*.yaml)",
        set_help="override one config key (repeatable), typed by the key: --set epochs=1",
    )
    add_run_options(
        p,
        force_help="replace output_dir even if it holds files lean-dojo-v2 did not write or "
        "another kind of output (same as --set overwrite_output_dir=true; it is replaced when "
        "the new model is complete); never the data or the model it loads",
    )
    p.set_defaults(func=cmd_train_progress)
    return p


def cmd_train_progress(args: argparse.Namespace) -> int:
    from ..errors import TrainerError
    from .progress_config import ProgressConfig

    if print_config_help(args, ProgressConfig):
        return 0
    values = {"data_path": args.data} if args.data else {}
    config = training_config_from_args(args, ProgressConfig, **values)
    if not config.data_path:
        raise TrainerError(
            "train progress needs --data FILE (a LeanProgress JSONL file) or data_path in "
            "--config; write one from the bundled real data with `python -m "
            "lean_dojo_v2.lean_progress.create_sample_dataset --output FILE`"
        )

    from .progress_trainer import ProgressTrainer

    result = ProgressTrainer.from_config(config).train()
    summary = {**result.to_dict(), "resumed_from": None, "resume_note": RESTART_NOTE}
    print_summary(
        summary,
        args.json,
        lambda: [
            f"trained {result.steps} steps on {result.train_examples} examples in "
            f"{result.seconds:.1f} s; on {result.eval_examples} {result.evaluated_on} examples: "
            f"MAE {result.mae:.3f}, exact {result.exact:.3f}, within 1 {result.within_1:.3f}; "
            f"model in {result.output_dir} (export LEANPROGRESS_MODEL={result.output_dir})"
        ],
    )
    return 0
