"""Layer 3 (trainer): the causal LM a TRL trainer trains: where and in what precision, whether the
start is there and how long a sequence it takes, loading it (a base, what a finished pass saved,
or an SFT adapter folder as the start) and saving it. No torch at import.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..errors import ConfigValueError
from .lora import adapter_start, base_model_name, build_lora, portable_adapter_config
from .run_dir import world_size

if TYPE_CHECKING:
    from peft import LoraConfig, PeftModel
    from torch import Tensor
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer

    from .causal_lm_config import CausalLMConfig
    from .numerics import TrainingPrecision

    TrainedModel: TypeAlias = PreTrainedModel | PeftModel
    """The model a causal-LM trainer trains: a transformers model, or one wrapped with a LoRA
    adapter."""

log = logging.getLogger(__name__)


@dataclass
class LoadedCausalLM:
    """The model to train and its tokenizer (None when only planned: :func:`plan_training`),
    the device it trains on and its precision."""

    model: TrainedModel | None
    tokenizer: PreTrainedTokenizerBase | None
    target: str
    precision: TrainingPrecision


def load_device(target: str, *, deepspeed: bool = False) -> str:
    """Where the model to train is loaded: straight onto its GPU (this process's own,
    ``LOCAL_RANK``, when several train together), so that host memory never holds the whole
    model; on the CPU for a CPU run and under DeepSpeed, which places (and with ZeRO-3
    partitions) the weights itself."""
    if not target.startswith("cuda") or deepspeed:
        return "cpu"
    if world_size() > 1:
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return target


def plan_training(cfg: CausalLMConfig) -> LoadedCausalLM:
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
    cfg: CausalLMConfig,
    from_dir: Path | None,
    *,
    lora_config: LoraConfig | None,
    who: str,
    planned: LoadedCausalLM | None = None,
) -> LoadedCausalLM:
    """Load the model and tokenizer to train, on the device :func:`load_device` picks.

    ``from_dir``: the output of the last finished pass (resume), else the start,
    ``cfg.model_name``. A start that is a PEFT adapter folder (an SFT run with LoRA) keeps
    training that adapter with ``cfg.lora``; without, it is merged into its base and every weight
    trains. ``lora_config``: the ``peft.LoraConfig`` a fresh adapter gets (None: the config's
    ``lora_*`` fields). ``who`` names the
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
    model: TrainedModel = loaded.model
    tokenizer = loaded.tokenizer
    tokenizer.padding_side = "right"
    if from_dir is None and start_adapter is not None and not cfg.lora:
        from peft import PeftModel

        log.info("merging the adapter %s into its base: every weight trains", start_adapter)
        assert isinstance(model, PeftModel)  # an adapter start loads as one
        model = model.merge_and_unload()
        model.requires_grad_(True)  # PEFT froze the base it wrapped; every weight trains now
    elif from_dir is None and start_adapter is not None:
        log.info("training on the adapter %s", start_adapter)
    elif cfg.lora and from_dir is None:
        import transformers
        from peft import get_peft_model

        # A fresh adapter's weights are drawn at random: from the run's seed, so that two runs
        # of one config start (and so end) alike, as `seed` promises.
        transformers.set_seed(cfg.seed)
        lora = lora_config if lora_config is not None else build_lora(cfg)
        model = get_peft_model(model, lora)
    if precision.adapter_float32:
        upcast_trainable(model)
    return LoadedCausalLM(model, tokenizer, target, precision)


def gathered_weights(trainer: Trainer) -> dict[str, Tensor] | None:
    """Under DeepSpeed ZeRO-3, whose ranks each hold a slice of every weight, the whole model's
    weights (every rank must call this; rank 0 gets them, the others None); else None. Saved
    without them, a ZeRO-3 model is empty tensors."""
    from transformers.integrations import is_deepspeed_zero3_enabled

    if not is_deepspeed_zero3_enabled():
        return None
    weights: dict[str, Tensor] | None = trainer.accelerator.get_state_dict(trainer.model_wrapped)
    return weights


def save_trained(
    model: TrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    out: Path,
    cfg: CausalLMConfig,
    weights: dict[str, Tensor] | None = None,
) -> None:
    """Save the model (or adapter only, with LoRA) and tokenizer to ``out``; refuse NaN weights.
    ``weights``: :func:`gathered_weights`' answer, saved in place of the model's own."""
    from .numerics import check_finite_weights

    check_finite_weights(model, str(out))
    model.save_pretrained(str(out), state_dict=weights)
    tokenizer.save_pretrained(str(out))
    if cfg.lora:
        portable_adapter_config(out, base_model_name(cfg.model_name))


__all__ = [
    "LoadedCausalLM",
    "check_start_model",
    "gathered_weights",
    "load_causal_lm",
    "load_device",
    "model_context_length",
    "plan_training",
    "save_trained",
]
