"""Layer 4 (agent): :class:`ExternalAgent`, proving with a model behind an OpenAI-compatible API.

``ExternalAgent(model_name=...)`` proves with an :class:`~lean_dojo_v2.prover.ExternalProver`
(vLLM, a hosted API, the library's own server): nothing to train, so ``train()`` says so and
returns. The endpoint is asked once, before any search, whether it is there and serves the model;
an unreachable one is a one-line ``ExternalModelError``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .arguments import keywords, text_argument
from .base import BaseAgent
from .errors import AgentConfigError

if TYPE_CHECKING:
    from ..prover.search_types import GeneratorFactory
    from .results import ProveReport

# What the agent passes to ExternalProver itself, and what to do instead.
_SET_BY_EXTERNAL_AGENT = {
    "model_name": "pass model_name= to the agent",
    "base_url": "pass base_url= to the agent",
    "api_key": "pass api_key= to the agent",
}


class ExternalAgent(BaseAgent):
    """An agent whose prover is a remote model.

    ``model_name``: the model the server serves (default ``$LEAN_DOJO_V2_EXTERNAL_MODEL``, else
    the first one it lists); ``base_url``: the API root (default ``$OPENAI_BASE_URL``, else a
    local vLLM at ``http://localhost:8000/v1``); ``api_key``: default ``$OPENAI_API_KEY``;
    ``prover_kwargs``: the rest of ``ExternalProver``'s settings (``temperature``, ``timeout``,
    ``max_retries``...). Other keywords: :class:`BaseAgent`'s."""

    def __init__(
        self,
        model_name: str | None = None,
        database_path: str | os.PathLike[str] | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        prover_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        from ..prover.external_prover import ExternalProver

        model_name = text_argument("model_name", model_name, optional=True, example="'my-model'")
        base_url = text_argument(
            "base_url", base_url, optional=True, example="'http://localhost:8000/v1'"
        )
        if api_key is not None and not isinstance(api_key, str):
            raise AgentConfigError(
                f"api_key must be text or None, got {type(api_key).__name__}: pass the key as a "
                "string, or leave it out to read $OPENAI_API_KEY"
            )
        prover_kwargs = keywords(
            "prover_kwargs", prover_kwargs, [ExternalProver], set_by_agent=_SET_BY_EXTERNAL_AGENT
        )
        # Checked now (a bad URL or setting is one line here), asked nothing of the network yet.
        self._external = ExternalProver(
            model_name, base_url=base_url, api_key=api_key, **prover_kwargs
        )
        super().__init__(database_path, **kwargs)
        self.model_name = model_name
        self._endpoint_ok = False
        self._prover_kwargs = prover_kwargs

    def _get_build_deps(self) -> bool:
        return False

    def train(self) -> None:
        """Nothing to train: the model is served elsewhere. Says so and returns None."""
        self._say(
            f"ExternalAgent: nothing to train (the model is served at {self._external.base_url}); "
            "prove() uses it as it is"
        )
        return None

    def evaluate(self) -> ProveReport:
        """Proof search on the held-out ``random`` test split (no write-back)."""
        self._require_repositories("evaluate()")
        return self.prove(split="test", write_back=False)

    def _setup_prover(self) -> None:
        self._check_ready()
        self.prover = self._external

    def _prover_factory(self) -> GeneratorFactory | None:
        """The same endpoint and settings in each worker process; the key is read there from
        ``$OPENAI_API_KEY`` (never pickled), so a key given in code that differs from it keeps
        the search in this process."""
        from ..prover.external_prover import API_KEY_ENV
        from ..prover.parallel import ExternalProverSpec

        key = self._external._api_key
        if key and key != os.environ.get(API_KEY_ENV):
            return None
        return ExternalProverSpec(
            self._external.model_name,  # resolved by the endpoint check before any search
            self._external.base_url,
            API_KEY_ENV,
            self._prover_kwargs,
        )

    def _check_ready(self) -> None:
        """One request before anything else: the server answers and serves the model (once;
        an unreachable one is a one-line ``ExternalModelError``)."""
        if self._endpoint_ok:
            return
        self._check_endpoint()
        self._endpoint_ok = True

    def _check_endpoint(self) -> None:
        # ExternalModelError when unreachable, or when /models answers garbage
        self._external.check_endpoint()

    def _model_label(self) -> str | None:
        name = self._external._model_name or self.model_name or "<first served model>"
        return f"{name} @ {self._external.base_url}"


__all__ = ["ExternalAgent"]
