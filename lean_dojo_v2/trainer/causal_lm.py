"""Layer 3 (trainer): what the trainers of causal LMs on TRL share (SFT and GRPO).

- the config checks of the fields both configs have (:func:`check_causal_lm_fields`);
- the dataset's split files (:func:`split_files`), the checkpoint a pass resumes from
  (:func:`pass_checkpoint`);
- LoRA: a ``peft.LoraConfig`` from the config's ``lora_*`` fields and back
  (:func:`build_lora`, :func:`lora_fields`, :func:`peft_config_dict`), the portable
  ``adapter_config.json`` (:func:`portable_adapter_config`);
- loading the model to train (:func:`load_causal_lm`): a base, a model or adapter a finished pass
  saved (resume), or an SFT adapter folder as the start (continued with LoRA, merged without);
- the ``transformers.TrainingArguments`` values both derive from their config
  (:func:`training_arguments`), ``trl_args`` checked against the TRL config's fields
  (:func:`check_trl_args`), and the callbacks of a pass (:func:`pass_callbacks`).

No torch at import: each function imports what it uses.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetNotFoundError
from .errors import ConfigValueError, OutputDirArgumentError, UnknownConfigKeyError
from .run_dir import CHECKPOINTS, LOGS, pass_name, write_json
from .trl_args import SEED_MAX, check_trl_arg_values

log = logging.getLogger(__name__)

REPORT_TO_CHOICES = ("tensorboard", "wandb", "none")
STRATEGIES = ("random", "novel_premises")
SPLITS = ("train", "val", "test")
LORA_KEYS = ("r", "lora_alpha", "lora_dropout", "target_modules")


# ---------------------------------------------------------------------- config checks


def need(cfg: Any, ok: bool, key: str, what: str) -> None:
    """Raise the one-line :class:`ConfigValueError` of config key ``key`` unless ``ok``."""
    if not ok:
        raise ConfigValueError(f"config key {key!r} must be {what}, got {getattr(cfg, key)!r}")


def check_causal_lm_fields(cfg: Any) -> None:
    """The checks of the fields SFTConfig and GRPOConfig share (model, data, training,
    outputs, logging); each config adds its own."""
    need(cfg, cfg.batch_size >= 1, "batch_size", "at least 1")
    need(cfg, cfg.gradient_accumulation_steps >= 1, "gradient_accumulation_steps", "at least 1")
    need(cfg, cfg.lr > 0, "lr", "positive")
    need(cfg, cfg.weight_decay >= 0, "weight_decay", "0 or more")
    # 0 turns clipping off in transformers; a negative value would do so silently.
    need(cfg, cfg.max_grad_norm >= 0, "max_grad_norm", "0 (no clipping) or more")
    need(cfg, cfg.epochs_per_repo > 0, "epochs_per_repo", "positive")
    need(cfg, cfg.warmup_steps >= 0, "warmup_steps", "0 or more")
    need(cfg, cfg.max_steps == -1 or cfg.max_steps >= 1, "max_steps", "-1 or at least 1")
    need(cfg, 0 <= cfg.seed <= SEED_MAX, "seed", f"a whole number from 0 to {SEED_MAX}")
    need(cfg, cfg.save_steps >= 1, "save_steps", "at least 1")
    need(cfg, cfg.logging_steps >= 1, "logging_steps", "at least 1")
    need(cfg, cfg.lora_r >= 1, "lora_r", "at least 1")
    need(cfg, 0 <= cfg.lora_dropout < 1, "lora_dropout", "in [0, 1)")
    need(
        cfg,
        cfg.save_total_limit is None or cfg.save_total_limit >= 1,
        "save_total_limit",
        "None or at least 1",
    )
    need(cfg, cfg.strategy in STRATEGIES, "strategy", f"one of {', '.join(STRATEGIES)}")
    need(
        cfg,
        bool(cfg.splits) and all(s in SPLITS for s in cfg.splits),
        "splits",
        f"a non-empty list of {', '.join(SPLITS)}",
    )
    need(
        cfg,
        all(r in REPORT_TO_CHOICES for r in cfg.report_to),
        "report_to",
        f"a list of {', '.join(REPORT_TO_CHOICES)}",
    )
    need(
        cfg,
        cfg.device in ("auto", "cpu", "cuda") or cfg.device.startswith("cuda:"),
        "device",
        "auto, cpu, cuda or cuda:N",
    )
    need(cfg, bool(cfg.output_dir), "output_dir", "a directory path")
    need(cfg, bool(cfg.lora_target_modules), "lora_target_modules", "a non-empty list")
    check_trl_arg_values(cfg.trl_args)


# ---------------------------------------------------------------------- constructor arguments


def output_dir_argument(output_dir: Any, who: str) -> str:
    """A trainer constructor's ``output_dir`` as text: :class:`OutputDirArgumentError` for None,
    an empty path, or something that is not a path."""
    if not isinstance(output_dir, str | os.PathLike):
        got = "None" if output_dir is None else f"{type(output_dir).__name__} {output_dir!r}"
        raise OutputDirArgumentError(
            f"{who} needs output_dir, a directory path (str or pathlib.Path), got {got}: it is "
            f"where the model, checkpoints and logs go; pass output_dir='outputs-...'"
        )
    text = os.fspath(output_dir)
    if not isinstance(text, str) or not text.strip():
        raise OutputDirArgumentError(
            f"{who} needs output_dir, a directory path, got {output_dir!r}: pass "
            "output_dir='outputs-...'"
        )
    return text


def model_name_argument(model_name: Any, who: str) -> str | None:
    """A trainer constructor's ``model_name`` as text (a ``pathlib.Path`` is a local path);
    :class:`ConfigValueError` for anything else but None."""
    if model_name is None or isinstance(model_name, str):
        return model_name
    if isinstance(model_name, os.PathLike):
        text = os.fspath(model_name)
        if isinstance(text, str):
            return text
    raise ConfigValueError(
        f"{who}'s model_name must be a Hugging Face id or a local path (str or pathlib.Path), "
        f"or None for the bundled default; got {type(model_name).__name__} {model_name!r}"
    )


def callbacks_argument(callbacks: Any, who: str) -> list[Any]:
    """A trainer's ``callbacks`` as a list; :class:`ConfigValueError` unless it is a sequence of
    ``transformers.TrainerCallback`` objects or classes (checked by their ``on_*`` hooks:
    transformers is not imported to build a trainer)."""
    if isinstance(callbacks, str | bytes | Mapping) or not isinstance(callbacks, Iterable):
        raise ConfigValueError(
            f"{who}'s callbacks must be a list of transformers.TrainerCallback objects, got "
            f"{type(callbacks).__name__} {callbacks!r}"
        )
    items = list(callbacks)
    for item in items:
        hooks = [n for n in dir(item) if n.startswith("on_") and callable(getattr(item, n, None))]
        if not hooks:
            raise ConfigValueError(
                f"{who}'s callbacks must be transformers.TrainerCallback objects (with on_* "
                f"hooks such as on_step_end), got {type(item).__name__} {item!r}"
            )
    return items


def config_argument(config: Any, config_cls: type, who: str) -> None:
    """Raise :class:`ConfigValueError` unless ``config`` is a ``config_cls`` (``from_config``)."""
    if not isinstance(config, config_cls):
        name = config_cls.__name__
        raise ConfigValueError(
            f"{who}.from_config takes a config of type {name}, got {type(config).__name__}; build one with "
            f"load_config({name}, PATH, ['key=value']) or {name}(...), or pass the values as "
            f"keywords: {who}(**values)"
        )


# ---------------------------------------------------------------------- data and checkpoints


def pass_checkpoint(out: Path, k: int) -> Path | None:
    """The last whole TRL checkpoint of pass ``k`` in ``out`` (what the pass resumes from), or
    None. A checkpoint is whole once its ``trainer_state.json`` reads back: transformers writes
    that file last, so a checkpoint cut short (a full disk, a kill) is passed over for the one
    before it instead of failing the resume."""
    folder = out / CHECKPOINTS / pass_name(k)
    if not folder.is_dir():
        return None
    numbered = []
    for entry in folder.iterdir():
        prefix, _, step = entry.name.partition("-")
        if prefix == "checkpoint" and step.isdigit() and entry.is_dir():
            numbered.append((int(step), entry))
    for _, entry in sorted(numbered, reverse=True):
        try:
            json.loads((entry / "trainer_state.json").read_text("utf-8"))
        except (OSError, ValueError):
            log.warning("passing over %s: it was cut short (no readable trainer_state.json)", entry)
            continue
        return entry
    return None


def split_files(path: Path, cfg: Any) -> list[Path]:
    """The split files to read: ``path`` itself if it is a file, else ``strategy/split.json`` for
    each configured split (a missing one is an error naming what is there)."""
    if path.is_file():
        return [path]
    from ..data.dataset import DatasetDir

    d = DatasetDir(path, partial=True)
    files = [d.split_path(cfg.strategy, s) for s in cfg.splits]
    missing = [f for f in files if not f.is_file()]
    if missing:
        there = sorted(str(p.relative_to(path)) for p in path.glob("*/*.json"))
        raise DatasetNotFoundError(
            f"dataset {path} has no {', '.join(str(m.relative_to(path)) for m in missing)}; "
            f"it has: {', '.join(there) or 'no split files'} (set strategy/splits accordingly)"
        )
    return files


def dataset_files(path: Path, cfg: Any) -> list[Path]:
    """:func:`split_files` of an existing dataset (the pass loop's ``_dataset_files`` hook)."""
    if not path.exists():
        raise DatasetNotFoundError(
            f"no dataset at {path}: pass a LeanDojo dataset directory (with random/train.json) "
            "or a split file"
        )
    return split_files(path, cfg)


def read_theorems(path: Path, cfg: Any) -> list[Any]:
    """Every theorem of the configured split files of the dataset at ``path``."""
    from ..data.dataset import load_theorems

    theorems = []
    for f in split_files(path, cfg):
        theorems.extend(load_theorems(f))
    return theorems


# ---------------------------------------------------------------------- LoRA


def peft_config_dict(lora: Any) -> dict[str, Any]:
    """The arguments of ``lora`` (a ``peft.LoraConfig`` or a mapping) as plain JSON values."""
    if isinstance(lora, Mapping):
        return dict(lora)
    to_dict = getattr(lora, "to_dict", None)
    if callable(to_dict):
        return json.loads(json.dumps(to_dict(), default=str))
    raise ConfigValueError(
        f"lora_config must be a peft.LoraConfig, a mapping of its arguments, True or None; got "
        f"{type(lora).__name__}"
    )


def lora_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """Config fields from LoraConfig arguments (r, lora_alpha, lora_dropout, target_modules)."""
    out: dict[str, Any] = {"lora": True}
    if "r" in d:
        out["lora_r"] = d["r"]
    if "lora_alpha" in d:
        out["lora_alpha"] = d["lora_alpha"]
    if "lora_dropout" in d:
        out["lora_dropout"] = d["lora_dropout"]
    tm = d.get("target_modules")
    if tm:
        out["lora_target_modules"] = [tm] if isinstance(tm, str) else sorted(tm)
    unknown = set(d) - set(LORA_KEYS)
    if unknown and not hasattr(d, "to_dict") and "peft_type" not in d:
        raise UnknownConfigKeyError(
            sorted(unknown)[0], list(LORA_KEYS), source="lora_config", config="LoRA"
        )
    return out


def lora_config_values(lora_config: Any) -> tuple[dict[str, Any], Any]:
    """The seed's ``lora_config`` argument as config values, and the ready ``peft.LoraConfig``
    to use as is (None unless one was given)."""
    if lora_config is True:
        return {"lora": True}, None
    if isinstance(lora_config, Mapping):
        return lora_fields(lora_config), None
    if lora_config is not None and lora_config is not False:
        return lora_fields(peft_config_dict(lora_config)), lora_config
    return {}, None


def build_lora(cfg: Any) -> Any:
    """A ``peft.LoraConfig`` from the config's ``lora_*`` fields."""
    from peft import LoraConfig

    targets = cfg.lora_target_modules
    return LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=targets[0] if targets == ["all-linear"] else list(targets),
        task_type="CAUSAL_LM",
    )


