"""Layer 4 (external_api): :class:`ServeConfig`, the settings of ``lean-dojo-v2 serve``.

Read like every other command's config (:mod:`lean_dojo_v2.config.loading`): a YAML file
(``--config``), then ``--set key=value``, then the command's own flags; ``--help-config`` prints the
docstring below. Examples: ``configs/serve.yaml`` (the offline default spelled out) and
``configs/serve_upstream.yaml`` (vLLM, OpenAI, Anthropic and Google behind one server).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..config.loading import check_finite_floats
from ..errors import ConfigValueError

TOKEN_ENV = "LEAN_DOJO_V2_API_TOKEN"
"""The environment variable read for the bearer token when ``token`` is not set."""


@dataclass
class ServeConfig:
    """Settings of the API server (``lean-dojo-v2 serve``).

    Parameters:
        > Parameters that control the network

        host (`str`, *optional*, defaults to `"127.0.0.1"`):
            Address to listen on. Loopback by default: LeanCopilot runs ``curl`` against
            ``localhost`` without any authentication, so the server is not exposed unless asked.
        port (`int`, *optional*, defaults to `23337`):
            Port to listen on; 23337 is the port LeanCopilot's ``ExternalGenerator`` uses.
        token (`str` or `None`, *optional*, defaults to `None`):
            Bearer token every route but ``/health`` requires (``Authorization: Bearer TOKEN``).
            None: the value of ``$LEAN_DOJO_V2_API_TOKEN`` when set, else no token. Prefer the
            environment variable to a file or the command line.
        cors_origins (`list[str]`, *optional*, defaults to `[]`):
            Origins allowed to call the server from a browser (CORS). Empty: CORS off.

        > Parameters that control the models

        models (`dict[str, dict]`, *optional*, defaults to `{}`):
            The model registry: name → options, each with a ``kind``: ``hf`` (a local generator:
            ``model`` is a hub id, a directory, a ``.gguf`` file or ``smollm2``; ``adapter`` a
            LoRA adapter; ``device``, ``dtype``, ``strategy``, ``temperature``, ``top_p``,
            ``max_new_tokens``, ``num_samples``, ``seed``), ``encoder`` (``model``, ``device``,
            ``max_length``), ``retriever`` (``path``: a folder written by ``export_retriever``;
            ``device``), ``openai`` (an OpenAI-compatible server such as vLLM: ``base_url``,
            ``model``, ``api_key_env``), ``anthropic`` and ``google`` (``model``,
            ``api_key_env``, ``base_url``), each upstream with ``timeout_s``, ``max_retries``,
            ``temperature``, ``max_tokens``, ``concurrency``; ``constant`` (a fixed answer after
            ``delay_ms``: for load tests of the server itself). See docs/api_server.md.
        default_models (`bool`, *optional*, defaults to `True`):
            Also serve the offline defaults under the names ``models`` does not use: the bundled
            SmolLM2 generator as ``default`` and the bundled MiniLM encoder as
            ``default-encoder``.
        progress_model (`str` or `None`, *optional*, defaults to `None`):
            A progress model (written by ``lean-dojo-v2 train progress``) for ``use_reward``.
            None: ``$LEANPROGRESS_MODEL`` when set; without either, ``use_reward`` is refused
            (HTTP 400).
        device (`str`, *optional*, defaults to `"auto"`):
            Device of local models that do not name one: ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
        preload (`bool`, *optional*, defaults to `False`):
            Load every local model when the server starts (a bad entry then stops it at once).
            False: each model loads on its first request.

        > Parameters that control batching and load

        batch_window_ms (`float`, *optional*, defaults to `2.0`):
            How long a model's worker waits for more requests to join a batch, only while
            requests are arriving concurrently (a lone request never waits).
        max_batch (`int`, *optional*, defaults to `32`):
            Most requests one ``generate`` (or ``encode``) call takes.
        max_queue (`int`, *optional*, defaults to `256`):
            Most requests waiting for one model; one more is answered 503 with ``Retry-After``
            instead of piling up.
        queue_timeout_s (`float`, *optional*, defaults to `60.0`):
            A request that has waited this long for its model is dropped before the model sees
            it (HTTP 503).

        > Parameters that limit requests

        max_body_bytes (`int`, *optional*, defaults to `4194304`):
            Largest request body (HTTP 413 above it). 4 MiB holds 2,048 new premises.
        max_input_chars (`int`, *optional*, defaults to `32768`):
            Longest goal state, prefix, chat message or text to encode (HTTP 413 above it).
        num_samples (`int`, *optional*, defaults to `8`):
            Outputs per ``/generate`` request when neither the request nor the model says.
        max_outputs (`int`, *optional*, defaults to `64`):
            Most outputs one request may ask for (``num_samples``, ``n``).
        max_tokens (`int`, *optional*, defaults to `1024`):
            Largest ``max_tokens`` a chat completion may ask for.
        max_request_tokens (`int`, *optional*, defaults to `32768`):
            Most tokens one request may make a local model hold: ``n`` (``num_samples``) ×
            (prompt tokens + tokens generated per sample), HTTP 400 above it. Each sample keeps
            its own copy of the prompt in the model's key/value cache, so this bounds a
            request's memory: SmolLM2-135M holds about 46 kB per token in float32 (1.5 GB at
            the default), a 7B model in bfloat16 about 0.5 MB. A prompt over the model's own
            context length is refused as well (HTTP 413).
        max_k (`int`, *optional*, defaults to `1024`):
            Largest ``k`` of ``/retrieve``; a larger one is capped to it (lean-premise-server's
            limit and rule).
        max_new_premises (`int`, *optional*, defaults to `2048`):
            Most ``new_premises`` one ``/retrieve`` request is ranked with; the rest are dropped
            (lean-premise-server's rule). ``GET /max-new-premises`` answers it.
    """

    host: str = "127.0.0.1"
    port: int = 23337
    token: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    default_models: bool = True
    progress_model: str | None = None
    device: str = "auto"
    preload: bool = False
    batch_window_ms: float = 2.0
    max_batch: int = 32
    max_queue: int = 256
    queue_timeout_s: float = 60.0
    max_body_bytes: int = 4 * 1024 * 1024
    max_input_chars: int = 32768
    num_samples: int = 8
    max_outputs: int = 64
    max_tokens: int = 1024
    max_request_tokens: int = 32768
    max_k: int = 1024
    max_new_premises: int = 2048

    def __post_init__(self) -> None:
        check_finite_floats(self)
        if not 0 <= self.port <= 65535:
            raise ConfigValueError(f"config key 'port' must be in 0..65535, got {self.port}")
        positive = (
            "max_batch",
            "max_queue",
            "max_body_bytes",
            "max_input_chars",
            "num_samples",
            "max_outputs",
            "max_tokens",
            "max_request_tokens",
            "max_k",
            "max_new_premises",
        )
        for name in positive:
            value = getattr(self, name)
            if value < 1:
                raise ConfigValueError(f"config key {name!r} must be >= 1, got {value}")
        if self.batch_window_ms < 0 or not math.isfinite(self.batch_window_ms):
            raise ConfigValueError(
                f"config key 'batch_window_ms' must be >= 0, got {self.batch_window_ms}"
            )
        if not self.queue_timeout_s > 0:
            raise ConfigValueError(
                f"config key 'queue_timeout_s' must be > 0, got {self.queue_timeout_s}"
            )
        if self.num_samples > self.max_outputs:
            raise ConfigValueError(
                f"config key 'num_samples' ({self.num_samples}) is above 'max_outputs' "
                f"({self.max_outputs})"
            )
        for name, spec in self.models.items():
            if not isinstance(spec, dict):
                raise ConfigValueError(
                    f"config key 'models': entry {name!r} must be a mapping of options with a "
                    f"'kind', got {spec!r}"
                )
