"""Layer 3 (trainer): ``lean-dojo-v2 train sft``, supervised fine-tuning of a tactic generator."""

from __future__ import annotations

import argparse

from ..config.cli import ParserT, add_config_options, print_config_help
from .cli_options import (
    add_data_options,
    add_repo_option,
    add_run_options,
    print_summary,
    train_on_data,
)


def add_sft_parser(train_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``sft`` to the subcommands of ``train``."""
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
    add_data_options(sft)
    add_config_options(
        sft,
        config_help="YAML file of SFTConfig keys (configs/sft_*.yaml)",
        set_help="override one config key (repeatable), typed by the key: --set lr=1e-4 "
        "--set lora=true",
    )
    add_repo_option(sft)
    add_run_options(
        sft,
        force_help="replace output_dir even if it holds files lean-dojo-v2 did not write or "
        "another unfinished run (same as --set overwrite_output_dir=true; its contents are "
        "replaced once the new run has a checkpoint); never the data or the model it loads",
    )
    sft.set_defaults(func=cmd_train_sft)
    return sft


def cmd_train_sft(args: argparse.Namespace) -> int:
    from .sft_config import SFTConfig

    if print_config_help(args, SFTConfig):
        return 0
    from .sft_trainer import SFTTrainer

    result = train_on_data(args, "sft", SFTTrainer)

    def text() -> list[str]:
        loss = (
            f"loss {result.first_loss:.4f} -> {result.last_loss:.4f}"
            if result.first_loss is not None and result.last_loss is not None
            else "no loss logged"
        )
        what = "adapter" if result.adapter else "model"
        lines = [
            f"trained {result.steps} steps on {result.examples} examples in "
            f"{result.seconds:.1f} s ({loss}); {what} in {result.model_dir}"
        ]
        if result.merged_dir:
            lines.append(f"merged model in {result.merged_dir}")
        return lines

    print_summary(result.to_dict(), args.json, text)
    return 0
