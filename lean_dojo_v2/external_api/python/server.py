"""The upstream layout's entry point: ``uvicorn server:app --port 23337`` run from this folder
serves :data:`lean_dojo_v2.external_api.server.app` (the default config: the bundled SmolLM2 as
``default``, the bundled MiniLM as ``default-encoder``). ``lean-dojo-v2 serve`` is the command
with a config, a token and the other options."""

from lean_dojo_v2.external_api.server import app

__all__ = ["app"]
