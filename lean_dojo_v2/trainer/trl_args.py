"""Layer 3 (trainer): TRL's config of a pass of the causal-LM trainers, and the checks of the
``trl_args`` a config adds to it.

When the config is built (no TRL import, before anything loads or is written):

- :data:`FORBIDDEN_TRL_ARGS`: keys that would write outside the run directory or report elsewhere
  than the config says (``output_dir``, ``logging_dir``, the Hub's keys, ``report_to``, ...). A
  run writes only under its own ``output_dir``, by the rules of :mod:`lean_dojo_v2.data.output_dir`;
  a ``trl_args`` key must not go around them. Each is refused with the config field to use instead.
- :data:`TRL_ARG_RANGES`: numbers TRL and transformers take without a range check of their own,
  or check only once training has started (``seed``, ``num_iterations``, batch sizes, ...).

When a pass's TRL config is made: :func:`training_arguments` (the values both trainers derive
from their config), :func:`apply_trl_args` (``trl_args`` over them; a name TRL's config does not
have is refused, listing the valid ones) and :func:`build_trl_config` (TRL's own refusals as one
line).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigValueError, UnknownConfigKeyError
from .run_dir import CHECKPOINTS, pass_name

if TYPE_CHECKING:
    from .causal_lm_config import CausalLMConfig
    from .causal_lm_loading import LoadedCausalLM

SEED_MAX = 2**32 - 1  # transformers.set_seed seeds numpy, whose seeds are 32-bit
# Far above any tactic or whole proof; a larger cap is a typo that would allocate that many
# generation slots before the model's own context refuses it.
MAX_COMPLETION_LENGTH = 131_072

_HUB = (
    "lean-dojo-v2 does not upload runs; upload output_dir yourself once the run is done "
    "(`hf upload REPO_ID OUTPUT_DIR`)"
)
_TRACKIO = "trackio is not a report_to choice here; use report_to (tensorboard, wandb or none)"

FORBIDDEN_TRL_ARGS: Mapping[str, str] = {
    "output_dir": "use the config's output_dir (-o DIR or --set output_dir=DIR): every file of a "
    "run goes under it, by its rules (new, empty or ours, else --force)",
    "logging_dir": "TensorBoard logs go to output_dir/logs; choose output_dir instead",
    "overwrite_output_dir": "use the config's overwrite_output_dir (the CLI's --force)",
    "resume_from_checkpoint": "a run resumes from its own output_dir (the config's resume)",
    "report_to": "use the config's report_to",
    "push_to_hub": _HUB,
    "log_completions_hub_repo": _HUB,
    "project": _TRACKIO,
    "trackio_space_id": _TRACKIO,
    "trackio_bucket_id": _TRACKIO,
    "trackio_static_space_id": _TRACKIO,
}


def _forbidden_reason(key: str) -> str | None:
    if key in FORBIDDEN_TRL_ARGS:
        return FORBIDDEN_TRL_ARGS[key]
    if key.startswith("hub_"):  # hub_model_id, hub_token, hub_strategy, ... and later ones
        return _HUB
    return None


# ---------------------------------------------------------------------- ranges


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(low: int, high: int | None = None) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and v >= low and (high is None or v <= high)


def _number(
    low: float, *, strict: bool = False, high: float | None = None, high_strict: bool = False
) -> Callable[[Any], bool]:
    def ok(v: Any) -> bool:
        if not _is_number(v) or (v <= low if strict else v < low):
            return False
        return high is None or (v < high if high_strict else v <= high)

    return ok


def _or_none(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


_AT_LEAST_1 = (_whole(1), "a whole number of at least 1")
_SEED = (_whole(0, SEED_MAX), f"a whole number from 0 to {SEED_MAX}")
_POSITIVE = (_number(0, strict=True), "a number above 0")
_NON_NEGATIVE = (_number(0), "a number of 0 or more")
_BETA = (_number(0, high=1, high_strict=True), "a number in [0, 1)")
_PROBABILITY = (_number(0, strict=True, high=1), "a number in (0, 1]")

TRL_ARG_RANGES: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "seed": _SEED,
    "data_seed": (_or_none(_SEED[0]), f"None or {_SEED[1]}"),
    "per_device_train_batch_size": _AT_LEAST_1,
    "per_device_eval_batch_size": _AT_LEAST_1,
    "gradient_accumulation_steps": _AT_LEAST_1,
    "num_iterations": _AT_LEAST_1,
    "steps_per_generation": (_or_none(_whole(1)), "None or a whole number of at least 1"),
    "generation_batch_size": (_or_none(_whole(1)), "None or a whole number of at least 1"),
    "num_generations": (_whole(2), "a whole number of at least 2 (a group)"),
    "num_generations_eval": (_or_none(_whole(2)), "None or a whole number of at least 2"),
    "max_completion_length": (
        _whole(1, MAX_COMPLETION_LENGTH),
        f"a whole number from 1 to {MAX_COMPLETION_LENGTH}",
    ),
    "max_length": (_or_none(_whole(1)), "None or a whole number of at least 1"),
    "num_train_epochs": _POSITIVE,
    "max_steps": (lambda v: _is_int(v) and (v == -1 or v >= 1), "-1 or a whole number >= 1"),
    "learning_rate": _POSITIVE,
    "warmup_steps": _NON_NEGATIVE,
    "weight_decay": _NON_NEGATIVE,
    "max_grad_norm": _NON_NEGATIVE,
    "adam_beta1": _BETA,
    "adam_beta2": _BETA,
    "adam_epsilon": _NON_NEGATIVE,
    "logging_steps": _POSITIVE,
    "save_steps": _POSITIVE,
    "eval_steps": (_or_none(_POSITIVE[0]), "None or a number above 0"),
    "save_total_limit": (_or_none(_whole(1)), "None or a whole number of at least 1"),
    "torch_empty_cache_steps": (_or_none(_whole(1)), "None or a whole number of at least 1"),
    "dataloader_num_workers": (_whole(0), "a whole number of 0 or more"),
    "temperature": _POSITIVE,
    "top_p": _PROBABILITY,
    "top_k": (_whole(0), "a whole number of 0 (off) or more"),
    "min_p": (_or_none(_number(0, high=1)), "None or a number in [0, 1]"),
    "repetition_penalty": _POSITIVE,
    "beta": _NON_NEGATIVE,
    "epsilon": _NON_NEGATIVE,
    "epsilon_high": (_or_none(_NON_NEGATIVE[0]), "None or a number of 0 or more"),
    "delta": (_or_none(_NON_NEGATIVE[0]), "None or a number of 0 or more"),
    "vllm_gpu_memory_utilization": _PROBABILITY,
}


def check_trl_arg_values(trl_args: Mapping[str, Any]) -> None:
    """Raise the one-line :class:`ConfigValueError` of the first ``trl_args`` key that writes
    outside the run directory (:data:`FORBIDDEN_TRL_ARGS`, every ``hub_*``) or whose value is
    out of the range TRL needs (:data:`TRL_ARG_RANGES`)."""
    for key, value in trl_args.items():
        reason = _forbidden_reason(str(key))
        if reason is not None:
            raise ConfigValueError(f"trl_args may not set {key!r}: {reason}")
        rule = TRL_ARG_RANGES.get(str(key))
        if rule is not None and not rule[0](value):
            raise ConfigValueError(
                f"trl_args {key} must be {rule[1]}, got {value!r}; fix or remove it in trl_args"
            )


# ---------------------------------------------------------------------- TRL's config of a pass


def training_arguments(
    cfg: CausalLMConfig, k: int, out: Path, loaded: LoadedCausalLM
) -> dict[str, Any]:
    """The ``transformers.TrainingArguments`` values of pass ``k`` both trainers derive from
    their config the same way (each adds its TRL config's own)."""
    on_cuda = loaded.target.startswith("cuda")
    autocast = loaded.precision.autocast
    reporters = [r for r in cfg.reporters if r != "tensorboard"]  # ours writes to logs/
    if "wandb" in reporters and importlib.util.find_spec("wandb") is None:
        raise ConfigValueError(
            "report_to has 'wandb' but the wandb package is not installed: "
            "`pip install wandb`, or remove it from report_to"
        )
    if cfg.deepspeed is not None and not Path(cfg.deepspeed).is_file():
        raise ConfigValueError(
            f"deepspeed config {cfg.deepspeed} does not exist; pass the path of a DeepSpeed "
            "JSON config (docs/training.md has examples)"
        )
    args = dict(
        output_dir=str(out / CHECKPOINTS / pass_name(k)),
        num_train_epochs=cfg.epochs_per_repo,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        learning_rate=cfg.lr,
        lr_scheduler_type=cfg.lr_scheduler_type,
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        # Autocast only: the weights the optimizer updates are float32 (trainer.numerics).
        bf16=autocast == "bf16",
        fp16=autocast == "fp16",
        use_cpu=not on_cuda,
        seed=cfg.seed,
        data_seed=cfg.seed,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        logging_strategy="steps",
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        # A NaN step loss is logged as NaN (not replaced by the mean): StopOnNonFinite stops.
        logging_nan_inf_filter=False,
        report_to=reporters or "none",
        run_name=cfg.run_name or Path(cfg.output_dir).name,
        disable_tqdm=not cfg.progress_bar,
        deepspeed=cfg.deepspeed,
    )
    # Always named: TRL's configs turn checkpointing on by default (about 30-40 % slower).
    args[checkpointing_argument()] = cfg.gradient_checkpointing
    return args


@functools.cache
def checkpointing_argument() -> str:
    """transformers 5.x renamed ``gradient_checkpointing`` to ``activation_checkpointing`` (the
    old name warns); the name this transformers takes."""
    import transformers

    names = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    if "activation_checkpointing" in names:
        return "activation_checkpointing"
    return "gradient_checkpointing"


def apply_trl_args(
    args: Mapping[str, Any], trl_config_cls: type, trl_args: Mapping[str, Any], name: str
) -> dict[str, Any]:
    """``args`` with the user's ``trl_args`` over them: an :class:`UnknownConfigKeyError` listing
    the valid names for the first key ``trl_config_cls`` (``trl.SFTConfig``, ``trl.GRPOConfig``,
    called ``name``) has not. The old and new spellings of checkpointing
    (``gradient_checkpointing*``, ``activation_checkpointing*``) land on the name this
    transformers takes, so either wins over the config's value."""
    valid = sorted(f.name for f in dataclasses.fields(trl_config_cls) if f.init)
    for key in trl_args:
        if key not in valid:
            raise UnknownConfigKeyError(key, valid, source="trl_args", config=name)
    old, new = "gradient_checkpointing", checkpointing_argument()
    out = dict(args)
    for key, value in trl_args.items():
        out[new + key[len(old) :] if key.startswith(old) else key] = value
    return out


def build_trl_config(trl_config_cls: type, args: Mapping[str, Any], name: str) -> Any:
    """``trl_config_cls(**args)``, TRL's own refusals of the values (its ``__post_init__``
    raises a ``ValueError``) as a one-line :class:`ConfigValueError`."""
    try:
        return trl_config_cls(**args)
    except (ValueError, TypeError) as exc:
        text = " ".join(str(exc).split())
        raise ConfigValueError(
            f"{name} refuses the run's arguments: {text} (they come from the config and its "
            "trl_args: change the one named)"
        ) from None


__all__ = [
    "FORBIDDEN_TRL_ARGS",
    "MAX_COMPLETION_LENGTH",
    "SEED_MAX",
    "TRL_ARG_RANGES",
    "apply_trl_args",
    "build_trl_config",
    "check_trl_arg_values",
    "checkpointing_argument",
    "training_arguments",
]
