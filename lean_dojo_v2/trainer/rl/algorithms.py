"""The GRPO family by published name: each algorithm is a set of ``trl.GRPOConfig`` settings plus,
where TRL lacks a piece, our extensions (:class:`GRPOExtensions`, carried out by
:class:`~lean_dojo_v2.trainer.rl.trl_trainer.LeanGRPOTrainer`).

``resolve_algorithm("dapo", {"epsilon_high": 0.3})`` returns a :class:`ResolvedAlgorithm`; its
``trl_settings`` go into ``trl.GRPOConfig(**...)``, its ``extensions`` into ``LeanGRPOTrainer``,
its ``extra_rewards`` are reward names to add to the run's reward functions. Every recipe spells
out all the settings in :data:`ALGORITHM_TRL_KEYS`, so switching algorithm never inherits another
one's (or TRL's changing) defaults. Equations and sources: ``docs/grpo_algorithms.md``.

No torch or TRL import here: the registry is read by ``--help``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...errors import ConfigValueError, UnknownConfigKeyError
from ..errors import UnknownAlgorithmError

ADVANTAGE_MODES = ("trl", "dgpo", "winsorized", "rank")
KL_ESTIMATORS = ("k3",)


@dataclass
class GRPOExtensions:
    """What ``LeanGRPOTrainer`` adds to TRL's GRPO. Every field works with every algorithm.

    Args:
        dynamic_sampling: DAPO's dynamic sampling: before the update, drop the groups whose
            rewards are all equal (no signal) and refill the batch from new prompts.
        max_refill_rounds: at most this many extra generation rounds per batch; if the batch is
            still short, flat groups fill it (with zero advantage) so its shape holds.
        advantage: ``"trl"`` keeps TRL's advantage (``scale_rewards``,
            ``multi_objective_aggregation``); ``"dgpo"`` difficulty-aware (MAD-normalised, question
            weights favouring hard questions); ``"winsorized"`` rewards clipped at the group's
            ``winsor_quantile`` / ``1 − winsor_quantile`` quantiles, then standardised; ``"rank"``
            centred ranks in the group scaled to [−1, 1].
        dgpo_temperature: ``T`` of DGPO's question weights ``B·softmax(−mean_q / T)``; larger is
            flatter (all weights → 1).
        winsor_quantile: the lower quantile ``q`` of ``advantage="winsorized"``, in [0, 0.5).
        dpo_weight: weight of the DPO loss on each group's (best, worst) completion pair added to
            the GRPO loss (``grpo_dpo``); 0 turns it off.
        dpo_beta: the DPO temperature β of that loss.
        kl_estimator: the KL estimator of the ``beta`` term. TRL computes Schulman's k3
            (``exp(ref − logp) − (ref − logp) − 1``), the only value accepted.
    """

    dynamic_sampling: bool = False
    max_refill_rounds: int = 3
    advantage: str = "trl"
    dgpo_temperature: float = 1.0
    winsor_quantile: float = 0.1
    dpo_weight: float = 0.0
    dpo_beta: float = 0.1
    kl_estimator: str = "k3"

    def __post_init__(self) -> None:
        _check_bool("dynamic_sampling", self.dynamic_sampling)
        _check_number("max_refill_rounds", self.max_refill_rounds, integer=True, minimum=0)
        _check_choice("advantage", self.advantage, ADVANTAGE_MODES)
        _check_number("dgpo_temperature", self.dgpo_temperature, positive=True)
        _check_number("winsor_quantile", self.winsor_quantile, minimum=0.0)
        if self.winsor_quantile >= 0.5:
            raise ConfigValueError(
                f"winsor_quantile must be in [0, 0.5), got {self.winsor_quantile!r}"
            )
        _check_number("dpo_weight", self.dpo_weight, minimum=0.0)
        _check_number("dpo_beta", self.dpo_beta, positive=True)
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ConfigValueError(
                f"kl_estimator {self.kl_estimator!r} is not available: TRL's KL term is Schulman's "
                "k3 estimator (exp(ref - logp) - (ref - logp) - 1); valid values: k3"
            )


EXTENSION_KEYS = tuple(f.name for f in dataclasses.fields(GRPOExtensions))

# TRL settings an algorithm decides (and an override may change); the rest of trl.GRPOConfig
# (batch sizes, generation, vLLM, ...) belongs to the run's config.
_TRL_CHOICES: dict[str, tuple[str, ...]] = {
    "loss_type": ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"),
    "scale_rewards": ("group", "batch", "none"),
    "importance_sampling_level": ("token", "sequence"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
}
_TRL_NUMBERS = ("beta", "epsilon", "sapo_temperature_pos", "sapo_temperature_neg")
_TRL_OPTIONAL_NUMBERS = ("epsilon_high", "delta", "off_policy_mask_threshold")
_TRL_BOOLS = ("mask_truncated_completions", "use_bias_correction_kl")
ALGORITHM_TRL_KEYS = (
    "loss_type",
    "beta",
    "epsilon",
    "epsilon_high",
    "delta",
    "scale_rewards",
    "importance_sampling_level",
    "mask_truncated_completions",
    "multi_objective_aggregation",
    "sapo_temperature_pos",
    "sapo_temperature_neg",
    "off_policy_mask_threshold",
    "use_bias_correction_kl",
)
# Not a TRL field: GSPO wants steps_per_generation = factor × gradient_accumulation_steps, which
# only the run's config can compute (it owns gradient_accumulation_steps).
STEPS_FACTOR_KEY = "steps_per_generation_factor"

# TRL 1.16's defaults for the keys above: the base every recipe starts from.
_TRL_BASE: dict[str, Any] = {
    "loss_type": "dapo",
    "beta": 0.0,
    "epsilon": 0.2,
    "epsilon_high": None,
    "delta": None,
    "scale_rewards": "group",
    "importance_sampling_level": "token",
    "mask_truncated_completions": False,
    "multi_objective_aggregation": "sum_then_normalize",
    "sapo_temperature_pos": 1.0,
    "sapo_temperature_neg": 1.05,
    "off_policy_mask_threshold": None,
    # TRL weights the k3 KL by the token's ratio (DeepSeek-V3.2's unbiased KL gradient); on
    # policy the KL value is unchanged, only its gradient.
    "use_bias_correction_kl": True,
}


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registry entry: what it changes relative to TRL's defaults."""

    name: str
    summary: str
    trl: Mapping[str, Any] = field(default_factory=dict)
    extensions: Mapping[str, Any] = field(default_factory=dict)
    extra_rewards: tuple[str, ...] = ()
    steps_per_generation_factor: int | None = None
    native: bool = True  # expressed by TRL settings alone


