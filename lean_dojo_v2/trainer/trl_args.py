"""Layer 3 (trainer): the checks of a config's ``trl_args`` that need no TRL import, run when the
config is built (before anything loads or is written): keys that would write outside the run
directory or report elsewhere than the config says (:data:`FORBIDDEN_TRL_ARGS`, each refused with
the config field to use instead), and numbers TRL and transformers take without a range check of
their own, or check only once training has started (:data:`TRL_ARG_RANGES`). A name TRL's config
does not have, or a value of a type its field does not take (``fsdp: 5``), is refused when a
pass's TRL config is made (``trl_config.apply_trl_args``), which the trainers first do before
the model loads or the run directory is touched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeGuard

from ..errors import ConfigValueError

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


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(low: int, high: int | None = None) -> Callable[[object], bool]:
    return lambda v: _is_int(v) and v >= low and (high is None or v <= high)


def _text_number(v: object) -> object:
    """YAML 1.1 reads ``1e-3`` as text; the number it is (``trl_config`` passes it on as one)."""
    if not isinstance(v, str):
        return v
    try:
        return float(v.strip())
    except ValueError:
        return v


def _number(
    low: float, *, strict: bool = False, high: float | None = None, high_strict: bool = False
) -> Callable[[object], bool]:
    def ok(v: object) -> bool:
        v = _text_number(v)
        if not _is_number(v) or (v <= low if strict else v < low):
            return False
        return high is None or (v < high if high_strict else v <= high)

    return ok


def _or_none(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: v is None or check(v)


_AT_LEAST_1 = (_whole(1), "a whole number of at least 1")
_SEED = (_whole(0, SEED_MAX), f"a whole number from 0 to {SEED_MAX}")
_POSITIVE = (_number(0, strict=True), "a number above 0")
_NON_NEGATIVE = (_number(0), "a number of 0 or more")
_BETA = (_number(0, high=1, high_strict=True), "a number in [0, 1)")
_PROBABILITY = (_number(0, strict=True, high=1), "a number in (0, 1]")

TRL_ARG_RANGES: Mapping[str, tuple[Callable[[object], bool], str]] = {
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


def check_trl_arg_values(trl_args: Mapping[str, object]) -> None:
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


__all__ = [
    "FORBIDDEN_TRL_ARGS",
    "MAX_COMPLETION_LENGTH",
    "SEED_MAX",
    "TRL_ARG_RANGES",
    "check_trl_arg_values",
]
