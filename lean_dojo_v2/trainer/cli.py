"""Layer 3 (trainer): ``lean-dojo-v2 train ...`` (registered by ``lean_dojo_v2.cli``): only the
``train`` parser; each trainer's command lives in its own ``*_cli`` module. Nothing heavy is
imported until a command runs.
"""

from __future__ import annotations

import argparse

from ..config.cli import ParserT
from .grpo_cli import add_grpo_parser
from .premise_selector_cli import add_premise_selector_parser
from .progress_cli import add_progress_parser
from .retrieval_cli import add_retrieval_parser
from .sft_cli import add_sft_parser

__all__ = ["add_train_parser"]


def add_train_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``train`` and its subcommands to the top-level subparsers ``sub``."""
    train = sub.add_parser(
        "train", help="train models (sft, grpo, retrieval, progress, premise-selector)"
    )
    train_sub = train.add_subparsers(dest="train_command", metavar="TRAINER")
    train.set_defaults(func=lambda a: train.print_help() or 2)  # usage, exit status 2
    add_sft_parser(train_sub)
    add_grpo_parser(train_sub)
    add_premise_selector_parser(train_sub)
    add_retrieval_parser(train_sub)
    add_progress_parser(train_sub)
    return train
