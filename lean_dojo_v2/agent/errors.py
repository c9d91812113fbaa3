"""Layer 4 (agent): the agents' own errors. Everything else an agent raises comes from the layer
that found the problem (a dataset, the database, tracing, a model, an endpoint)."""

from __future__ import annotations

# Defined in layer 0, like the other layers' bases: a trainer (below the agents) raises an
# AgentConfigError for a missing output_dir. The very same classes.
from ..errors import AgentConfigError, AgentError

__all__ = ["AgentConfigError", "AgentError", "NoRepositoryError"]


class NoRepositoryError(AgentError, LookupError):
    """``train()``, ``evaluate()`` or ``prove()`` was called before any repository was set up
    (``setup_github_repository``, ``setup_local_repository`` or ``setup_traced_dataset``)."""
