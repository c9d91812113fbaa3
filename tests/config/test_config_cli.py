"""The config system's command-line side (``lean_dojo_v2.config.cli``), shared by ``train ...``
and ``prove``: ``--config``, then ``--set``, then the command's own flags; ``--help-config`` in
both forms."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from lean_dojo_v2.config.cli import (
    add_config_options,
    add_help_config_option,
    config_from_args,
    print_config_help,
)
from lean_dojo_v2.errors import ConfigValueError, UnknownConfigKeyError


@dataclass
class ToyConfig:
    """A config for these tests.

    Parameters:
        > Parameters that control the toy

        size (`int`, *optional*, defaults to `1`):
            How big the toy is.
        name (`str`, *optional*, defaults to `"toy"`):
            What the toy is called.
        output_dir (`str`, *optional*, defaults to `"out"`):
            Where the toy goes.
    """

    size: int = 1
    name: str = "toy"
    output_dir: str = "out"


def _parser(*, output_dir: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toy")
    add_config_options(
        p, config_help="YAML of ToyConfig", set_help="one key", output_dir=output_dir
    )
    return p


def test_yaml_then_set_then_values_then_output_dir(tmp_path):
    cfg = tmp_path / "toy.yaml"
    cfg.write_text("size: 3\nname: from-yaml\noutput_dir: yaml-out\n", "utf-8")
    args = _parser().parse_args(["--config", str(cfg), "--set", "size=5"])
    assert config_from_args(args, ToyConfig) == ToyConfig(5, "from-yaml", "yaml-out")
    # The command's own flags (values) win over --set; -o wins over both.
    args = _parser().parse_args(["--config", str(cfg), "--set", "size=5", "-o", "cli-out"])
    assert config_from_args(args, ToyConfig, size=7, output_dir="flag-out") == ToyConfig(
        7, "from-yaml", "cli-out"
    )


def test_defaults_apply_only_to_keys_set_does_not_give():
    args = _parser().parse_args(["--set", "size=4"])
    got = config_from_args(args, ToyConfig, defaults={"size": 9, "name": "quick"})
    assert got == ToyConfig(4, "quick", "out")


def test_without_output_dir_option_there_is_no_dash_o():
    p = _parser(output_dir=False)
    with pytest.raises(SystemExit):
        p.parse_args(["-o", "x"])
    assert config_from_args(p.parse_args([]), ToyConfig) == ToyConfig()


def test_unknown_key_and_bad_value_are_typed_errors():
    with pytest.raises(UnknownConfigKeyError, match="did you mean 'size'"):
        config_from_args(_parser().parse_args(["--set", "sise=2"]), ToyConfig)
    with pytest.raises(ConfigValueError, match="'size'"):
        config_from_args(_parser().parse_args(["--set", "size=big"]), ToyConfig)


def test_print_config_help_only_with_the_flag(capsys):
    p = _parser()
    p.add_argument("--help-config", action="store_true")
    assert print_config_help(p.parse_args([]), ToyConfig) is False
    assert capsys.readouterr().out == ""
    assert print_config_help(p.parse_args(["--help-config"]), ToyConfig) is True
    out = capsys.readouterr().out
    assert "Parameters that control the toy:" in out
    assert "  size = 1" in out and "How big the toy is." in out


@pytest.mark.parametrize("config", [ToyConfig, f"{__name__}:ToyConfig"])
def test_help_config_option_prints_and_exits_before_required_arguments(config, capsys):
    p = argparse.ArgumentParser(prog="toy")
    p.add_argument("--data", required=True)
    group = p.add_argument_group("toy")
    add_help_config_option(group, config)
    with pytest.raises(SystemExit) as exit_:
        p.parse_args(["--help-config"])
    assert exit_.value.code in (0, None)
    out = capsys.readouterr().out
    assert '  name = "toy"' in out and "What the toy is called." in out
    # Without it, the required argument is still required, and nothing is printed.
    with pytest.raises(SystemExit) as exit_:
        p.parse_args([])
    assert exit_.value.code == 2
    assert "--data" in capsys.readouterr().err
    assert not hasattr(p.parse_args(["--data", "d"]), "help_config")


def test_command_parser_errors_are_one_line_status_1_in_every_subparser(capsys):
    from lean_dojo_v2.config.cli import CommandParser, UsageExit

    top = CommandParser(prog="tool")
    sub = top.add_subparsers(dest="cmd").add_parser("run")
    sub.add_argument("-n", type=int)
    sub.add_argument("--mode", choices=["a", "b"])
    assert isinstance(sub, CommandParser)
    for argv, says in (
        (["run", "-n", "x"], "tool run: error: argument -n: invalid int value: 'x'"),
        (["run", "--mode", "c"], "tool run: error: argument --mode: invalid choice: 'c'"),
        (["walk"], "tool: error: argument cmd: invalid choice: 'walk'"),
    ):
        with pytest.raises(SystemExit) as exit_:
            top.parse_args(argv)
        assert isinstance(exit_.value, UsageExit) and exit_.value.code == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(says), err
        assert err.rstrip().endswith("--help'"), err
