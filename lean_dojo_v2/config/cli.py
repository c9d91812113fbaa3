"""Layer 0 (config): the command-line side of the config system, shared by every command that
reads a config dataclass (``train ...``, ``prove``, the coming ``serve``).

- :func:`add_config_options`: ``--config FILE``, ``--set KEY=VALUE`` (repeatable) and, where the
  config has an ``output_dir``, ``-o/--output-dir DIR``;
- :func:`config_from_args`: the config they describe, built in the order YAML file, then ``--set``,
  then the command's own flags (:func:`~lean_dojo_v2.config.loading.load_config`);
- ``--help-config``: every field of the config with its default and its doc, read from the
  dataclass's docstring. Two forms: :func:`print_config_help` for a ``--help-config`` flag the
  command checks itself (the trainers, whose every other argument is optional), and
  :func:`add_help_config_option` for a command with required arguments (``prove --data``): it acts
  like ``--help``, printing and exiting before argparse asks for them;
- :class:`CommandParser`: the ``ArgumentParser`` of the ``lean-dojo-v2`` command and (through
  ``add_subparsers``, which makes each subparser of its parent's class) of every subcommand:
  argparse's own errors (unknown choice, bad number, missing argument) are one line pointing to
  ``--help``, with exit status 1 like every other error.

Only argparse here; the config class is imported when ``--help-config`` is given.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn, TypeVar

C = TypeVar("C")
# The parser class of a command's subparsers (``CommandParser`` under ``lean-dojo-v2``): a
# subcommand's ``add_*_parser(sub)`` returns a parser of the class ``sub`` makes.
ParserT = TypeVar("ParserT", bound=argparse.ArgumentParser)

HELP_CONFIG_HELP = "list every config key with its default and meaning"

__all__ = [
    "CommandParser",
    "HELP_CONFIG_HELP",
    "UsageExit",
    "add_config_options",
    "add_help_config_option",
    "config_from_args",
    "print_config_help",
]


class UsageExit(SystemExit):
    """What :meth:`CommandParser.error` raises after printing its one line: a ``SystemExit``
    (status 1), so that code driving a parser directly sees argparse's usual exit, and the
    command's ``main`` can tell a usage error from ``--help``."""


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit status 1.

    argparse prints the whole usage block and exits 2; every other error of the command is one
    ``PROG: error: ...`` line with status 1, so these are too. The line ends by pointing to
    ``PROG --help``, where the valid choices and forms are listed. Subparsers made with
    ``add_subparsers`` inherit the class (argparse's default ``parser_class`` is the parent's)."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        sys.stderr.write(f"{self.prog}: error: {text}; see '{self.prog} --help'\n")
        raise UsageExit(1)


def add_config_options(
    parser: argparse._ActionsContainer,
    *,
    config_help: str,
    set_help: str,
    output_dir: bool = True,
) -> None:
    """Add ``--config FILE``, ``--set KEY=VALUE`` (repeatable, into ``args.overrides``) and,
    with ``output_dir``, ``-o/--output-dir DIR`` to ``parser`` (or an argument group); read them
    back with :func:`config_from_args`."""
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


def print_config_help(args: argparse.Namespace, config_cls: type) -> bool:
    """With ``--help-config``: print every key of ``config_cls`` and return True (the command
    then ends with status 0)."""
    if not getattr(args, "help_config", False):
        return False
    from .loading import describe_config

    print(describe_config(config_cls))
    return True


class _HelpConfigAction(argparse.Action):
    """``--help-config`` that prints the config's fields and exits 0, like argparse's ``--help``
    (so it works without the command's required arguments)."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, config: str | type, help: str | None = None
    ) -> None:
        self.config = config
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        from .loading import describe_config

        print(describe_config(_config_class(self.config)))
        parser.exit()


def add_help_config_option(
    parser: argparse._ActionsContainer, config: str | type, *, help: str = HELP_CONFIG_HELP
) -> None:
    """Add ``--help-config`` to ``parser`` (or an argument group): print every field of ``config`` (a config dataclass,
    or ``"package.module:ClassName"`` so the module is imported only when asked) and exit 0."""
    parser.add_argument("--help-config", action=_HelpConfigAction, config=config, help=help)


def _config_class(config: str | type) -> type:
    if isinstance(config, type):
        return config
    module, _, name = config.partition(":")
    return getattr(importlib.import_module(module), name)


def config_from_args(
    args: argparse.Namespace,
    config_cls: type[C],
    *,
    defaults: Mapping[str, object] | None = None,
    **values: object,
) -> C:
    """The ``config_cls`` config from ``--config``, then ``--set``, then ``defaults`` (only the
    keys ``--set`` does not give), then ``values`` (the command's own flags) and
    ``-o/--output-dir``; see :func:`lean_dojo_v2.config.loading.load_config`."""
    from .loading import load_config

    extra: dict[str, object] = {}
    if defaults:
        given = {o.split("=", 1)[0].strip() for o in args.overrides}
        extra.update({k: v for k, v in defaults.items() if k not in given})
    extra.update(values)
    if getattr(args, "output_dir", None):
        extra["output_dir"] = args.output_dir
    return load_config(config_cls, args.config, args.overrides, **extra)
