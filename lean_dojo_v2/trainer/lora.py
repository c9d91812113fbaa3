"""Layer 3 (trainer): LoRA for the causal-LM trainers: a ``peft.LoraConfig`` from a config's
``lora_*`` fields and back, the adapter folder a run may start from (an SFT run with LoRA), and
the portable ``adapter_config.json`` a run writes. peft is imported only to build a config."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..data.jsonio import loads
from ..errors import ConfigValueError, UnknownConfigKeyError
from .run_dir import write_json

if TYPE_CHECKING:
    from peft import LoraConfig

    from .causal_lm_config import CausalLMConfig

    LoraArgument: TypeAlias = LoraConfig | Mapping[str, Any] | bool | None
    """A trainer's ``lora_config`` (upstream LeanDojo-v2's): a ``peft.LoraConfig``, a mapping of
    its arguments, True (LoRA from the config's ``lora_*`` fields), or False/None (no LoRA)."""

LORA_KEYS = ("r", "lora_alpha", "lora_dropout", "target_modules")


def peft_config_dict(lora: object) -> dict[str, Any]:
    """The arguments of ``lora`` (a ``peft.LoraConfig`` or a mapping) as plain JSON values."""
    if isinstance(lora, Mapping):
        return dict(lora)
    to_dict = getattr(lora, "to_dict", None)
    if callable(to_dict):
        values: dict[str, Any] = json.loads(json.dumps(to_dict(), default=str))
        return values
    raise ConfigValueError(
        f"lora_config must be a peft.LoraConfig, a mapping of its arguments, True or None; got "
        f"{type(lora).__name__}"
    )


def lora_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """Config fields from LoraConfig arguments (r, lora_alpha, lora_dropout, target_modules)."""
    out: dict[str, Any] = {"lora": True}
    names = {"r": "lora_r", "lora_alpha": "lora_alpha", "lora_dropout": "lora_dropout"}
    out.update({name: d[key] for key, name in names.items() if key in d})
    tm = d.get("target_modules")
    if tm:
        out["lora_target_modules"] = [tm] if isinstance(tm, str) else sorted(tm)
    unknown = set(d) - set(LORA_KEYS)
    # A LoraConfig's own dict has many more keys (peft_type, ...): only a user's mapping is checked.
    if unknown and not hasattr(d, "to_dict") and "peft_type" not in d:
        raise UnknownConfigKeyError(
            sorted(unknown)[0], list(LORA_KEYS), source="lora_config", config="LoRA"
        )
    return out


def lora_config_values(lora_config: LoraArgument) -> tuple[dict[str, Any], LoraConfig | None]:
    """A trainer's ``lora_config`` argument (upstream LeanDojo-v2's: a ``peft.LoraConfig``, a
    mapping of its arguments, True or None) as config values, and the ready ``peft.LoraConfig``
    to use as is (None unless one was given)."""
    if lora_config is True:
        return {"lora": True}, None
    if isinstance(lora_config, Mapping):
        return lora_fields(lora_config), None
    if lora_config is not None and lora_config is not False:
        return lora_fields(peft_config_dict(lora_config)), lora_config
    return {}, None


def build_lora(cfg: CausalLMConfig) -> LoraConfig:
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
        data = loads((folder / "adapter_config.json").read_bytes())
    except (OSError, ValueError):
        return None
    base = data.get("base_model_name_or_path") if isinstance(data, dict) else None
    return base if isinstance(base, str) else None


def portable_adapter_config(out: Path, model_name: str | None) -> None:
    """Record the base as the user named it (``smollm2``, a hub id, an absolute local path) rather
    than the converted cache folder PEFT wrote, so the adapter loads on another machine."""
    path = out / "adapter_config.json"
    try:
        data = loads(path.read_bytes())
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


__all__ = [
    "LORA_KEYS",
    "adapter_start",
    "base_model_name",
    "build_lora",
    "lora_config_values",
    "lora_fields",
    "peft_config_dict",
    "portable_adapter_config",
]
