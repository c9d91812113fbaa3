"""Layer 4 (agent): the agents' own errors. Everything else an agent raises comes from the layer
that found the problem (a dataset, the database, tracing, a model, an endpoint)."""

from __future__ import annotations

from ..errors import ConfigError, LeanDojoError


class AgentError(LeanDojoError):
    """Base of the errors raised by :mod:`lean_dojo_v2.agent`."""


class NoRepositoryError(AgentError, LookupError):
    """``train()``, ``evaluate()`` or ``prove()`` was called before any repository was set up
    (``setup_github_repository``, ``setup_local_repository`` or ``setup_traced_dataset``)."""


class AgentConfigError(AgentError, ConfigError):
    """An agent was given something it cannot work with: a trainer without an ``output_dir``
    (where the trained model goes, and where the prover loads it from), or a prover setting out
    of range."""