def adapter_start(model_name: str | None) -> Path | None:
    """The folder, when ``model_name`` is a PEFT adapter folder (e.g. an SFT run with LoRA):
    an ``adapter_config.json`` and no ``config.json``."""
    if model_name is None:
        return None
    p = Path(model_name).expanduser()
    if (p / "adapter_config.json").is_file() and not (p / "config.json").is_file():
        return p.resolve()
    return None


def base_model_name(model_name: str | None) -> str | None:
    """The base model of ``model_name``: the base its adapter folder names, or itself."""
    folder = adapter_start(model_name)
    if folder is None:
        return model_name
    try:
        data = json.loads((folder / "adapter_config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("base_model_name_or_path")


def portable_adapter_config(out: Path, model_name: str | None) -> None:
    """Record the base as the user named it (``smollm2``, a hub id, an absolute local path) rather
    than the converted cache folder PEFT wrote, so the adapter loads on another machine."""
    path = out / "adapter_config.json"
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return
    if model_name is None:
        base = "smollm2"
    elif Path(model_name).expanduser().exists():
        base = str(Path(model_name).expanduser().resolve())
    else:
        base = model_name
    data["base_model_name_or_path"] = base
    write_json(path, data)


# ---------------------------------------------------------------------- loading


@dataclass
class LoadedCausalLM:
    """The model to train and its tokenizer, the device it trains on and its precision."""

    model: Any
    tokenizer: Any
    target: str
    precision: Any  # numerics.TrainingPrecision


def load_device(target: str, *, deepspeed: bool = False) -> str:
    """Where the model to train is loaded: straight onto its GPU (this process's own,
    ``LOCAL_RANK``, when several train together), so that host memory never holds the whole
    model; on the CPU for a CPU run and under DeepSpeed, which places (and with ZeRO-3
    partitions) the weights itself."""
    if not target.startswith("cuda") or deepspeed:
        return "cpu"
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return target


def plan_training(cfg: Any) -> LoadedCausalLM:
    """Where and in what precision the model will train, without loading it (``model`` and
    ``tokenizer`` are None): what the TRL arguments need, so that they are checked before
    anything loads or is written."""
    from ..models.loading import resolve_device
    from .numerics import training_precision

    target = "cpu" if cfg.use_cpu else resolve_device(cfg.device)
    precision = training_precision(
        cfg.dtype, target, full=not cfg.lora, bf16=cfg.bf16, deepspeed=cfg.deepspeed is not None
    )
    return LoadedCausalLM(None, None, target, precision)


def check_start_model(model_name: str | None) -> str:
    """What a run will load first, resolved (``models.loading.resolve_model_path``): raises
    :class:`~lean_dojo_v2.errors.ModelNotFoundError` for a model that is not there. For a PEFT
    adapter folder, the base it names must be there too; the base is returned then (its config
    says the context length)."""
    from ..models.loading import resolve_model_path

    resolved = resolve_model_path(model_name)
    if adapter_start(model_name) is not None:
        base = base_model_name(model_name)
        if base is not None:
            return resolve_model_path(base)
    return resolved


def model_context_length(name_or_path: str) -> int | None:
    """The longest sequence the model takes (``max_position_embeddings`` or its other names),
    read from its config alone; None when the config cannot be read or does not say."""
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(name_or_path)
    except (OSError, ValueError, KeyError):
        return None
    text_config = getattr(config, "get_text_config", None)
    config = text_config() if callable(text_config) else config
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def load_causal_lm(
    cfg: Any,
    from_dir: Path | None,
    *,
    lora_config: Any,
    who: str,
    planned: LoadedCausalLM | None = None,
) -> LoadedCausalLM:
    """Load the model and tokenizer to train, on the device :func:`load_device` picks.

    ``from_dir``: the output of the last finished pass (resume), else the start,
    ``cfg.model_name``. A start that is a PEFT adapter folder (an SFT run with LoRA) keeps
    training that adapter with ``cfg.lora``; without, it is merged into its base and every weight
    trains. ``lora_config``: the ``peft.LoraConfig`` a fresh adapter gets. ``who`` names the
    trainer in errors. ``planned``: :func:`plan_training`'s answer, when the run has it already.
    """
    from ..models.loading import load_model
    from .numerics import upcast_trainable

    planned = planned if planned is not None else plan_training(cfg)
    target, precision = planned.target, planned.precision
    dtype = precision.load_dtype
    device = load_device(target, deepspeed=cfg.deepspeed is not None)
    if device == "cpu" and target == "cpu":
        from ..system.memory import bound_heap_retention

        bound_heap_retention()  # freed activations go back to the OS (see system/memory.py)
    start_adapter = adapter_start(cfg.model_name)
    if from_dir is not None and cfg.lora:
        # The saved adapter names its base (portable_adapter_config): the start's base too.
        base = None if start_adapter is not None else cfg.model_name
        loaded = load_model(base, adapter=from_dir, device=device, dtype=dtype, for_training=True)
    elif from_dir is not None:
        loaded = load_model(str(from_dir), device=device, dtype=dtype, for_training=True)
    else:
        loaded = load_model(cfg.model_name, device=device, dtype=dtype, for_training=True)
    if loaded.kind != "causal":
        raise ConfigValueError(
            f"{who} trains causal language models; {loaded.source} is a {loaded.kind} "
            "model (use a decoder-only model such as smollm2 or DeepSeek-Prover)"
        )
    model, tokenizer = loaded.model, loaded.tokenizer
    tokenizer.padding_side = "right"
    if from_dir is None and start_adapter is not None and not cfg.lora:
        log.info("merging the adapter %s into its base: every weight trains", start_adapter)
        model = model.merge_and_unload()
        model.requires_grad_(True)  # PEFT froze the base it wrapped; every weight trains now
    elif from_dir is None and start_adapter is not None:
        log.info("training on the adapter %s", start_adapter)
    elif cfg.lora and from_dir is None:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config)
    if precision.adapter_float32:
        upcast_trainable(model)
    return LoadedCausalLM(model, tokenizer, target, precision)


# ---------------------------------------------------------------------- TRL arguments


def training_arguments(cfg: Any, k: int, out: Path, loaded: LoadedCausalLM) -> dict[str, Any]:
    """The ``transformers.TrainingArguments`` values of pass ``k`` both trainers derive from
    their config the same way (each adds its TRL config's own)."""
    on_cuda = loaded.target.startswith("cuda")
    autocast = loaded.precision.autocast
    reporters = [r for r in cfg.reporters if r != "tensorboard"]  # ours writes to logs/
    if "wandb" in reporters:
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
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
    import dataclasses

    import transformers

    names = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    if "activation_checkpointing" in names:
        return "activation_checkpointing"
    return "gradient_checkpointing"


def apply_trl_args(
    args: dict[str, Any], trl_config_cls: type, trl_args: Mapping[str, Any], name: str
) -> dict[str, Any]:
    """``args`` with the user's ``trl_args`` over them (checked by :func:`check_trl_args`); the
    old and new spellings of checkpointing (``gradient_checkpointing*``,
    ``activation_checkpointing*``) land on the name this transformers takes, so either wins over
    the config's value."""
    check_trl_args(trl_config_cls, trl_args, name)
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


def check_trl_args(trl_config_cls: type, trl_args: Mapping[str, Any], name: str) -> None:
    """An :class:`UnknownConfigKeyError` listing the valid names for the first key of
    ``trl_args`` that ``trl_config_cls`` (``trl.SFTConfig``, ``trl.GRPOConfig``) has not."""
    import dataclasses

    valid = sorted(f.name for f in dataclasses.fields(trl_config_cls) if f.init)
    for key in trl_args:
        if key not in valid:
            raise UnknownConfigKeyError(key, valid, source="trl_args", config=name)


def pass_callbacks(cfg: Any, out: Path, k: int, extra: Sequence[Any]) -> list[Any]:
    """The callbacks of pass ``k``: the non-finite stop, ``extra``, and TensorBoard writing to
    ``out/logs/pass-NNN`` when ``report_to`` has it."""
    from .nonfinite_callback import StopOnNonFinite

    callbacks = [StopOnNonFinite(), *extra]
    if "tensorboard" in cfg.reporters:
        from transformers.integrations import TensorBoardCallback

        tb = TensorBoardCallback()
        tb.logging_dir = str(out / LOGS / pass_name(k))
        callbacks.append(tb)
    return callbacks


def quiet_unless_progress(trainer: Any, cfg: Any) -> None:
    """Without a progress bar, no log dicts printed in its place either."""
    if not cfg.progress_bar:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)


