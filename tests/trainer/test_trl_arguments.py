"""The TRL arguments both causal-LM trainers derive from their config: activation checkpointing
always named (TRL's configs turn it on by default, ~30-40 % slower), under the name this
transformers takes (5.x renamed ``gradient_checkpointing`` and warns on the old name); in
``trl_args`` either spelling wins over the config. A ``trl_args`` value is checked against the
type of TRL's own field (one line naming key, value and type)."""

from __future__ import annotations

import warnings

import pytest

from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.trainer.causal_lm_loading import LoadedCausalLM
from lean_dojo_v2.trainer.numerics import TrainingPrecision
from lean_dojo_v2.trainer.sft_config import SFTConfig
from lean_dojo_v2.trainer.trl_config import (
    apply_trl_args,
    check_trl_arg_types,
    training_arguments,
)


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


# ---------------------------------------------------------------------- value types


def _trl_classes() -> list[type]:
    import transformers
    from trl import GRPOConfig, SFTConfig

    return [SFTConfig, GRPOConfig, transformers.TrainingArguments]


def test_every_default_of_trls_configs_fits_its_own_field_type():
    """The types come from TRL's own fields: each default value passes the check."""
    import dataclasses

    for cls in _trl_classes():
        defaults = {
            f.name: f.default
            for f in dataclasses.fields(cls)
            if f.init and f.default is not dataclasses.MISSING
        }
        assert check_trl_arg_types(cls, defaults) == defaults, cls


@pytest.mark.parametrize(
    ("trl_args", "taken"),
    [
        ({"fsdp": True}, {"fsdp": True}),  # the parser's const: `--fsdp` alone
        ({"fsdp": "full_shard"}, {"fsdp": "full_shard"}),
        ({"adam_epsilon": "1e-8"}, {"adam_epsilon": 1e-8}),  # YAML 1.1 reads 1e-8 as text
        ({"learning_rate": 1}, {"learning_rate": 1}),
        ({"report_to": ["none"]}, {"report_to": ["none"]}),
        ({"eval_strategy": "steps", "log_level": "info"}, None),
        ({"gradient_checkpointing_kwargs": {"use_reentrant": False}}, None),
        ({"ddp_backend": None}, None),
    ],
)
def test_values_of_trls_types_are_taken(trl_args, taken):
    from trl import SFTConfig as TRLConfig

    assert check_trl_arg_types(TRLConfig, trl_args) == (taken or trl_args)


@pytest.mark.parametrize(
    ("trl_args", "words"),
    [
        ({"fsdp": 5}, "trl_args fsdp expects str | None | bool, got 5"),
        ({"ddp_timeout": "soon"}, "trl_args ddp_timeout expects int, got 'soon'"),
        ({"use_cpu": 1}, "trl_args use_cpu expects bool, got 1"),
        ({"max_length": True}, "trl_args max_length expects int | None, got True"),
        ({"report_to": [1]}, "trl_args report_to expects None | str | list[str], got [1]"),
        ({"log_level": "loud"}, "trl_args log_level must be one of 'detail', 'debug'"),
        ({"torch_compile_mode": False}, "trl_args torch_compile_mode expects str | None"),
    ],
)
def test_a_value_of_another_type_is_one_line_naming_key_value_and_type(tmp_path, trl_args, words):
    from trl import SFTConfig as TRLConfig

    with pytest.raises(ConfigValueError) as exc:
        apply_trl_args({}, TRLConfig, trl_args, "trl.SFTConfig")
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_the_progress_trainers_trainer_args_are_named_as_such():
    import transformers

    with pytest.raises(ConfigValueError, match="trainer_args ddp_timeout expects int"):
        apply_trl_args(
            {}, transformers.TrainingArguments, {"ddp_timeout": "soon"}, "x", source="trainer_args"
        )


def test_yaml_text_for_a_number_passes_the_range_check_and_reaches_trl_as_a_number(tmp_path):
    from lean_dojo_v2.config.loading import load_config

    cfg = load_config(SFTConfig, None, [f"output_dir={tmp_path}", "trl_args={adam_epsilon: 1e-8}"])
    trl = _trl_config(tmp_path, cfg)
    assert trl.adam_epsilon == 1e-8