@dataclass
class ResolvedAlgorithm:
    """An algorithm with overrides applied, ready for ``trl.GRPOConfig`` and ``LeanGRPOTrainer``.

    ``steps_per_generation_factor``: when set, the run should use
    ``steps_per_generation = factor × gradient_accumulation_steps`` (GSPO); None keeps TRL's
    default (``steps_per_generation = gradient_accumulation_steps``)."""

    name: str
    trl_settings: dict[str, Any]
    extensions: GRPOExtensions
    extra_rewards: list[str]
    steps_per_generation_factor: int | None = None


ALGORITHMS: Mapping[str, AlgorithmSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            AlgorithmSpec(
                "grpo",
                "GRPO (DeepSeekMath): clipped surrogate, group mean/std advantage, per-sequence "
                "mean, KL beta=0.04",
                trl={"loss_type": "grpo", "scale_rewards": "group", "beta": 0.04},
            ),
            AlgorithmSpec(
                "dr_grpo",
                "Dr. GRPO: no std division, loss divided by the constant max_completion_length, "
                "beta=0",
                trl={"loss_type": "dr_grpo", "scale_rewards": "none", "beta": 0.0},
            ),
            AlgorithmSpec(
                "dapo",
                "DAPO: clip-higher (0.2/0.28), token-level loss, truncated completions masked, "
                "dynamic sampling, soft overlong reward, beta=0",
                trl={
                    "loss_type": "dapo",
                    "epsilon": 0.2,
                    "epsilon_high": 0.28,
                    "mask_truncated_completions": True,
                    "beta": 0.0,
                },
                extensions={"dynamic_sampling": True},
                extra_rewards=("overlong",),
                native=False,
            ),
            AlgorithmSpec(
                "bnpo",
                "BNPO: token-level loss normalised over the local batch, beta=0",
                trl={"loss_type": "bnpo", "beta": 0.0},
            ),
            AlgorithmSpec(
                "gspo",
                "GSPO: sequence-level importance ratio and clipping (eps 3e-4/4e-4), beta=0, "
                "4x steps_per_generation",
                trl={
                    "loss_type": "grpo",
                    "importance_sampling_level": "sequence",
                    "beta": 0.0,
                    "epsilon": 3e-4,
                    "epsilon_high": 4e-4,
                },
                steps_per_generation_factor=4,
            ),
            AlgorithmSpec(
                "cispo",
                "CISPO (MiniMax-M1): clip the importance weight (max 5.0), not the surrogate; "
                "token-level loss",
                trl={"loss_type": "cispo", "epsilon_high": 5.0, "beta": 0.0},
            ),
            AlgorithmSpec(
                "sapo",
                "SAPO: a soft sigmoid gate on the ratio instead of hard clipping",
                trl={"loss_type": "sapo", "beta": 0.0},
            ),
            AlgorithmSpec(
                "gdpo",
                "GDPO: each reward normalised within its group, weighted sum, then normalised "
                "over the batch",
                trl={"multi_objective_aggregation": "normalize_then_sum", "beta": 0.0},
            ),
            AlgorithmSpec(
                "dgpo",
                "DGPO (difficulty-aware): advantage / group mean absolute deviation, times "
                "question weights B*softmax(-mean/T) favouring hard questions",
                trl={"loss_type": "dapo", "scale_rewards": "none", "beta": 0.0},
                extensions={"advantage": "dgpo"},
                native=False,
            ),
            AlgorithmSpec(
                "grpo_dpo",
                "GRPO + DPO (upstream LeanDojo-v2's 'Direct GRPO'): GRPO plus dpo_weight x a DPO loss on each "
                "group's best/worst completions",
                trl={"loss_type": "grpo", "scale_rewards": "group", "beta": 0.04},
                extensions={"dpo_weight": 0.1, "dpo_beta": 0.1},
                native=False,
            ),
        )
    }
)


