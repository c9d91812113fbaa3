"""Run LeanDojo v1 code unchanged: ``python -m lean_dojo_v2.v1 SCRIPT.py [ARGS]`` or
``lean-dojo-v2 v1-run SCRIPT.py [ARGS]`` (``-m MODULE`` for a module, as ``python -m``).

The script runs as ``__main__`` with ``sys.argv`` set to ``[SCRIPT.py, *ARGS]`` and its own
directory first on ``sys.path``, as ``python SCRIPT.py`` would; ``import lean_dojo`` resolves to
:mod:`lean_dojo_v2.v1` for this run only (:mod:`.alias`), in the processes it starts too, which
also find the run's dataset and project in the environment. Everything the run changes in this
process (``sys.argv``, ``sys.path``, those variables, a SIGTERM handler) is put back when it ends.
Bad input is one typed error before the script starts; the script's own exception is shown as
``python SCRIPT.py`` shows it (:func:`cmd_v1_run`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import runpy
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
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
    """The script given to ``v1-run`` does not exist or is not a file; or the module given with
    ``-m`` cannot be found (or is a package without ``__main__``), where ``python -m`` would
    answer "No module named" before running anything."""


class _Terminated(BaseException):
    """SIGTERM during a run: unwinds the script so that the run's temporary files go too."""


