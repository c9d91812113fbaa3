"""Layer 3 (prover): the old home of the async adapter, kept so ``from .env_adapter import ...``
works; it lives in :mod:`lean_dojo_v2.interaction.async_adapter` (layer 1) now."""

from ..interaction.async_adapter import (
    ThreadedProofEnv,
    as_async_env,
    as_async_envs,
    restarts_of,
    shares_states,
)

__all__ = ["ThreadedProofEnv", "as_async_env", "as_async_envs", "restarts_of", "shares_states"]