def algorithm_names() -> list[str]:
    """The registered names, in registry order (TRL-native first, then ours)."""
    return list(ALGORITHMS)


def describe_algorithms() -> str:
    """One line per algorithm, for ``--help``."""
    width = max(map(len, ALGORITHMS))
    return "\n".join(f"{spec.name:<{width}}  {spec.summary}" for spec in ALGORITHMS.values())


def valid_override_keys() -> list[str]:
    """Every key ``resolve_algorithm`` accepts in ``overrides``."""
    return [*ALGORITHM_TRL_KEYS, STEPS_FACTOR_KEY, *EXTENSION_KEYS]


def resolve_algorithm(name: str, overrides: Mapping[str, Any] | None = None) -> ResolvedAlgorithm:
    """The algorithm ``name`` with ``overrides`` (TRL setting or extension field → value) applied.

    Raises :class:`UnknownAlgorithmError` for an unknown name, :class:`UnknownConfigKeyError` for an
    override key that is neither, :class:`ConfigValueError` for a value out of range."""
    spec = ALGORITHMS.get(name)
    if spec is None:
        raise UnknownAlgorithmError(name, algorithm_names())
    overrides = dict(overrides or {})
    valid = valid_override_keys()
    for key in overrides:
        if key not in valid:
            raise UnknownConfigKeyError(
                key, valid, source="algorithm overrides", config=f"algorithm {name!r}"
            )

    trl_settings = {**_TRL_BASE, **spec.trl}
    ext_values = dict(spec.extensions)
    factor = spec.steps_per_generation_factor
    for key, value in overrides.items():
        if key in ALGORITHM_TRL_KEYS:
            trl_settings[key] = value
        elif key == STEPS_FACTOR_KEY:
            factor = value
        else:
            ext_values[key] = value
    _check_trl_settings(trl_settings)
    if factor is not None:
        _check_number(STEPS_FACTOR_KEY, factor, integer=True, minimum=1)
    extensions = GRPOExtensions(**ext_values)
    if (
        extensions.advantage != "trl"
        and trl_settings["multi_objective_aggregation"] == "normalize_then_sum"
    ):
        raise ConfigValueError(
            f"advantage={extensions.advantage!r} replaces TRL's advantage, so it cannot be combined "
            "with multi_objective_aggregation='normalize_then_sum' (GDPO); use advantage='trl' or "
            "multi_objective_aggregation='sum_then_normalize'"
        )
    return ResolvedAlgorithm(
        name=name,
        trl_settings=trl_settings,
        extensions=extensions,
        extra_rewards=list(spec.extra_rewards),
        steps_per_generation_factor=factor,
    )


def _check_trl_settings(settings: Mapping[str, Any]) -> None:
    for key, choices in _TRL_CHOICES.items():
        _check_choice(key, settings[key], choices)
    for key in _TRL_NUMBERS:
        _check_number(key, settings[key], minimum=0.0)
    for key in _TRL_OPTIONAL_NUMBERS:
        if settings[key] is not None:
            _check_number(key, settings[key], minimum=0.0)
    for key in _TRL_BOOLS:
        _check_bool(key, settings[key])
    if settings["loss_type"] == "luspo" and settings["importance_sampling_level"] != "sequence":
        raise ConfigValueError(
            "loss_type='luspo' needs importance_sampling_level='sequence' (it is a GSPO variant)"
        )


def _check_choice(key: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigValueError(f"{key}={value!r} is not valid; valid values: {', '.join(choices)}")


def _check_bool(key: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigValueError(f"{key} must be true or false, got {value!r}")


def _check_number(
    key: str,
    value: object,
    *,
    integer: bool = False,
    minimum: float | None = None,
    positive: bool = False,
) -> None:
    import math

    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "a whole number" if integer else "a number"
        raise ConfigValueError(f"{key} must be {kind}, got {value!r}")
    if not math.isfinite(value):
        raise ConfigValueError(f"{key} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ConfigValueError(f"{key} must be > 0, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigValueError(f"{key} must be >= {minimum}, got {value!r}")
