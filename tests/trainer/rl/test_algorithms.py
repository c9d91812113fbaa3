"""The GRPO algorithm registry: names, recipes, overrides and their errors, and that TRL accepts
every recipe (a ``trl.GRPOConfig`` is built for each)."""

from __future__ import annotations

import pytest

from lean_dojo_v2.errors import ConfigValueError, UnknownConfigKeyError
from lean_dojo_v2.trainer.errors import TrainerError, UnknownAlgorithmError
from lean_dojo_v2.trainer.rl.algorithms import (
    ALGORITHMS,
    GRPOExtensions,
    algorithm_names,
    describe_algorithms,
    resolve_algorithm,
    valid_override_keys,
)

NAMES = ["grpo", "dr_grpo", "dapo", "bnpo", "gspo", "cispo", "sapo", "gdpo", "dgpo", "grpo_dpo"]


def test_names_and_help() -> None:
    assert algorithm_names() == NAMES
    lines = describe_algorithms().splitlines()
    assert len(lines) == len(NAMES)
    for name, line in zip(NAMES, lines, strict=True):
        assert line.split()[0] == name and len(line.split()) > 3


# The settings each published recipe must carry (grpo_family.md, TRL's paper index).
RECIPES = {
    "grpo": {"loss_type": "grpo", "scale_rewards": "group", "beta": 0.04},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none", "beta": 0.0},
    "dapo": {
        "loss_type": "dapo",
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "mask_truncated_completions": True,
        "beta": 0.0,
    },
    "bnpo": {"loss_type": "bnpo"},
    "gspo": {
        "loss_type": "grpo",
        "importance_sampling_level": "sequence",
        "beta": 0.0,
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
    },
    "cispo": {"loss_type": "cispo", "epsilon_high": 5.0},
    "sapo": {"loss_type": "sapo"},
    "gdpo": {"multi_objective_aggregation": "normalize_then_sum"},
    "dgpo": {"beta": 0.0},
    "grpo_dpo": {"loss_type": "grpo", "scale_rewards": "group", "beta": 0.04},
}


@pytest.mark.parametrize("name", NAMES)
def test_recipe_settings(name: str) -> None:
    resolved = resolve_algorithm(name)
    assert resolved.name == name
    for key, value in RECIPES[name].items():
        assert resolved.trl_settings[key] == value, key
    # Every recipe spells out the same keys, so switching algorithm inherits nothing.
    assert set(resolved.trl_settings) == set(resolve_algorithm("grpo").trl_settings)


def test_our_extensions() -> None:
    dapo = resolve_algorithm("dapo")
    assert dapo.extensions.dynamic_sampling and dapo.extra_rewards == ["overlong"]
    assert resolve_algorithm("dgpo").extensions.advantage == "dgpo"
    gd = resolve_algorithm("grpo_dpo").extensions
    assert gd.dpo_weight > 0 and gd.dpo_beta > 0
    assert resolve_algorithm("gspo").steps_per_generation_factor == 4
    for name in ("grpo", "dr_grpo", "bnpo", "cispo", "sapo", "gdpo", "gspo"):
        assert ALGORITHMS[name].native
        resolved = resolve_algorithm(name)
        assert resolved.extensions == GRPOExtensions() and resolved.extra_rewards == []


@pytest.mark.parametrize("name", NAMES)
def test_trl_accepts_every_recipe(name: str, tmp_path) -> None:
    from trl import GRPOConfig

    resolved = resolve_algorithm(name)
    config = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        use_cpu=True,
        report_to=[],
        **resolved.trl_settings,
    )
    for key, value in resolved.trl_settings.items():
        assert getattr(config, key) == value, key


def test_overrides_apply_to_either_side() -> None:
    resolved = resolve_algorithm(
        "grpo",
        {"epsilon_high": 0.3, "advantage": "rank", "dynamic_sampling": True, "beta": 0.0},
    )
    assert resolved.trl_settings["epsilon_high"] == 0.3 and resolved.trl_settings["beta"] == 0.0
    assert resolved.extensions.advantage == "rank" and resolved.extensions.dynamic_sampling
    assert (
        resolve_algorithm("dapo", {"dynamic_sampling": False}).extensions.dynamic_sampling is False
    )
    assert (
        resolve_algorithm("grpo", {"steps_per_generation_factor": 2}).steps_per_generation_factor
        == 2
    )
    # The registry itself is never changed by an override.
    assert resolve_algorithm("grpo").trl_settings["epsilon_high"] is None


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_unknown_algorithm_lists_the_names() -> None:
    with pytest.raises(UnknownAlgorithmError) as info:
        resolve_algorithm("dgrpo")
    text = _one_line(info.value)
    assert "'dgrpo'" in text and all(name in text for name in NAMES)
    assert isinstance(info.value, TrainerError) and isinstance(info.value, ValueError)
    assert info.value.valid == NAMES


def test_unknown_override_key_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownConfigKeyError) as info:
        resolve_algorithm("dapo", {"epsilon_hi": 0.3})
    text = _one_line(info.value)
    assert "'epsilon_hi'" in text and "epsilon_high" in text and "dynamic_sampling" in text
    assert info.value.valid == valid_override_keys()


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"kl_estimator": "k1"}, ["k3", "Schulman"]),
        ({"advantage": "zscore"}, ["trl", "dgpo", "winsorized", "rank"]),
        ({"loss_type": "ppo"}, ["grpo", "dr_grpo", "dapo"]),
        ({"scale_rewards": "std"}, ["group", "batch", "none"]),
        ({"winsor_quantile": 0.5}, ["[0, 0.5)"]),
        ({"dgpo_temperature": 0.0}, ["> 0"]),
        ({"max_refill_rounds": -1}, [">= 0"]),
        ({"max_refill_rounds": 1.5}, ["whole number"]),
        ({"dynamic_sampling": "yes"}, ["true or false"]),
        ({"beta": float("nan")}, ["finite"]),
        ({"steps_per_generation_factor": 0}, [">= 1"]),
    ],
)
def test_bad_values_are_one_line_errors(overrides: dict, words: list[str]) -> None:
    with pytest.raises(ConfigValueError) as info:
        resolve_algorithm("grpo", overrides)
    text = _one_line(info.value)
    assert all(word in text for word in words), text


def test_advantage_option_conflicts_with_gdpo() -> None:
    with pytest.raises(ConfigValueError, match="normalize_then_sum"):
        resolve_algorithm("gdpo", {"advantage": "dgpo"})
    # Any other algorithm takes any advantage option.
    for mode in ("dgpo", "winsorized", "rank"):
        assert resolve_algorithm("cispo", {"advantage": mode}).extensions.advantage == mode


def test_kl_estimator_k3_is_accepted() -> None:
    assert resolve_algorithm("grpo", {"kl_estimator": "k3"}).extensions.kl_estimator == "k3"


def test_registry_needs_no_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import lean_dojo_v2.trainer.rl.algorithms as a; a.resolve_algorithm('dapo');"
        "print(sorted(m for m in ('torch', 'trl', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_algorithm_error_pickles() -> None:
    import pickle

    again = pickle.loads(pickle.dumps(UnknownAlgorithmError("x", NAMES)))
    assert str(again) == str(UnknownAlgorithmError("x", NAMES)) and again.valid == NAMES
