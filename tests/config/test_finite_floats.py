"""Every float setting of every config is finite, and in range, before anything runs.

``--set lr=inf`` used to train and save NaN weights with status 0 (``nan`` was refused by
``lr > 0``, ``inf`` was not). The config system refuses ``nan``/``±inf`` for a float field
wherever the value comes from (YAML, ``--set``, a mapping, keywords, Python), unless the field
says ``metadata={"allow_inf": True}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from lean_dojo_v2.config.loading import (
    check_finite_floats,
    config_from_dict,
    load_config,
    replace_config,
)
from lean_dojo_v2.errors import ConfigError, ConfigValueError
from lean_dojo_v2.prover.search_config import SearchConfig
from lean_dojo_v2.trainer.premise_selector_config import PremiseSelectorConfig
from lean_dojo_v2.trainer.progress_config import ProgressConfig
from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
from lean_dojo_v2.trainer.sft_config import SFTConfig

NOT_FINITE = ["inf", "-inf", "nan", "1e999", "Infinity", "-NaN"]

FLOAT_FIELDS = [
    (SFTConfig, "lr"),
    (SFTConfig, "weight_decay"),
    (SFTConfig, "max_grad_norm"),
    (SFTConfig, "epochs_per_repo"),
    (SFTConfig, "lora_dropout"),
    (TrainingConfig, "lr"),
    (TrainingConfig, "temperature"),
    (TrainingConfig, "lambda_value"),
    (TrainingConfig, "gradient_clip_val"),
    (ProgressConfig, "learning_rate"),
    (ProgressConfig, "epochs"),
    (PremiseSelectorConfig, "lr"),
    (SearchConfig, "timeout"),
    (SearchConfig, "tactic_timeout"),
    (SearchConfig, "progress_weight"),
]


@pytest.mark.parametrize(("cls", "key"), FLOAT_FIELDS)
@pytest.mark.parametrize("text", NOT_FINITE)
def test_set_refuses_nan_and_inf_for_every_float_field(cls, key, text):
    with pytest.raises(ConfigValueError, match=rf"'{key}' \(from --set\).*finite number"):
        load_config(cls, overrides=[f"{key}={text}"])


@pytest.mark.parametrize(("cls", "key"), FLOAT_FIELDS)
def test_yaml_mapping_and_keywords_refuse_inf(cls, key, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"{key}: .inf\n", "utf-8")
    with pytest.raises(ConfigValueError, match=rf"'{key}' \(from {cfg}\).*finite number"):
        load_config(cls, cfg)
    with pytest.raises(ConfigValueError, match="finite number"):
        load_config(cls, overrides={key: math.inf})
    with pytest.raises(ConfigValueError, match="finite number"):
        load_config(cls, **{key: -math.inf})
    with pytest.raises(ConfigValueError, match="finite number"):
        config_from_dict(cls, {key: math.nan})
    with pytest.raises(ConfigValueError, match="finite number"):
        replace_config(cls(), **{key: math.inf})


@pytest.mark.parametrize(
    ("cls", "key"), [(SFTConfig, "lr"), (TrainingConfig, "lr"), (ProgressConfig, "learning_rate")]
)
def test_a_config_built_in_python_is_checked_too(cls, key):
    # Not through load_config: __post_init__ applies the same check (inf passes `lr > 0`).
    with pytest.raises(ConfigValueError, match=f"'{key}' must be a finite number"):
        cls(**{key: math.inf})
    with pytest.raises(ConfigValueError):
        cls(**{key: math.nan})


def test_premise_selector_config_built_in_python_is_checked_too():
    with pytest.raises(ConfigValueError, match="'lr' must be a finite number"):
        PremiseSelectorConfig(lr=math.inf)


def test_search_config_still_refuses_inf_in_python():
    # SearchConfig's own __post_init__ refused inf already; through load_config the refusal is
    # now the same ConfigValueError as every other config's.
    with pytest.raises(ConfigError, match="finite"):
        SearchConfig(timeout=math.inf)
    with pytest.raises(ConfigValueError, match="'timeout'"):
        load_config(SearchConfig, overrides=["timeout=inf"])


@pytest.mark.parametrize(
    ("key", "text"),
    [("weight_decay", "-0.1"), ("max_grad_norm", "-1")],
)
def test_sft_ranges_the_post_init_did_not_check(key, text):
    with pytest.raises(ConfigValueError, match=f"'{key}' must be"):
        load_config(SFTConfig, overrides=[f"{key}={text}"])


def test_finite_values_and_none_still_load():
    assert load_config(SFTConfig, overrides=["lr=1e-3", "max_grad_norm=0"]).lr == 1e-3
    assert (
        load_config(TrainingConfig, overrides=["gradient_clip_val=none"]).gradient_clip_val is None
    )
    assert load_config(SearchConfig, overrides=["progress_weight=none"]).progress_weight is None
    assert load_config(ProgressConfig, overrides=["learning_rate=2"]).learning_rate == 2.0


@dataclass
class ToyConfig:
    """A toy.

    Parameters:
        > Parameters of the toy

        budget (`float`, *optional*, defaults to `1.0`):
            Seconds; `inf` means no limit.
        scale (`float`, *optional*, defaults to `1.0`):
            A factor.
        weights (`list[float]`, *optional*, defaults to `[]`):
            Factors.
        named (`dict[str, float]`, *optional*, defaults to `{}`):
            Named factors.
    """

    budget: float = field(default=1.0, metadata={"allow_inf": True})
    scale: float = 1.0
    weights: list[float] = field(default_factory=list)
    named: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_finite_floats(self)


def test_a_field_may_allow_inf_but_never_nan():
    assert load_config(ToyConfig, overrides=["budget=inf"]).budget == math.inf
    assert load_config(ToyConfig, budget=-math.inf).budget == -math.inf
    assert ToyConfig(budget=math.inf).budget == math.inf
    with pytest.raises(ConfigValueError, match="'budget'.*finite"):
        load_config(ToyConfig, overrides=["budget=nan"])
    with pytest.raises(ConfigValueError, match="'budget'"):
        ToyConfig(budget=math.nan)
    with pytest.raises(ConfigValueError, match="'scale'"):
        load_config(ToyConfig, overrides=["scale=inf"])


def test_floats_inside_lists_and_mappings_are_checked():
    with pytest.raises(ConfigValueError, match="'weights'.*finite"):
        load_config(ToyConfig, overrides=["weights=1,inf"])
    with pytest.raises(ConfigValueError, match="'named'.*finite"):
        load_config(ToyConfig, overrides=["named={a: .nan}"])
    with pytest.raises(ConfigValueError, match="'weights'"):
        ToyConfig(weights=[1.0, math.inf])
    with pytest.raises(ConfigValueError, match="'named'"):
        ToyConfig(named={"a": math.nan})
    assert load_config(ToyConfig, overrides=["weights=1,2.5"]).weights == [1.0, 2.5]