def save_trained(model: Any, tokenizer: Any, out: Path, cfg: Any) -> None:
    """Save the model (or adapter only, with LoRA) and tokenizer to ``out``; refuse NaN weights."""
    from .numerics import check_finite_weights

    check_finite_weights(model, str(out))
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    if cfg.lora:
        portable_adapter_config(out, base_model_name(cfg.model_name))


class CausalLMTrainerAttributes:
    """What the causal-LM trainers (``SFTTrainer``, ``GRPOTrainer``) share beyond the pass loop:
    the seed's attributes, read from ``self.config``; the pass-loop hooks that are the same for
    both (dataset files, TRL checkpoints, the model in ``output_dir``, loading in the first pass);
    the merged save both write with ``merge_lora``."""

    config: Any
    _peft_object: Any
    model: Any
    tokenizer: Any

    @property
    def model_name(self) -> str | None:
        return self.config.model_name

    @property
    def output_dir(self) -> str:
        return self.config.output_dir

    @property
    def epochs_per_repo(self) -> float:
        return self.config.epochs_per_repo

    @property
    def batch_size(self) -> int:
        return self.config.batch_size

    @property
    def lr(self) -> float:
        return self.config.lr

    @property
    def lora_config(self) -> Any:
        """The ``peft.LoraConfig`` used (built from the config's ``lora_*`` fields), or None."""
        if not self.config.lora:
            return None
        return self._peft_object if self._peft_object is not None else build_lora(self.config)

    @property
    def model_dir(self) -> Path:
        """Where the trained model (or adapter) is written: ``output_dir`` itself."""
        return Path(self.config.output_dir)

    # -- pass-loop hooks (CurriculumTrainer) that both trainers fill in alike

    def _dataset_files(self, path: Path) -> list[Path]:
        return dataset_files(path, self.config)

    def _check_inputs(self, plan: Sequence[Any], sources: Sequence[Path], db: Any) -> None:
        """Before the run directory is created or written: the model to load is there (and
        takes the lengths asked), a dataset parses and yields examples (its theorems are kept
        for the first pass), and TRL takes the arguments the config makes."""
        cfg = self.config
        start = check_start_model(cfg.model_name)
        if db is None and sources:
            path = Path(sources[0])
            theorems = read_theorems(path, cfg)
            self._check_theorems(theorems, str(path))
            self._preread: tuple[Path, list[Any]] | None = (path, theorems)
        self._check_lengths(start)
        self._planned: LoadedCausalLM | None = plan_training(cfg)
        self._trl_args(0, Path(cfg.output_dir), loaded=self._planned)

    def _check_theorems(self, theorems: list[Any], source: str) -> None:
        """Raise the trainer's :class:`EmptyDatasetError` when ``theorems`` give no example."""

    def _check_lengths(self, model: str) -> None:
        """Raise :class:`ConfigValueError` when the config's lengths exceed ``model``'s context
        (``model``: :func:`check_start_model`'s answer)."""

    def _trl_args(self, k: int, out: Path, loaded: LoadedCausalLM | None = None) -> Any:
        raise NotImplementedError

    def _read_theorems(self, path: Path) -> list[Any]:
        """The theorems of the dataset at ``path``: those :meth:`_check_inputs` read, once."""
        pre = getattr(self, "_preread", None)
        if pre is not None and pre[0] == path:
            self._preread = None
            return pre[1]
        return read_theorems(path, self.config)

    def _pass_checkpoint(self, out: Path, k: int) -> Path | None:
        return pass_checkpoint(out, k)

    def _model_dir(self, out: Path) -> Path:
        return out

    def _begin(self, run: Any) -> None:
        # The model is loaded in the first pass, once its data is known to be usable.
        self._loaded = False
        self._resume_dir = run.out if run.first > 0 else None
        self._plan_length = len(run.plan)

    def _save_merged(self, dst: Path) -> Path:
        """Base + adapter merged, as a plain model in ``dst`` (``merge_lora``)."""
        merged = self.model.merge_and_unload()
        dst.mkdir(parents=True, exist_ok=True)
        merged.save_pretrained(str(dst))
        self.tokenizer.save_pretrained(str(dst))
        self.model = merged
        return dst
