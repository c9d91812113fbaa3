"""Layer 3 (trainer): TRL's config of a pass of the causal-LM trainers: the values both derive from
their config, the config's ``trl_args`` over them, TRL's own refusals as one line. The checks of
``trl_args`` that need no TRL import are :mod:`.trl_args`'.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..config.deepspeed import check_deepspeed_run
from ..errors import ConfigValueError, UnknownConfigKeyError
from .run_dir import CHECKPOINTS, pass_name

if TYPE_CHECKING:
    from transformers import TrainingArguments

    from .causal_lm_config import CausalLMConfig
    from .causal_lm_loading import LoadedCausalLM

TRLConfigT = TypeVar("TRLConfigT", bound="TrainingArguments")


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
    if cfg.deepspeed is not None:
        check_deepspeed_run(cfg.deepspeed)
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
    args: Mapping[str, Any],
    trl_config_cls: type[TrainingArguments],
    trl_args: Mapping[str, Any],
    name: str,
    *,
    source: str = "trl_args",
) -> dict[str, Any]:
    """``args`` with the user's ``trl_args`` (the config field ``source``) over them: an
    :class:`UnknownConfigKeyError` listing the valid names for the first key ``trl_config_cls``
    (``trl.SFTConfig``, ``trl.GRPOConfig``, ``transformers.TrainingArguments``, called ``name``)
    has not. The old and new spellings of checkpointing (``gradient_checkpointing*``,
    ``activation_checkpointing*``) land on the name this transformers takes, so either wins over
    the config's value."""
    valid = sorted(f.name for f in dataclasses.fields(trl_config_cls) if f.init)
    for key in trl_args:
        if key not in valid:
            raise UnknownConfigKeyError(key, valid, source=source, config=name)
    old, new = "gradient_checkpointing", checkpointing_argument()
    out = dict(args)
    for key, value in trl_args.items():
        out[new + key[len(old) :] if key.startswith(old) else key] = value
    return out


def build_trl_config(
    trl_config_cls: type[TRLConfigT], args: Mapping[str, Any], name: str
) -> TRLConfigT:
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


__all__ = ["apply_trl_args", "build_trl_config", "checkpointing_argument", "training_arguments"]
