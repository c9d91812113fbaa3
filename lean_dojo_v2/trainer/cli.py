"""``lean-dojo-v2 train ...``: the trainers' commands (registered by ``lean_dojo_v2.cli``).

``train sft --data DIR | --db FILE [--config FILE] [--set key=value ...] [--json]``. Nothing
heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

C = TypeVar("C")


def add_train_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``train`` and its subcommands to the top-level subparsers ``sub``."""
    train = sub.add_parser(
        "train", help="train models (sft, retrieval, progress, premise-selector)"
    )
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
        "deleted)",
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
    from .errors import TrainerError
    from .sft_config import SFTConfig

    if print_config_help(args, SFTConfig):
        return 0
    if not args.data and not args.db:
        raise TrainerError(
            "train sft needs --data DIR (a LeanDojo dataset directory) or --db FILE (the "
            "curriculum of a database); try --data with the bundled sample: "
            "python -c 'import lean_dojo_v2.data as d; print(d.sample_dataset_path())'"
        )
    repos = repos_from_args(args)
    config = config_from_args(args, SFTConfig)

    from .sft_trainer import SFTTrainer

    trainer = SFTTrainer.from_config(config)
    result = trainer.train(repos=repos, database=args.db, data_path=args.data)

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


def repo_arg(text: str) -> str | tuple[str, str]:
    """``--repo URL[@COMMIT]``: the URL, or ``(url, commit)`` when a commit is given."""
    url, sep, commit = text.rpartition("@")
    if sep and url and "/" not in commit and ":" not in commit:
        return (url, commit)
    return text


# -- options and steps shared by every training command (train sft/retrieval/progress/
# premise-selector, python -m lean_dojo_v2.lean_agent) --------------------------------------


def add_config_options(
    parser: argparse.ArgumentParser,
    *,
    config_help: str,
    set_help: str,
    output_dir: bool = True,
) -> None:
    """Add ``--config FILE``, ``--set KEY=VALUE`` (repeatable, into ``args.overrides``) and,
    with ``output_dir``, ``-o/--output-dir DIR`` to ``parser``; read them back with
    :func:`config_from_args`."""
    parser.add_argument("--config", metavar="FILE", help=config_help)
    parser.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help=set_help,
    )
    if output_dir:
        parser.add_argument(
            "-o", "--output-dir", metavar="DIR", help="same as --set output_dir=DIR"
        )


def add_run_options(
    parser: argparse.ArgumentParser,
    *,
    force_help: str,
    help_config: str | None = "list every config key with its default and meaning",
) -> None:
    """Add ``--force``, ``--json`` and (unless ``help_config`` is None) ``--help-config`` to
    ``parser``; see :func:`print_summary` and :func:`print_config_help`."""
    parser.add_argument("--force", action="store_true", help=force_help)
    parser.add_argument("--json", action="store_true", help="end with a one-line JSON summary")
    if help_config is not None:
        parser.add_argument("--help-config", action="store_true", help=help_config)


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--repo URL[@COMMIT]`` (repeatable, into ``args.repos``); see
    :func:`repos_from_args`."""
    parser.add_argument(
        "--repo",
        dest="repos",
        metavar="URL[@COMMIT]",
        action="append",
        help="with --db: train on these repositories only (repeatable; default: all)",
    )


def repos_from_args(args: argparse.Namespace) -> list[str | tuple[str, str]] | None:
    """The ``--repo`` values (:func:`repo_arg` each), None when none is given; an error when
    they come without ``--db``."""
    if not args.repos:
        return None
    if not args.db:
        from .errors import TrainerError

        raise TrainerError("--repo selects repositories of --db; it cannot be used with --data")
    return [repo_arg(r) for r in args.repos]


def print_config_help(args: argparse.Namespace, config_cls: type) -> bool:
    """With ``--help-config``: print every key of ``config_cls`` and return True (the command
    then ends with status 0)."""
    if not getattr(args, "help_config", False):
        return False
    from .config import describe_config

    print(describe_config(config_cls))
    return True


def config_from_args(
    args: argparse.Namespace,
    config_cls: type[C],
    *,
    defaults: Mapping[str, Any] | None = None,
    **values: Any,
) -> C:
    """The ``config_cls`` config from ``--config``, then ``--set``, then ``defaults`` (only the
    keys ``--set`` does not give), then ``values``, ``-o/--output-dir`` and ``--force``
    (``overwrite_output_dir=True``); see :func:`lean_dojo_v2.trainer.config.load_config`."""
    from .config import load_config

    extra: dict[str, Any] = {}
    if defaults:
        given = {o.split("=", 1)[0].strip() for o in args.overrides}
        extra.update({k: v for k, v in defaults.items() if k not in given})
    extra.update(values)
    if getattr(args, "output_dir", None):
        extra["output_dir"] = args.output_dir
    if args.force:
        extra["overwrite_output_dir"] = True
    return load_config(config_cls, args.config, args.overrides, **extra)


def print_summary(
    summary: Mapping[str, Any], as_json: bool, text: Callable[[], Iterable[str]]
) -> None:
    """End a command: with ``as_json`` one line of JSON ``summary`` (after flushing whatever
    was printed before), otherwise the lines of ``text()``."""
    if as_json:
        sys.stdout.flush()
        print(json.dumps(summary))
    else:
        for line in text():
            print(line)
