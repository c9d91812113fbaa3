"""Run LeanDojo v1 code unchanged: ``python -m lean_dojo_v2.v1 SCRIPT.py [ARGS]`` or
``lean-dojo-v2 v1-run SCRIPT.py [ARGS]`` (``-m MODULE`` for a module, as ``python -m``).

The script runs as ``__main__`` with ``sys.argv`` set to ``[SCRIPT.py, *ARGS]`` and its own
directory first on ``sys.path``, as ``python SCRIPT.py`` would; ``import lean_dojo`` resolves to
:mod:`lean_dojo_v2.v1` for this run only (:mod:`.alias`), in the processes it starts too.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ..config.cli import ParserT

DESCRIPTION = (
    "Run a LeanDojo v1 script unchanged: `import lean_dojo` resolves to lean_dojo_v2.v1 for this "
    "run only, and its Dojo runs on Pantograph where Lean and a built project are found, else "
    "replays tactics from the traced dataset of --dataset (or LEAN_DOJO_V2_V1_DATASET). Put "
    "this command's own options before SCRIPT; everything after SCRIPT goes to the script."
)


class ScriptNotFoundError(ConfigError, FileNotFoundError):
    """The script given to ``v1-run`` does not exist or is not a file."""


def prepare(
    target: str,
    *,
    module: bool = False,
    dataset: str | None = None,
    project: str | None = None,
) -> str:
    """Check the run's inputs before the script starts (a wrong path costs nothing) and name the
    dataset and project; the script's absolute path (or the module name)."""
    from .backend import use_dataset, use_project

    if not module:
        path = Path(target)
        if not path.is_file():
            raise ScriptNotFoundError(
                f"no script at {target}: give the path of a Python file, or -m MODULE for a module"
            )
        target = str(path.resolve())
    if dataset is not None:
        use_dataset(dataset)
    if project is not None:
        use_project(project)
    return target


def run(
    target: str,
    args: Sequence[str] = (),
    *,
    module: bool = False,
    dataset: str | None = None,
    project: str | None = None,
) -> int:
    """Run the v1 script ``target`` (a module name with ``module``) with ``args``; its exit
    status (0 when it ends normally, the code of its ``SystemExit`` otherwise). The script's own
    exceptions propagate, as they would from ``python SCRIPT.py``."""
    from . import alias
    from .backend import chosen_paths, restore_paths

    saved_choice = chosen_paths()
    target = prepare(target, module=module, dataset=dataset, project=project)
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    alias.install()
    try:
        sys.argv = [target, *args]
        if module:
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target).parent))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        return _exit_status(exc.code)
    finally:
        alias.uninstall()
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        restore_paths(saved_choice)
    return 0


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        metavar="PATH",
        help="traced dataset to replay tactics from where no Lean project is found (a LeanDojo "
        "dataset directory or a split file; default: $LEAN_DOJO_V2_V1_DATASET)",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="built Lake project of the theorems' repository, used with a Pantograph REPL "
        "(default: $LEAN_DOJO_V2_V1_PROJECT, else the checkout `lean-dojo-v2 trace` built)",
    )
    parser.add_argument(
        "-m",
        dest="module",
        action="store_true",
        help="TARGET is a module name to run as `python -m` would",
    )
    parser.add_argument("target", metavar="SCRIPT", help="the v1 script (or module with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")


def cmd_v1_run(args: argparse.Namespace) -> int:
    return run(
        args.target, args.args, module=args.module, dataset=args.dataset, project=args.project
    )


def add_v1_run_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``v1-run`` on the top-level subparsers of ``lean-dojo-v2``."""
    p = sub.add_parser(
        "v1-run",
        help="run a LeanDojo v1 script unchanged on our environments",
        description=DESCRIPTION,
    )
    add_arguments(p)
    p.set_defaults(func=cmd_v1_run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lean_dojo_v2.v1``: a bad option, script, dataset or project ends in one line;
    what the script raises is its own (a traceback, as ``python SCRIPT.py`` shows it)."""
    from ..config.cli import CommandParser, UsageExit
    from ..errors import LeanDojoError

    parser = CommandParser(prog="python -m lean_dojo_v2.v1", description=DESCRIPTION)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
        prepare(args.target, module=args.module, dataset=args.dataset, project=args.project)
    except UsageExit as exc:
        return int(exc.code or 1)
    except LeanDojoError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    return cmd_v1_run(args)


__all__ = ["ScriptNotFoundError", "add_v1_run_parser", "main", "prepare", "run"]
