"""Layer 4 (agent): :class:`HFAgent`, upstream LeanDojo-v2's agent around a causal-LM trainer.

``HFAgent(trainer=SFTTrainer(...) | GRPOTrainer(...))``: ``train()`` runs the trainer over the
database's curriculum; ``prove()`` proves with ``HFProver(trainer.output_dir,
use_lora=trainer.lora_config is not None)``: the trained model, read from where the trainer wrote
it. Before ``train()`` it proves with the trainer's base model and says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .arguments import keywords, text_argument
from .base import AgentTrainer, BaseAgent
from .errors import AgentConfigError
from .prover_config import agent_kwargs_from_prover_config

if TYPE_CHECKING:
    from ..prover.search_types import GeneratorFactory
    from .prover_config import ProverConfig

# What the agent passes to HFProver itself, and what to do instead.
_SET_BY_HF_AGENT = {
    "ckpt_path": "HFAgent proves with the trainer's model_name, then its output_dir",
    "model": "set the trainer's model_name",
    "device": "pass device= to the agent",
}


class ModelTrainer(AgentTrainer, Protocol):
    """What :class:`HFAgent` needs of its trainer (``SFTTrainer``, ``GRPOTrainer``): where it
    writes the trained model, the model it starts from, and whether it trains a LoRA adapter."""

    @property
    def output_dir(self) -> str | os.PathLike[str]: ...

    @property
    def model_name(self) -> str | os.PathLike[str] | None: ...

    @property
    def lora_config(self) -> object: ...


class HFAgent(BaseAgent):
    """An agent whose prover is a local Hugging Face model trained by ``trainer``.

    ``trainer``: an ``SFTTrainer`` or ``GRPOTrainer`` (anything with ``train(repos, database)``,
    ``output_dir``, ``lora_config`` and ``model_name``). ``prover_config``: upstream LeanAgent's
    ``ProverConfig`` (mapped onto ``search_config``; its ``num_workers`` sets ``workers``, one
    ``HFProver`` per worker process, unless ``workers`` is given); ``device`` and
    ``prover_kwargs`` go to ``HFProver`` (e.g. ``{"temperature": 0.7}``). ``training_config`` is
    upstream's argument and unused (the trainer carries its config). Other keywords:
    :class:`BaseAgent`'s."""

    trainer: ModelTrainer

    def __init__(
        self,
        trainer: ModelTrainer,
        database_path: str | os.PathLike[str] | None = None,
        training_config: object = None,
        prover_config: ProverConfig | None = None,
        *,
        device: str = "auto",
        prover_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        output_dir = getattr(trainer, "output_dir", None)
        if trainer is None or not callable(getattr(trainer, "train", None)):
            raise AgentConfigError(
                "HFAgent needs a trainer: HFAgent(trainer=SFTTrainer(...)) or GRPOTrainer(...)"
            )
        if output_dir is None or not str(os.fspath(output_dir)).strip():
            raise AgentConfigError(
                f"the trainer {type(trainer).__name__} has no output_dir: HFAgent loads the trained "
                "model from there; give the trainer output_dir='outputs-...'"
            )
        from ..prover.hf_prover import HFProver, PromptedGenerator

        device = text_argument("device", device, example="'cpu'")
        prover_kwargs = keywords(
            "prover_kwargs",
            prover_kwargs,
            [HFProver, PromptedGenerator],
            set_by_agent=_SET_BY_HF_AGENT,
        )
        kwargs = agent_kwargs_from_prover_config(prover_config, kwargs)
        super().__init__(database_path, **kwargs)
        self.trainer = trainer
        self.training_config = training_config
        self.prover_config = prover_config
        self.device = device
        self.prover_kwargs = prover_kwargs

    @property
    def output_dir(self) -> Path:
        return Path(os.fspath(self.trainer.output_dir))

    @property
    def use_lora(self) -> bool:
        return getattr(self.trainer, "lora_config", None) is not None

    def _get_build_deps(self) -> bool:
        return False

    def _base_model(self) -> tuple[str | None, bool]:
        """The trainer's starting model and whether it is a LoRA adapter directory."""
        name = getattr(self.trainer, "model_name", None)
        is_adapter = name is not None and (Path(os.fspath(name)) / "adapter_config.json").is_file()
        return (os.fspath(name) if name is not None else None), is_adapter

    def _setup_prover(self) -> None:
        self.prover = self._prover_factory()()

    def _prover_factory(self) -> GeneratorFactory:
        """``HFProver`` of the trained model (after :meth:`train`) or of the trainer's base model,
        as a picklable factory: built here by :meth:`_setup_prover`, or in each worker process."""
        from ..prover.parallel import HFProverSpec

        model: str | None
        if self.trained:
            model, lora = str(self.output_dir), self.use_lora
        else:
            model, lora = self._base_model()
        return HFProverSpec(model, self.device, {"use_lora": lora, **self.prover_kwargs})

    def _model_label(self) -> str | None:
        if self.trained:
            return str(self.output_dir)
        name, _ = self._base_model()
        return name or "smollm2"

    def _offline_hint(self) -> str:
        """When the trainer's model is a hub id that the local Hugging Face cache lacks, the way
        to run offline: following only the tools' hint would stop again at train()."""
        from ..models.loading import DEFAULT_ALIASES
        from .doctor import OFFLINE_MODEL_HINT, hub_model_cached

        name, _ = self._base_model()
        if (
            name is None
            or name.strip().lower() in DEFAULT_ALIASES
            or Path(name).expanduser().exists()
            or hub_model_cached(name)
        ):
            return ""
        return (
            f"; and the trainer's model {name} is not in the Hugging Face cache, so train() "
            f"would stop next: {OFFLINE_MODEL_HINT}"
        )

    def _prove_notes(self) -> list[str]:
        if self.trained:
            return []
        note = (
            f"not trained yet: proving with the trainer's base model {self._model_label()} "
            "(call train() first to prove with the fine-tuned one)"
        )
        self._say(note)
        return [note]


__all__ = ["HFAgent", "ModelTrainer"]