def prepare(
    target: str,
    *,
    module: bool = False,
    dataset: str | None = None,
    project: str | None = None,
) -> str:
    """Check the run's inputs before the script starts (a wrong path costs nothing) and name the
    dataset and project; the script's absolute path (or the module name)."""
    from .backend import choose_dataset, choose_project

    if not module:
        path = Path(target)
        if not path.is_file():
            raise ScriptNotFoundError(
                f"no script at {target}: give the path of a Python file, or -m MODULE for a module"
            )
        target = str(path.resolve())
    if dataset is not None:
        choose_dataset(dataset, "--dataset")
    if project is not None:
        choose_project(project, "--project")
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
    exceptions propagate, as they would from ``python SCRIPT.py`` (:func:`cmd_v1_run` shows
    them as Python does). A SIGTERM during the run removes the run's temporary files, then
    takes its usual course (by default the process ends by that signal)."""
    from . import alias
    from .backend import chosen_paths, restore_paths

    saved_choice = chosen_paths()
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    saved_env: dict[str, str | None] = {}
    sigterm = _SigtermUnwinds()
    try:
        target = prepare(target, module=module, dataset=dataset, project=project)
        saved_env = _export_settings()
        sigterm.install()
        alias.install()
        return _run_target(target, args, module)
    except _Terminated:
        return 128 + signal.SIGTERM  # what a shell reports, should an earlier handler return
    finally:
        sigterm.hold()
        alias.uninstall()
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        _restore_env(saved_env)
        restore_paths(saved_choice)
        sigterm.restore()


def _run_target(target: str, args: Sequence[str], module: bool) -> int:
    sys.argv = [target, *args]
    try:
        if module:
            sys.path.insert(0, os.getcwd())
            find_module(target)
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target).parent))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        return _exit_status(exc.code)
    return 0


def find_module(name: str) -> None:
    """Raise :class:`ScriptNotFoundError` where ``python -m name`` would answer "No module
    named" (the module's packages are imported, as ``python -m`` imports them; what they raise
    themselves propagates)."""
    parent = name.rpartition(".")[0]
    if parent:
        try:
            importlib.import_module(parent)
        except ImportError as exc:
            missing = exc.name
            if missing is None or not (parent == missing or parent.startswith(missing + ".")):
                raise  # an import inside the package failed: the package's own error
            raise _module_not_found(name, f"no module named {missing}") from None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise _module_not_found(name, str(exc)) from None
    if spec is None:
        raise _module_not_found(name, f"no module named {name}")
    if spec.submodule_search_locations is not None:
        # A package runs its __main__ module, as with python -m.
        if importlib.util.find_spec(f"{name}.__main__") is None:
            raise _module_not_found(name, f"{name} is a package without a __main__ module")


def _module_not_found(name: str, why: str) -> ScriptNotFoundError:
    return ScriptNotFoundError(
        f"cannot run -m {name}: {why}; run from the directory that holds it (the current "
        "directory comes first on sys.path, as with python -m), or give the script's path"
    )


def _export_settings() -> dict[str, str | None]:
    """Put the run's dataset and project into the environment, where the Python processes the
    script starts (multiprocessing's spawn, subprocess, Ray workers) read them; what the
    variables held before, for :func:`_restore_env`."""
    from .backend import ENV_DATASET, ENV_PROJECT, chosen_paths

    chosen = chosen_paths()
    saved: dict[str, str | None] = {}
    for key, var in (("dataset", ENV_DATASET), ("project", ENV_PROJECT)):
        value = chosen[key]
        if value is not None:
            saved[var] = os.environ.get(var)
            os.environ[var] = str(value)
    return saved


def _restore_env(saved: dict[str, str | None]) -> None:
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


SignalHandler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class _SigtermUnwinds:
    """While installed, SIGTERM raises :class:`_Terminated` in this process, so that the run
    cleans up (Python's default ends the process at once, leaving the run's temporary
    ``lean_dojo`` package behind); :meth:`restore` puts the previous handler back and then
    delivers a SIGTERM received meanwhile to it. Nothing changes before :meth:`install`, and
    nothing at all outside the main thread (where Python allows no handler)."""

    def __init__(self) -> None:
        self.previous: SignalHandler = None
        self.installed = False
        self.received = False
        self.unwinding = True
        self.pid = os.getpid()

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, self._on_sigterm)
            self.installed = True

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self.pid:
            # A child the script forked inherits this handler; there SIGTERM keeps its meaning
            # (multiprocessing's Pool.terminate ends forked workers with it).
            signal.signal(signum, self._previous())
            signal.raise_signal(signum)
            return
        self.received = True
        if self.unwinding:
            raise _Terminated

    def hold(self) -> None:
        """The cleanup begins: a SIGTERM now waits for :meth:`restore` instead of cutting it."""
        self.unwinding = False

    def restore(self) -> None:
        if not self.installed:
            return
        signal.signal(signal.SIGTERM, self._previous())
        self.installed = False
        if self.received:
            # Cleaned up: the signal does what it did before the run (by default, end the
            # process, as it would have ended `python SCRIPT.py`).
            signal.raise_signal(signal.SIGTERM)

    def _previous(self) -> Callable[[int, FrameType | None], object] | int:
        # None: a handler not installed from Python; the default is the nearest we can restore.
        return signal.SIG_DFL if self.previous is None else self.previous


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# Frames of the runner that stand between the command and the script (runpy's, importlib's
# when -m imports the module's packages, ours); a traceback of the script's own error leaves
# them out, as `python SCRIPT.py` has none of them.
_RUNNER_FILES = {__file__, runpy.__file__, importlib.__file__, importlib.util.__file__}
_RUNNER_PREFIXES = ("<frozen runpy>", "<frozen importlib")


def script_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The part of ``tb`` that is the script's: from its first frame past the runner's own; None
    when the error never reached the script (it is the runner's, e.g. a check before it ran)."""
    passed_runner = False
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != __file__ and (name in _RUNNER_FILES or name.startswith(_RUNNER_PREFIXES)):
            passed_runner = True
        elif name != __file__:
            return tb if passed_runner else None
        tb = tb.tb_next
    return None


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
    """Run the script; an exception of its own is shown as ``python SCRIPT.py`` shows it (through
    ``sys.excepthook``, from the script's first frame) and gives exit status 1, as there. The
    runner's own errors (a module not found) propagate: the caller says them in one line."""
    try:
        return run(
            args.target, args.args, module=args.module, dataset=args.dataset, project=args.project
        )
    except Exception as exc:
        tb = script_traceback(exc.__traceback__)
        if tb is None:
            raise
        # The hook prints the exception's own __traceback__ (3.12+), not only the one passed.
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1


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
    """``python -m lean_dojo_v2.v1``: a bad option, script, module, dataset or project ends in one
    line (``lean-dojo-v2: error: ...``, exit status 1) before the script starts; what the script
    raises is its own (a traceback, as ``python SCRIPT.py`` shows it); Ctrl-C is one line and
    exit status 130, as with every lean-dojo-v2 command."""
    from ..config.cli import CommandParser, UsageExit
    from ..errors import LeanDojoError

    parser = CommandParser(prog="python -m lean_dojo_v2.v1", description=DESCRIPTION)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except UsageExit as exc:
        return int(exc.code or 1)
    try:
        return cmd_v1_run(args)
    except LeanDojoError as exc:
        print(f"lean-dojo-v2: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lean-dojo-v2: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports a Ctrl-C


__all__ = [
    "ScriptNotFoundError",
    "add_v1_run_parser",
    "find_module",
    "main",
    "prepare",
    "run",
    "script_traceback",
]
