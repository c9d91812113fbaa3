"""The TRL arguments both causal-LM trainers derive from their config: activation checkpointing
always named (TRL's configs turn it on by default, ~30-40 % slower), under the name this
transformers takes (5.x renamed ``gradient_checkpointing`` and warns on the old name); in
``trl_args`` either spelling wins over the config."""

from __future__ import annotations

import warnings

import pytest

from lean_dojo_v2.trainer.causal_lm_loading import LoadedCausalLM
from lean_dojo_v2.trainer.numerics import TrainingPrecision
from lean_dojo_v2.trainer.sft_config import SFTConfig
from lean_dojo_v2.trainer.trl_config import apply_trl_args, training_arguments


def _trl_config(tmp_path, cfg: SFTConfig):
    from trl import SFTConfig as TRLConfig

    loaded = LoadedCausalLM(None, None, "cpu", TrainingPrecision("float32", None, False))
    args = training_arguments(cfg, 1, tmp_path, loaded)
    args = apply_trl_args(args, TRLConfig, cfg.trl_args, "trl.SFTConfig")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*checkpointing.*", category=FutureWarning)
        return TRLConfig(**args)


@pytest.mark.parametrize("on", [True, False])
def test_checkpointing_follows_the_config_without_a_deprecation_warning(tmp_path, on):
    trl = _trl_config(tmp_path, SFTConfig(output_dir=str(tmp_path), gradient_checkpointing=on))
    assert bool(trl.gradient_checkpointing) is on
    if hasattr(trl, "activation_checkpointing"):
        assert bool(trl.activation_checkpointing) is on


@pytest.mark.parametrize("key", ["gradient_checkpointing", "activation_checkpointing"])
def test_trl_args_turn_it_on_under_either_name(tmp_path, key):
    trl = _trl_config(tmp_path, SFTConfig(output_dir=str(tmp_path), trl_args={key: True}))
    assert trl.gradient_checkpointing


def test_trl_args_kwargs_under_the_old_name_reach_the_new_one(tmp_path):
    kwargs = {"use_reentrant": False}
    cfg = SFTConfig(
        output_dir=str(tmp_path),
        gradient_checkpointing=True,
        trl_args={"gradient_checkpointing_kwargs": kwargs},
    )
    trl = _trl_config(tmp_path, cfg)
    assert trl.gradient_checkpointing_kwargs == kwargs
