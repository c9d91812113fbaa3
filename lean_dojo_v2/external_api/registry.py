"""Layer 4 (external_api): the model registry: what the server serves, by name.

:class:`ModelRegistry` builds the served models (:mod:`.served`, :mod:`.adapters`) from the
``models`` mapping of a :class:`~lean_dojo_v2.external_api.config.ServeConfig` (name → options
with a ``kind``), adds the offline defaults (``default``: the bundled SmolLM2, ``default-encoder``:
the bundled MiniLM), answers lookups by name and role, and holds the optional progress model of
``use_reward``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .adapters import AnthropicAdapter, GoogleAdapter, OpenAIAdapter
from .errors import BadAPIRequestError, ModelLoadError, ModelRegistryError, UnknownModelError
from .served import (
    ConstantGenerator,
    EncoderModel,
    ExportedRetriever,
    GeneratorModel,
    GenOptions,
    HFGenerator,
    LocalEncoder,
    RetrieverModel,
    ServedModel,
    chat_state,
    message_text,
    module_name,
    module_paths,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..models.progress import ProgressModel

__all__ = [
    "DEFAULT_ENCODER",
    "DEFAULT_GENERATOR",
    "EncoderModel",
    "GenOptions",
    "GeneratorModel",
    "ModelRegistry",
    "RetrieverModel",
    "ServedModel",
    "chat_state",
    "message_text",
    "module_name",
    "module_paths",
]

DEFAULT_GENERATOR = "default"
DEFAULT_ENCODER = "default-encoder"

# ----------------------------------------------------------------------------- the registry


def _kinds() -> dict[str, type[ServedModel]]:
    return {
        cls.kind: cls
        for cls in (
            HFGenerator,
            ConstantGenerator,
            LocalEncoder,
            ExportedRetriever,
            OpenAIAdapter,
            AnthropicAdapter,
            GoogleAdapter,
        )
    }


class ModelRegistry:
    """The served models by name, and the progress model of ``use_reward``."""

    def __init__(
        self,
        models: Mapping[str, ServedModel] | Sequence[ServedModel],
        *,
        progress_model: str | None = None,
    ) -> None:
        items = list(models.values()) if isinstance(models, Mapping) else list(models)
        self.models: dict[str, ServedModel] = {}
        for m in items:
            if m.name in self.models:
                raise ModelRegistryError(f"two models are named {m.name!r}; rename one")
            self.models[m.name] = m
        self.progress_path = progress_model
        self._progress: ProgressModel | None = None
        self._progress_lock = threading.Lock()

    @classmethod
    def from_specs(
        cls,
        specs: Mapping[str, Mapping[str, Any]],
        *,
        defaults: bool = True,
        device: str = "auto",
        progress_model: str | None = None,
    ) -> ModelRegistry:
        """Build the registry of a config's ``models`` (see :class:`ServeConfig`); ``defaults``
        adds ``default`` (the bundled SmolLM2) and ``default-encoder`` (the bundled MiniLM)
        where ``specs`` does not use those names. ``progress_model`` None: ``$LEANPROGRESS_MODEL``."""
        kinds = _kinds()
        built: list[ServedModel] = []
        for name, spec in specs.items():
            if not isinstance(name, str) or not name:
                raise ModelRegistryError(f"a model name must be a non-empty string, got {name!r}")
            if not isinstance(spec, Mapping):
                raise ModelRegistryError(f"model {name!r}: its entry must be a mapping of options")
            kind = spec.get("kind")
            if kind not in kinds:
                raise ModelRegistryError(
                    f"model {name!r}: unknown kind {kind!r}; valid kinds: {', '.join(kinds)}"
                )
            model_cls = kinds[kind]
            if model_cls in (HFGenerator, LocalEncoder, ExportedRetriever):
                built.append(model_cls(name, spec, device=device))
            else:
                built.append(model_cls(name, spec))
        if defaults:
            names = {m.name for m in built}
            if DEFAULT_GENERATOR not in names:
                built.append(HFGenerator(DEFAULT_GENERATOR, {"kind": "hf"}, device=device))
            if DEFAULT_ENCODER not in names:
                built.append(LocalEncoder(DEFAULT_ENCODER, {"kind": "encoder"}, device=device))
        if progress_model is None:
            from ..models.progress import ENV_MODEL

            progress_model = os.environ.get(ENV_MODEL, "").strip() or None
        return cls(built, progress_model=progress_model)

    def names(self) -> list[str]:
        return list(self.models)

    def get(self, name: str, role: str | None = None) -> ServedModel:
        """The model ``name``; :class:`UnknownModelError` (404) naming the served ones, or
        :class:`BadAPIRequestError` (400) when it cannot play ``role``."""
        model = self.models.get(name)
        if model is None:
            served = ", ".join(sorted(self.models)) or "none"
            raise UnknownModelError(f"no model named {name!r}; served models: {served}")
        if role is not None and not _plays(model, role):
            fit = ", ".join(sorted(n for n, m in self.models.items() if _plays(m, role)))
            raise BadAPIRequestError(
                f"model {name!r} is {_a(model.role)}, not {_a(role)}; {role}s served: "
                f"{fit or 'none'}"
            )
        return model

    def describe(self) -> list[dict[str, Any]]:
        return [m.describe() for m in self.models.values()]

    @property
    def has_progress(self) -> bool:
        return self.progress_path is not None

    def progress(self) -> ProgressModel:
        """The progress model (loaded once); :class:`BadAPIRequestError` when none is set."""
        if self.progress_path is None:
            raise BadAPIRequestError(
                "use_reward needs a progress model: set LEANPROGRESS_MODEL to a directory "
                "written by `lean-dojo-v2 train progress`, or progress_model in the serve "
                "config (--set progress_model=DIR), and restart the server"
            )
        with self._progress_lock:
            if self._progress is None:
                from ..models.progress import ProgressModel

                try:
                    self._progress = ProgressModel.load(self.progress_path)
                except Exception as exc:
                    why = " ".join(str(exc).split()) or type(exc).__name__
                    raise ModelLoadError(
                        f"the progress model {self.progress_path} could not be loaded: {why}; "
                        "fix progress_model (or LEANPROGRESS_MODEL) and restart the server"
                    ) from exc
            return self._progress

    def preload(self) -> None:
        """Load every model now (``preload: true``); the first that cannot load raises
        :class:`ModelLoadError` naming it."""
        for m in self.models.values():
            m.load()
        if self.has_progress:
            self.progress()


def _a(role: str) -> str:
    """``role`` with its article: an encoder, a generator."""
    return f"{'an' if role[:1] in 'aeiou' else 'a'} {role}"


def _plays(model: ServedModel, role: str) -> bool:
    if role == "encoder":
        return isinstance(model, EncoderModel)
    return model.role == role
