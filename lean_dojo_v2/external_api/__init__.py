"""The external API server (layer 4): LeanCopilot's ``/generate`` and ``/encode``,
lean-premise-server's ``/retrieve``, an OpenAI-compatible ``/v1/chat/completions``, over one
model registry (local generators and encoders, retriever exports, a progress model, upstream
adapters), micro-batched, with load shedding, limits and an optional bearer token.

``lean-dojo-v2 serve`` starts it; ``lean_dojo_v2.external_api.server:app`` is the app of the
default config. Names are imported on first use (fastapi is not loaded by importing the
package). See docs/api_server.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .config import ServeConfig
    from .errors import (
        APIServerError,
        BadAPIRequestError,
        ModelLoadError,
        ModelRegistryError,
        ServerAddressError,
        ServerOverloadedError,
        UnknownModelError,
        UpstreamModelError,
    )
    from .registry import ModelRegistry
    from .server import create_app

_EXPORTS = {
    "ServeConfig": ".config",
    "APIServerError": ".errors",
    "BadAPIRequestError": ".errors",
    "ModelLoadError": ".errors",
    "ModelRegistryError": ".errors",
    "ServerAddressError": ".errors",
    "ServerOverloadedError": ".errors",
    "UnknownModelError": ".errors",
    "UpstreamModelError": ".errors",
    "ModelRegistry": ".registry",
    "create_app": ".server",
}
__all__ = [
    "APIServerError",
    "BadAPIRequestError",
    "ModelLoadError",
    "ModelRegistry",
    "ModelRegistryError",
    "ServeConfig",
    "ServerAddressError",
    "ServerOverloadedError",
    "UnknownModelError",
    "UpstreamModelError",
    "create_app",
]

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    submodules=(
        "adapters",
        "batching",
        "cli",
        "config",
        "encoding",
        "errors",
        "http_errors",
        "metrics",
        "openai_compat",
        "premise_selection",
        "registry",
        "served",
        "schemas",
        "server",
        "server_state",
    ),
)
