"""The external API server (layer 4): LeanCopilot's ``/generate`` and ``/encode``,
lean-premise-server's ``/retrieve``, an OpenAI-compatible ``/v1/chat/completions``, over one
model registry (local generators and encoders, retriever exports, a progress model, upstream
adapters), micro-batched, with load shedding, limits and an optional bearer token.

``lean-dojo-v2 serve`` starts it; ``lean_dojo_v2.external_api.server:app`` is the app of the
default config. Everything here is imported on first use (fastapi is not loaded by importing the
package). See docs/api_server.md.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {
    "ServeConfig": ".config",
    "create_app": ".server",
    "ModelRegistry": ".registry",
    "APIServerError": ".errors",
    "BadAPIRequestError": ".errors",
    "ModelLoadError": ".errors",
    "ModelRegistryError": ".errors",
    "ServerAddressError": ".errors",
    "ServerOverloadedError": ".errors",
    "UnknownModelError": ".errors",
    "UpstreamModelError": ".errors",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    {k: f"lean_dojo_v2.external_api{v}" for k, v in _EXPORTS.items()},
    submodules=[
        "adapters",
        "batching",
        "cli",
        "config",
        "errors",
        "metrics",
        "premise_selection",
        "registry",
        "served",
        "schemas",
        "server",
    ],
)
