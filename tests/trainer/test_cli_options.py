"""The options every training command shares (``trainer/cli_options.py``), the ``train`` parser
that registers each trainer's command, and the names ``trainer/cli.py`` still exports."""

from __future__ import annotations

import argparse

import pytest

from lean_dojo_v2.config.cli import add_config_options
from lean_dojo_v2.trainer.cli_options import (
    add_repo_option,
    add_run_options,
    repo_arg,
    repos_from_args,
    training_config_from_args,
)
from lean_dojo_v2.trainer.errors import TrainerError
from lean_dojo_v2.trainer.sft_config import SFTConfig


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="train toy")
    p.add_argument("--db")
    add_config_options(p, config_help="c", set_help="s")
    add_repo_option(p)
    add_run_options(p, force_help="f")
    return p


def test_force_is_overwrite_output_dir_and_wins_over_the_commands_values():
    args = _parser().parse_args(["--set", "lr=1e-4", "-o", "out-x"])
    cfg = training_config_from_args(args, SFTConfig, overwrite_output_dir=False)
    assert (cfg.lr, cfg.output_dir, cfg.overwrite_output_dir) == (1e-4, "out-x", False)
    args = _parser().parse_args(["--force"])
    cfg = training_config_from_args(args, SFTConfig, overwrite_output_dir=False)
    assert cfg.overwrite_output_dir is True


def test_run_options_and_help_config():
    args = _parser().parse_args(["--json", "--help-config"])
    assert args.json and args.help_config and not args.force
    p = argparse.ArgumentParser()
    add_run_options(p, force_help="f", help_config=None)
    with pytest.raises(SystemExit):
        p.parse_args(["--help-config"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://github.com/a/b@abc123", ("https://github.com/a/b", "abc123")),
        ("https://github.com/a/b", "https://github.com/a/b"),
        ("git@github.com:a/b", "git@github.com:a/b"),
        ("git@github.com:a/b@v1", ("git@github.com:a/b", "v1")),
    ],
)
def test_repo_arg(text, expected):
    assert repo_arg(text) == expected


def test_repos_need_a_database():
    p = _parser()
    assert repos_from_args(p.parse_args([])) is None
    args = p.parse_args(["--db", "x.db", "--repo", "u@c", "--repo", "v"])
    assert repos_from_args(args) == [("u", "c"), "v"]
    with pytest.raises(TrainerError, match="--repo selects repositories of --db"):
        repos_from_args(p.parse_args(["--repo", "u"]))


def test_train_registers_every_trainer_in_order(capsys):
    from lean_dojo_v2.cli import main

    assert main(["train"]) == 2
    out = capsys.readouterr().out
    names = ["sft", "premise-selector", "retrieval", "progress"]
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ")]
    assert [n for n in listed if n in names] == names, out
    with pytest.raises(SystemExit):
        main(["train", "sft", "--help"])
    assert "Fine-tune a causal LM" in capsys.readouterr().out
