"""Layer 3 (trainer): options and steps shared by the training commands (``train ...``,
``python -m lean_dojo_v2.lean_agent``) beyond the config system's own (:mod:`lean_dojo_v2.config.cli`):
``--data``/``--db``, ``--repo``, ``--force`` (the config's ``overwrite_output_dir``), ``--json``
and the summary that ends a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..config.cli import HELP_CONFIG_HELP, config_from_args
from ..system.ranks import is_main_process

if TYPE_CHECKING:
    from .causal_lm_trainer import CausalLMTrainer
    from .result import TrainingResult

C = TypeVar("C")
R = TypeVar("R", bound="TrainingResult")

__all__ = [
    "add_data_options",
    "add_repo_option",
    "add_run_options",
    "print_summary",
    "repo_arg",
    "repos_from_args",
    "train_on_data",
    "training_config_from_args",
]


def repo_arg(text: str) -> str | tuple[str, str]:
    """``--repo URL[@COMMIT]``: the URL, or ``(url, commit)`` when a commit is given."""
    url, sep, commit = text.rpartition("@")
    if sep and url and "/" not in commit and ":" not in commit:
        return (url, commit)
    return text


def add_run_options(
    parser: argparse.ArgumentParser,
    *,
    force_help: str,
    help_config: str | None = HELP_CONFIG_HELP,
) -> None:
    """Add ``--force``, ``--json`` and (unless ``help_config`` is None) ``--help-config`` to
    ``parser``; see :func:`print_summary` and
    :func:`~lean_dojo_v2.config.cli.print_config_help`."""
    parser.add_argument("--force", action="store_true", help=force_help)
    parser.add_argument("--json", action="store_true", help="end with a one-line JSON summary")
    if help_config is not None:
        parser.add_argument("--help-config", action="store_true", help=help_config)


def add_data_options(
    parser: argparse.ArgumentParser, data_help: str = "LeanDojo dataset directory (or a split file)"
) -> None:
    """Add ``--data DIR`` or (not both) ``--db FILE``, what a curriculum trainer trains on."""
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--data", metavar="DIR", help=data_help)
    what.add_argument("--db", metavar="FILE", help="DynamicDatabase file: train on its curriculum")


def train_on_data(
    args: argparse.Namespace,
    command: str,
    trainer_cls: type[CausalLMTrainer[Any, R]],
    **flags: object,
) -> R:
    """``train COMMAND``: ``trainer_cls`` built from the command's config
    (:func:`training_config_from_args` with ``flags``) trains on ``--data`` or ``--db``."""
    if not args.data and not args.db:
        from ..errors import TrainerError

        raise TrainerError(
            f"train {command} needs --data DIR (a LeanDojo dataset directory) or --db FILE (the "
            "curriculum of a database); try --data with the bundled sample: "
            "python -c 'import lean_dojo_v2.data as d; print(d.sample_dataset_path())'"
        )
    repos = repos_from_args(args)
    config = training_config_from_args(args, trainer_cls.config_class, defaults=None, **flags)
    trainer = trainer_cls.from_config(config)
    return trainer.train(repos=repos, database=args.db, data_path=args.data)


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
        from ..errors import TrainerError

        raise TrainerError("--repo selects repositories of --db; it cannot be used with --data")
    return [repo_arg(r) for r in args.repos]


def training_config_from_args(
    args: argparse.Namespace,
    config_cls: type[C],
    *,
    defaults: Mapping[str, object] | None = None,
    **values: object,
) -> C:
    """:func:`~lean_dojo_v2.config.cli.config_from_args`, with ``--force`` as
    ``overwrite_output_dir=True`` (the flag wins over the same key in ``values``)."""
    if args.force:
        values = {**values, "overwrite_output_dir": True}
    return config_from_args(args, config_cls, defaults=defaults, **values)


def print_summary(
    summary: Mapping[str, object], as_json: bool, text: Callable[[], Iterable[str]]
) -> None:
    """End a command: with ``as_json`` one line of JSON ``summary`` (after flushing whatever
    was printed before), otherwise the lines of ``text()``; by the main process of a launched
    run alone."""
    if not is_main_process():
        return
    if as_json:
        sys.stdout.flush()
        print(json.dumps(summary))
    else:
        for line in text():
            print(line)
