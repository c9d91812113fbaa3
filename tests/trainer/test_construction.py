"""Every trainer is built the same way: ``XTrainer(config)`` (keywords then change the config),
``XTrainer.from_config(config)``, ``XTrainer.from_config("config.yaml")`` and ``XTrainer.from_config({...})``, next to upstream
LeanDojo-v2's keyword constructor. Nothing is loaded or written by a constructor."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_dojo_v2.config.loading import dump_config
from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.trainer.grpo_config import GRPOConfig
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer
from lean_dojo_v2.trainer.premise_selector import PremiseSelectorTrainer
from lean_dojo_v2.trainer.premise_selector_config import PremiseSelectorConfig
from lean_dojo_v2.trainer.progress_config import ProgressConfig
from lean_dojo_v2.trainer.progress_trainer import ProgressTrainer
from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer
from lean_dojo_v2.trainer.sft_config import SFTConfig
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

TRAINERS = [
    (SFTTrainer, SFTConfig, {"lr": 1e-4, "max_steps": 3}),
    (GRPOTrainer, GRPOConfig, {"lr": 1e-5, "algorithm": "dapo"}),
    (RetrievalTrainer, TrainingConfig, {"lr": 1e-5, "max_epochs": 2}),
    (ProgressTrainer, ProgressConfig, {"learning_rate": 1e-4, "epochs": 1.0}),
    (PremiseSelectorTrainer, PremiseSelectorConfig, {"lr": 1e-4, "ks": [4, 8]}),
]
IDS = [t[0].__name__ for t in TRAINERS]


@pytest.mark.parametrize(("trainer_cls", "config_cls", "values"), TRAINERS, ids=IDS)
def test_config_first_and_from_config_a_config_or_its_yaml_file(
    trainer_cls, config_cls, values, tmp_path: Path
) -> None:
    config = config_cls(output_dir=str(tmp_path / "out"), **values)
    assert trainer_cls(config).config == config
    assert trainer_cls.from_config(config).config == config
    path = dump_config(config, tmp_path / "config.yaml")
    loaded = trainer_cls.from_config(path)
    assert type(loaded) is trainer_cls and loaded.config == config
    assert trainer_cls.from_config(str(path)).config == config
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]  # nothing written


@pytest.mark.parametrize(("trainer_cls", "config_cls", "values"), TRAINERS, ids=IDS)
def test_from_config_a_dict_of_its_keys(trainer_cls, config_cls, values, tmp_path: Path) -> None:
    from dataclasses import asdict

    from lean_dojo_v2.errors import UnknownConfigKeyError

    config = config_cls(output_dir=str(tmp_path / "out"), **values)
    keys = {k: v for k, v in asdict(config).items() if k in {"output_dir", *values}}
    assert trainer_cls.from_config(keys).config == config
    with pytest.raises(UnknownConfigKeyError, match="no_such_key"):
        trainer_cls.from_config({**keys, "no_such_key": 1})
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(("trainer_cls", "config_cls", "values"), TRAINERS, ids=IDS)
def test_from_config_of_something_else_says_how_to_build_one(trainer_cls, config_cls, values):
    with pytest.raises(ConfigValueError) as exc:
        trainer_cls.from_config(42)
    text = str(exc.value)
    assert f"takes a config of type {config_cls.__name__}, got int" in text
    assert "YAML" in text and "\n" not in text


@pytest.mark.parametrize("trainer_cls", [SFTTrainer, GRPOTrainer, ProgressTrainer])
def test_keywords_change_the_config_given(trainer_cls, tmp_path: Path) -> None:
    config = trainer_cls.config_class(output_dir=str(tmp_path / "a"))
    changed = trainer_cls(config, output_dir=str(tmp_path / "b"), seed=7)
    assert changed.config.output_dir == str(tmp_path / "b") and changed.config.seed == 7
    assert config.output_dir == str(tmp_path / "a")  # the config given is left as it was
    # Positional arguments left at their defaults keep the config's values.
    assert trainer_cls(config).config.output_dir == str(tmp_path / "a")


def test_a_changed_value_is_checked_like_any_other(tmp_path: Path) -> None:
    config = SFTConfig(output_dir=str(tmp_path / "a"))
    with pytest.raises(ConfigValueError, match="lr"):
        SFTTrainer(config, lr=-1.0)
    with pytest.raises(ConfigValueError, match="GRPOConfig, got SFTConfig"):
        GRPOTrainer(config)


def test_grpo_from_config_passes_the_reward_function_on(tmp_path: Path) -> None:
    def reward_func(completions, **kwargs):
        return [0.0] * len(completions)

    config = GRPOConfig(output_dir=str(tmp_path / "g"))
    trainer = GRPOTrainer.from_config(config, reward_func)
    assert trainer.reward_func is reward_func and trainer.config == config
    assert GRPOTrainer.from_config(config, reward_func=reward_func).reward_func is reward_func


def test_upstream_keyword_constructors_still_build_the_same_config(tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    sft = SFTTrainer(model_name=None, output_dir=out, epochs_per_repo=1, batch_size=2, lr=2e-5)
    assert sft.config == SFTConfig(output_dir=out, batch_size=2)
    grpo = GRPOTrainer(model_name=None, reward_func=None, output_dir=out, batch_size=8)
    assert grpo.config == GRPOConfig(output_dir=out)
    progress = ProgressTrainer(tmp_path / "rows.jsonl", model_name=None, output_dir=out)
    assert progress.config == ProgressConfig(
        data_path=str(tmp_path / "rows.jsonl"), model_name=None, output_dir=out
    )
