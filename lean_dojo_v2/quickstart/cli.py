"""``lean-dojo-v2 quickstart [--json] [--retrain] [--out DIR]`` (what ``make quickstart`` runs)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..config.cli import ParserT, add_config_options, add_help_config_option

__all__ = ["add_quickstart_parser", "cmd_quickstart"]


def add_quickstart_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register the ``quickstart`` subcommand on ``sub`` (the top-level subparsers)."""
    p = sub.add_parser(
        "quickstart",
        help="the whole loop offline: data → database → LoRA SFT → search, trained vs untrained",
        description="Offline, on the CPU, in minutes: the bundled miniF2F-test recorded proofs go "
        "into a database; the default model (SmolLM2-135M) gets a short LoRA SFT on a focused "
        "set of short proofs; best-first search through ReplayEnv then runs with the trained and "
        "the untrained model at the same budget, on the theorems trained on and on held-out ones. "
        "ReplayEnv accepts only recorded tactics, so a proof found is a recorded one reproduced. "
        "A second run reuses the trained adapter (--retrain trains again). Writes a report, a "
        "plot and the database under --out (default RAID_DIR/quickstart). See docs/quickstart.md.",
    )
    p.add_argument("--json", action="store_true", help="end with one line of JSON (the report)")
    p.add_argument(
        "--retrain", action="store_true", help="train again even if the adapter is there"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (default RAID_DIR/quickstart); new, empty or a quickstart's",
    )
    add_config_options(
        p,
        config_help="YAML file of quickstart settings (see --help-config)",
        set_help="override one setting, e.g. --set train_steps=20 (repeatable)",
        output_dir=False,
    )
    add_help_config_option(p, "lean_dojo_v2.quickstart.config:QuickstartConfig")
    p.set_defaults(func=cmd_quickstart)
    return p


def cmd_quickstart(args: argparse.Namespace) -> int:
    from ..config.cli import config_from_args
    from .config import QuickstartConfig
    from .run import run_quickstart

    values: dict[str, Any] = {}
    if args.retrain:
        values["retrain"] = True
    if args.out:
        values["output_dir"] = args.out
    config = config_from_args(args, QuickstartConfig, **values)

    def say(line: str) -> None:
        print(line, flush=True)

    report = run_quickstart(config, say=say)
    print()
    print(report.table())
    if args.json:
        print(json.dumps(report.to_dict()))
    return 0
