"""``lean-dojo-v2 eval report OUT``: (re)make ``report.html`` from an evaluation's output directory.

``eval prove`` writes the page itself at the end of a run; this command makes it again from the
files alone, for a run that was killed (its attempts so far), one made by an older version, or an
``--out`` copied from another machine. Nothing but ``OUT/report.html`` is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config.cli import ParserT

__all__ = ["add_eval_report_parser", "cmd_eval_report"]


def add_eval_report_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``report`` on ``sub`` (the subparsers of ``eval``)."""
    p = sub.add_parser(
        "report",
        help="make report.html from an evaluation's --out (works on a killed run too)",
        description="Write OUT/report.html from OUT/summary.json and OUT/attempts.jsonl: a "
        "summary table, then every problem with its status, attempts, Lean's messages and, in "
        "tactic mode, the search tree. One self-contained file; it loads nothing from anywhere.",
    )
    p.add_argument("out", type=Path, metavar="OUT", help="the --out directory of eval prove")
    p.add_argument("--json", action="store_true", help="print {report, problems, finished}")
    p.set_defaults(func=cmd_eval_report)
    return p


def cmd_eval_report(args: argparse.Namespace) -> int:
    from .report_data import read_report_data
    from .report_html import save_report_html

    data = read_report_data(args.out)
    path = save_report_html(data)
    if args.json:
        line = {"report": str(path), "problems": len(data.problems), "finished": data.finished}
        sys.stdout.write(json.dumps(line) + "\n")
    else:
        sys.stdout.write(f"{path}\n")
    return 0
