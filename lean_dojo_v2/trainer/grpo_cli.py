"""Layer 3 (trainer): ``lean-dojo-v2 train grpo``, reinforcement learning with Lean-checked rewards.
``--help`` lists every algorithm and reward by name, read from their registries only when the
help is printed.
"""

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


def registry_help() -> str:
    """The algorithms (one line each) and the reward names, for ``--help``."""
    from .rl.algorithms import describe_algorithms
    from .rl.rewards.registry import available_scorers

    algorithms = "\n".join(f"  {line}" for line in describe_algorithms().splitlines())
    return (
        f"algorithms (--algorithm, config key 'algorithm'; configs/grpo/NAME.yaml):\n{algorithms}\n\n"
        f"rewards (config key 'rewards'; default: the Lean-checked composite of the mode, "
        f"lean_tactic or lean_proof + format):\n  {', '.join(available_scorers())}"
    )


def add_grpo_parser(train_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``grpo`` to the subcommands of ``train``."""
    grpo = train_sub.add_parser(
        "grpo",
        help="reinforcement learning (GRPO family) of a tactic generator, rewarded by Lean",
        description="Train a causal LM (default: the bundled SmolLM2-135M-Instruct, or a folder an "
        "SFT run wrote) with a GRPO-family algorithm on prompts from traced goal states "
        "(--mode tactic: one tactic per prompt; proof: whole proofs), rewarded by Lean: each "
        "completion runs in a proof environment (Pantograph where Lean is found, else the "
        "recorded transitions). Data: a LeanDojo-layout dataset (--data) or the database's "
        "curriculum (--db: one pass per repository; the run is recorded in the database). "
        "Settings come from GRPOConfig: a YAML --config file (configs/grpo/*.yaml), then --set "
        "overrides (--help-config lists every key). Output (model or LoRA adapter, checkpoints, "
        "TensorBoard logs, grpo_curves.png, summary.json) goes to output_dir; an unfinished run "
        "there is resumed.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_options(grpo)
    grpo.add_argument(
        "--algorithm", metavar="NAME", help="same as --set algorithm=NAME (listed below)"
    )
    grpo.add_argument(
        "--mode", choices=("tactic", "proof"), help="same as --set mode=MODE (default tactic)"
    )
    add_config_options(
        grpo,
        config_help="YAML file of GRPOConfig keys (configs/grpo/*.yaml; the keys of upstream LeanDojo-v2's GRPO design "
        "load too)",
        set_help="override one config key (repeatable), typed by the key: --set lr=1e-5 "
        "--set num_generations=8",
    )
    add_repo_option(grpo)
    add_run_options(
        grpo,
        force_help="replace output_dir even if it holds files lean-dojo-v2 did not write or "
        "another unfinished run (same as --set overwrite_output_dir=true); never the data or "
        "the model it loads",
    )
    grpo.set_defaults(func=cmd_train_grpo)

    def format_help() -> str:
        # The registries are read only when the help is shown (building the parser stays cheap).
        grpo.epilog = registry_help()
        return argparse.ArgumentParser.format_help(grpo)

    grpo.format_help = format_help  # type: ignore[method-assign]
    return grpo


def cmd_train_grpo(args: argparse.Namespace) -> int:
    from .grpo_config import GRPOConfig

    if print_config_help(args, GRPOConfig):
        return 0
    from .grpo_trainer import GRPOTrainer

    # ``--algorithm ""`` is a name too (refused, listing the valid ones), not "no flag".
    pairs = (("algorithm", args.algorithm), ("mode", args.mode))
    flags = {k: v for k, v in pairs if v is not None}
    result = train_on_data(args, "grpo", GRPOTrainer, **flags)

    def text() -> list[str]:
        if result.mean_reward_first is not None and result.mean_reward_last is not None:
            reward = f"mean reward {result.mean_reward_first:.4f} -> {result.mean_reward_last:.4f}"
        else:
            reward = "no reward logged"
        what = "adapter" if result.adapter else "model"
        lines = [
            f"trained {result.steps} {result.algorithm} steps ({result.mode} mode) on "
            f"{result.prompts} prompts in {result.seconds:.1f} s ({reward}; rewards checked by "
            f"{result.reward_backend or 'no Lean check'}; {result.dropped_groups} flat groups "
            f"dropped, rate {result.drop_rate:.2f}); {what} in {result.model_dir}"
        ]
        if result.curves:
            lines.append(f"curves in {result.curves}")
        if result.merged_dir:
            lines.append(f"merged model in {result.merged_dir}")
        return lines

    print_summary(result.to_dict(), args.json, text)
    return 0
