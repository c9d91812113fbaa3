"""Layer 3 (trainer): TRL's config of a pass of the causal-LM trainers: the values both derive from
their config, the config's ``trl_args`` over them (names and value types checked against TRL's
config class), TRL's own refusals as one line. The checks of ``trl_args`` that need no TRL import
are :mod:`.trl_args`'.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.util
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

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
    has not, a :class:`ConfigValueError` for the first value its field's type does not take
    (:func:`check_trl_arg_types`). The old and new spellings of checkpointing
    (``gradient_checkpointing*``, ``activation_checkpointing*``) land on the name this
    transformers takes, so either wins over the config's value."""
    valid = sorted(f.name for f in dataclasses.fields(trl_config_cls) if f.init)
    for key in trl_args:
        if key not in valid:
            raise UnknownConfigKeyError(key, valid, source=source, config=name)
    checked = check_trl_arg_types(trl_config_cls, trl_args, source=source)
    old, new = "gradient_checkpointing", checkpointing_argument()
    out = dict(args)
    for key, value in checked.items():
        out[new + key[len(old) :] if key.startswith(old) else key] = value
    return out


# ---------------------------------------------------------------------- value types


@functools.cache
def _field_types(trl_config_cls: type) -> dict[str, Any]:
    """The type of each field of ``trl_config_cls``, as its annotations say, widened by the
    ``const`` of its metadata (transformers' argument parser's ``--fsdp`` alone is
    ``fsdp=True``, though the annotation says ``str | None``)."""
    try:
        hints = typing.get_type_hints(trl_config_cls)
    except (NameError, TypeError):  # an annotation this Python cannot resolve: TRL checks
        return {}
    for f in dataclasses.fields(trl_config_cls):
        if f.name in hints and "const" in f.metadata:
            hints[f.name] = Union[hints[f.name], type(f.metadata["const"])]  # noqa: UP007
    return hints


def _fits(value: object, tp: Any) -> bool:
    """Whether ``value`` (as YAML gives it) is of type ``tp``; a typing form not known here
    fits (TRL's own checks decide)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if tp is type(None):
        return value is None
    if tp in (int, float) and isinstance(value, bool):
        return False  # bool is an int to Python, never a number to a config
    if tp is float:
        return isinstance(value, int | float)
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set, frozenset):
        # list[X], tuple[X, ...]: each item an X; a fixed-length tuple's items are not checked.
        item = args[0] if len(args) == 1 or args[1:] == (Ellipsis,) else Any
        return isinstance(value, list | tuple) and all(_fits(v, item) for v in value)
    if origin is dict or tp is dict:
        key_tp, value_tp = args or (Any, Any)
        return isinstance(value, Mapping) and all(
            _fits(k, key_tp) and _fits(v, value_tp) for k, v in value.items()
        )
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return isinstance(value, tp) or any(value == m.value for m in tp)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def _type_text(tp: Any) -> str:
    """``tp`` as a config's reader writes it: ``int | None``, ``list[str]``, ``'a' | 'b'``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_text(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if tp is type(None):
        return "None"
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(map(_type_text, args))}]"
    return str(getattr(tp, "__name__", tp))


def _number_text(value: object, tp: Any) -> object:
    """YAML 1.1 reads ``1e-3`` as text: the number, where ``tp`` takes it and not the text."""
    if not isinstance(value, str) or _fits(value, tp):
        return value
    try:
        number = float(value.strip())
    except ValueError:
        return value
    return number if math.isfinite(number) and _fits(number, tp) else value


def check_trl_arg_types(
    trl_config_cls: type, trl_args: Mapping[str, Any], *, source: str = "trl_args"
) -> dict[str, Any]:
    """``trl_args`` with each value checked against the type of its field in
    ``trl_config_cls`` (TRL's own annotations, ``dataclasses.fields`` and their ``choices``):
    a one-line :class:`ConfigValueError` naming the key, the value and the type expected for
    the first that does not fit. TRL and transformers take a value of the wrong type without a
    word and fail with a traceback once the model is loaded and the run directory written
    (``fsdp: 5``), or never (``ddp_timeout: soon``)."""
    hints = _field_types(trl_config_cls)
    fields = {f.name: f for f in dataclasses.fields(trl_config_cls)}
    checked: dict[str, Any] = {}
    for key, value in trl_args.items():
        tp = hints.get(key, Any)
        value = _number_text(value, tp)
        if not _fits(value, tp):
            raise ConfigValueError(
                f"{source} {key} expects {_type_text(tp)}, got {value!r}; fix or remove it in "
                f"{source}"
            )
        choices = fields[key].metadata.get("choices") if key in fields else None
        if choices is not None and value is not None and value not in list(choices):
            raise ConfigValueError(
                f"{source} {key} must be one of {', '.join(map(repr, choices))}, got {value!r}; "
                f"fix or remove it in {source}"
            )
        checked[key] = value
    return checked


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


__all__ = [
    "apply_trl_args",
    "build_trl_config",
    "check_trl_arg_types",
    "checkpointing_argument",
    "training_arguments",
]
