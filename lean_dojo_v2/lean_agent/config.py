"""LeanAgent's configs at their upstream path ``lean_dojo_v2.lean_agent.config``.

:class:`TrainingConfig` *is* :class:`lean_dojo_v2.trainer.retrieval_config.TrainingConfig` (the
retriever's config; the seed's field names, documented field by field). :class:`ProverConfig`
keeps the seed's prover settings as a documented dataclass; the agents
(``LeanAgent(prover_config=...)``, ``HFAgent(..., prover_config=...)``) and ``python -m
lean_dojo_v2.lean_agent`` map it onto the search's ``SearchConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..trainer.errors import ConfigValueError
from ..trainer.retrieval_config import TrainingConfig


@dataclass
class ProverConfig:
    r"""The seed's LeanAgent prover settings (``lean_dojo_v2.lean_agent.config.ProverConfig``).

    Mapped onto :class:`~lean_dojo_v2.prover.SearchConfig` by the agents and by ``python -m
    lean_dojo_v2.lean_agent``: ``num_sampled_tactics`` → ``num_samples``, ``max_expansions``
    (None keeps the search's default), ``timeout``; ``num_workers`` → the agent's ``workers``
    (provers in parallel, a process each; ``python -m lean_dojo_v2.lean_agent --workers``).
    ``use_vllm``, ``batch_size`` and ``debug`` are kept so the seed's code and YAML load (serve a
    model with vLLM and use ``ExternalAgent`` for the first).

    Parameters:
        > Parameters that control proof search

        use_vllm (`bool`, *optional*, defaults to `False`):
            Generate tactics with vLLM (a GPU inference server) instead of transformers.
        num_workers (`int`, *optional*, defaults to `4`):
            Provers running in parallel (worker processes), each with its own model and Lean process.
        timeout (`int`, *optional*, defaults to `600`):
            Wall-clock seconds allowed per theorem.
        max_expansions (`int` or `None`, *optional*, defaults to `None`):
            Search nodes expanded per theorem before giving up; `None`: only `timeout` limits it.
        num_sampled_tactics (`int`, *optional*, defaults to `64`):
            Tactics sampled from the generator per expanded goal.
        batch_size (`int`, *optional*, defaults to `12`):
            Theorems handed to the workers at a time.
        debug (`bool`, *optional*, defaults to `False`):
            Log every tactic tried and its result.
    """

    use_vllm: bool = False
    num_workers: int = 4
    timeout: int = 600
    max_expansions: int | None = None
    num_sampled_tactics: int = 64
    batch_size: int = 12
    debug: bool = False

    def __post_init__(self) -> None:
        for key in (
            "num_workers",
            "timeout",
            "num_sampled_tactics",
            "batch_size",
            "max_expansions",
        ):
            value = getattr(self, key)
            if key == "max_expansions" and value is None:
                continue
            # bool is an int to Python; ProverConfig(timeout=True) is a mistake, not 1 second.
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                none = " or None" if key == "max_expansions" else ""
                raise ConfigValueError(
                    f"config key {key!r} must be a whole number >= 1{none}, got {value!r}"
                )
        for key in ("use_vllm", "debug"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigValueError(
                    f"config key {key!r} must be true or false, got {getattr(self, key)!r}"
                )


__all__ = ["ProverConfig", "TrainingConfig"]
