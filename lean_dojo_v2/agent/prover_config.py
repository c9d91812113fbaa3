"""Layer 4 (agent): :class:`ProverConfig`, upstream LeanAgent's prover settings, and how an agent
reads them (a :class:`~lean_dojo_v2.prover.SearchConfig` and its ``workers``).

``lean_dojo_v2.lean_agent.config.ProverConfig``, the upstream path, is this class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigValueError
from .errors import AgentConfigError

if TYPE_CHECKING:
    from ..prover.search_config import SearchConfig

__all__ = ["ProverConfig", "agent_kwargs_from_prover_config", "search_config_from_prover_config"]


@dataclass
class ProverConfig:
    r"""Upstream LeanAgent's prover settings (its path ``lean_dojo_v2.lean_agent.config``).

    Mapped onto :class:`~lean_dojo_v2.prover.SearchConfig` by the agents (and so by ``python -m
    lean_dojo_v2.lean_agent``): ``num_sampled_tactics`` → ``num_samples``, ``max_expansions``
    (None keeps the search's default), ``timeout``; ``num_workers`` → the agent's ``workers``
    (provers in parallel, a process each; ``python -m lean_dojo_v2.lean_agent --workers``).
    ``use_vllm``, ``batch_size`` and ``debug`` are kept so upstream code and YAML load (serve a
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


def search_config_from_prover_config(
    prover_config: ProverConfig | None, base: SearchConfig | None = None
) -> SearchConfig:
    """``prover_config`` as a ``SearchConfig`` (``base``'s other fields):
    ``num_sampled_tactics`` → ``num_samples``, ``max_expansions`` (None keeps the default),
    ``timeout``."""
    from ..prover.search_config import SearchConfig

    config = base or SearchConfig()
    if prover_config is None:
        return config
    values: dict[str, Any] = {
        "num_samples": prover_config.num_sampled_tactics,
        "timeout": float(prover_config.timeout),
    }
    if prover_config.max_expansions is not None:
        values["max_expansions"] = prover_config.max_expansions
    return dataclasses.replace(config, **values)


def agent_kwargs_from_prover_config(
    prover_config: object, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """An agent's keywords with ``prover_config`` applied: the search settings
    (:func:`search_config_from_prover_config`) and ``num_workers`` → ``workers``, unless
    ``workers`` is given."""
    if prover_config is None:
        return kwargs
    if not isinstance(prover_config, ProverConfig):
        raise AgentConfigError(
            f"prover_config must be a ProverConfig or None, got {type(prover_config).__name__}: "
            "pass lean_dojo_v2.lean_agent.config.ProverConfig(...) (or search_config=SearchConfig(...))"
        )
    out = dict(kwargs)
    out["search_config"] = search_config_from_prover_config(
        prover_config, kwargs.get("search_config")
    )
    out.setdefault("workers", prover_config.num_workers)
    return out
