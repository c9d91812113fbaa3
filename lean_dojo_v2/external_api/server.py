"""Layer 4 (external_api): the FastAPI app.

``app`` (this module's attribute, so ``uvicorn lean_dojo_v2.external_api.server:app`` works) is
built from the default :class:`~lean_dojo_v2.external_api.config.ServeConfig`; building it loads
no model. ``lean-dojo-v2 serve`` builds one with :func:`create_app` from its config.

Routes (docs/api_server.md has the exact bodies):

- ``POST /generate``, ``POST /encode``: LeanCopilot's protocol (``ExternalGenerator``,
  ``ExternalEncoder``), ``use_reward`` as upstream v2;
- ``POST /retrieve``, ``GET /max-new-premises``, ``/indexed-premises``, ``/indexed-modules``:
  lean-premise-server's protocol (what Lean's premise-selection client calls), on an
  exported retriever (:mod:`.premise_selection`); the same under ``/retrievers/NAME``;
- ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /v1/models/{id}``:
  OpenAI-compatible (``usage`` counted with the model's tokenizer, exactly ``n`` choices);
- ``GET /health`` (no token), ``GET /models``, ``GET /metrics`` (Prometheus text),
  ``GET /openapi.json`` and ``/docs``.

One gate in front of every route (:class:`_Gate`, plain ASGI so it costs microseconds): the
bearer token, the body-size limit, the request metrics. JSON POSTs to the model routes are
served by the gate directly (:meth:`_Gate.direct`), with the same pydantic models and handlers
the FastAPI routes declare (the routes' OpenAPI schema is FastAPI's); the app (:class:`_App`)
hands them to it before FastAPI's middleware stack (error, telemetry and body-limit layers,
routing), which together cost more than serving the request; with CORS on (or FastAPI's
OpenTelemetry configured) the gate serves them from inside the stack instead. Every model call
goes through its model's :class:`~lean_dojo_v2.external_api.batching.Batcher` (a thread of the
model's, never the event loop).
No route reads or writes a file named by a request: models are the config's, by name.

Elsewhere: what the routes share and the model calls of a batch (:mod:`.server_state`), how a
refusal is answered on each family of routes (:mod:`.http_errors`), the chat-completions route's
work and OpenAI's request rules (:mod:`.openai_compat`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import os
import time
from collections.abc import (
    AsyncIterator,
    Mapping,
)
from typing import TYPE_CHECKING, Any, cast

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .config import TOKEN_ENV, ServeConfig
from .errors import APIServerError, BadAPIRequestError, UnknownModelError
from .http_errors import api_error, error_body, in_body, validation_error
from .openai_compat import chat_completion, model_card
from .registry import (
    GeneratorModel,
    GenOptions,
    ModelRegistry,
    RetrieverModel,
)
from .schemas import (
    ChatRequest,
    ChatResponse,
    EncodeRequest,
    EncodeResponse,
    ErrorResponse,
    GenerateRequest,
    GenerateResponse,
    ModelCard,
    ModelList,
    RetrievedPremise,
    RetrieveRequest,
)
from .server_state import FastRoute, ServerState

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ..models.generator import Candidate

log = logging.getLogger(__name__)

_Refusal = tuple[int, str, list[tuple[bytes, bytes]]]
"""An answer refused before any handler: status, message, extra headers."""

ROUTES = (
    "/generate",
    "/encode",
    "/retrieve",
    "/max-new-premises",
    "/indexed-premises",
    "/indexed-modules",
    "/v1/chat/completions",
    "/v1/models",
    "/health",
    "/models",
    "/metrics",
    "/openapi.json",
    "/docs",
)
OPEN_ROUTES = frozenset({"/health"})
_ERRORS: dict[int | str, dict[str, Any]] = {
    c: {"model": ErrorResponse} for c in (400, 401, 404, 413, 422, 500, 502, 503, 504)
}
_DEFAULT_OPTIONS = GenOptions()


def _json(data: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")


def _answer(refusal: tuple[int, Mapping[str, object], list[tuple[bytes, bytes]]]) -> Response:
    status, body, headers = refusal
    return _json(body, status, {k.decode(): v.decode() for k, v in headers})


class _Gate:
    """Token, body size and metrics for every request (plain ASGI middleware); a JSON POST to
    a model route is served here directly (:meth:`direct`), anything else goes on to FastAPI.
    :class:`_App` calls :meth:`direct` itself, before the framework's middleware stack."""

    def __init__(self, app: ASGIApp | None, state: ServerState) -> None:
        self.app = app
        self.state = state
        token = state.config.token or os.environ.get(TOKEN_ENV, "").strip() or None
        self.token = f"Bearer {token}".encode() if token else None
        self.max_body = state.config.max_body_bytes
        self.metrics = state.metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app
        assert app is not None, "the gate _App calls directly is never mounted"
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path = scope["path"]
        method = scope.get("method")
        if method == "POST":
            fast = self.state.fast_routes.get(path)
            if fast is not None and await self.direct(scope, receive, send, fast):
                return
        route = path if path in ROUTES else "other"
        start = time.perf_counter()
        status_box = [500]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        try:
            refusal = self._check(scope, path)
            if refusal is None and method in ("POST", "PUT", "PATCH"):
                refusal, receive = await self._body_limit(scope, receive)
            if refusal is not None:
                status, message, headers = refusal
                await _send_json(send_wrapper, status, error_body(path, status, message), headers)
                return
            await app(scope, receive, send_wrapper)
        finally:
            self.metrics.request(route, status_box[0], time.perf_counter() - start)

    async def direct(self, scope: Scope, receive: Receive, send: Send, route: FastRoute) -> bool:
        """Serve a POST to a model route without the framework's per-request machinery, if
        it is JSON (else False, having read nothing): the token checked, the body read within
        the limit, validated by the route's pydantic model (the one the FastAPI route
        declares), the same handler, errors answered alike, the request counted."""
        start = time.perf_counter()
        content_type = length = auth = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                if content_type is None:
                    content_type = value
            elif name == b"content-length":
                if length is None:
                    length = value
            elif name == b"authorization":
                if auth is None:
                    auth = value
        if content_type is None or (
            content_type != b"application/json"
            and content_type.split(b";", 1)[0].strip().lower() != b"application/json"
        ):
            return False
        path = scope["path"]
        status = 500
        result: object = None
        refusal: _Refusal | None
        answer: tuple[int, Mapping[str, object], list[tuple[bytes, bytes]]] | None = None
        try:
            if self.token is not None and not (auth and hmac.compare_digest(auth, self.token)):
                refusal = self._unauthorized(auth)
            else:
                refusal = self._length_refusal(length)
            if refusal is None:
                message = await receive()
                body = message.get("body", b"") if message["type"] == "http.request" else b""
                if message.get("more_body", False):
                    body, refusal = await self._read_rest(body, receive)
                elif len(body) > self.max_body:
                    refusal = self._too_big()
            if refusal is None:
                model, handler = route
                try:
                    result = await handler(model.model_validate_json(body or b"null"))
                except ValidationError as exc:
                    answer = validation_error(path, in_body(exc.errors()))
                except APIServerError as exc:
                    answer = api_error(path, exc)
                except Exception:
                    log.exception("%s failed", path)
                    refusal = (500, f"{path} failed on the server; see the server log", [])
            if refusal is not None:
                status, text, headers = refusal
                answer = (status, error_body(path, status, text), headers)
            if answer is not None:
                status, error, headers = answer
                await _send_json(send, status, error, headers)
            elif isinstance(result, Response):  # a stream
                await result(scope, receive, send)
                status = result.status_code
            else:
                data = orjson.dumps(result)
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-length", str(len(data)).encode()),
                            (b"content-type", b"application/json"),
                        ],
                    }
                )
                status = 200
                await send({"type": "http.response.body", "body": data})
        finally:
            self.metrics.request(path, status, time.perf_counter() - start)
        return True

    def _length_refusal(self, length: bytes | None) -> _Refusal | None:
        if length is None:
            return None
        try:
            size = int(length)
        except ValueError:
            return (400, "Content-Length is not a number", [])
        return self._too_big() if size > self.max_body else None

    async def _read_rest(self, body: bytes, receive: Receive) -> tuple[bytes, _Refusal | None]:
        """The whole body of a request sent in several messages (``body`` the first's), or a
        413 refusal past ``max_body_bytes``."""
        chunks, size, more = [body], len(body), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return b"", self._too_big()
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks), None

    def _too_big(self) -> _Refusal:
        return (
            413,
            f"the request body is over {self.max_body} bytes (max_body_bytes); send less, or "
            "raise the limit in the server config",
            [],
        )

    def _check(self, scope: Scope, path: str) -> _Refusal | None:
        if self.token is None or path in OPEN_ROUTES or scope.get("method") == "OPTIONS":
            return None
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        if given and hmac.compare_digest(given, self.token):
            return None
        return self._unauthorized(given)

    def _unauthorized(self, given: bytes | None) -> _Refusal:
        what = "a wrong bearer token" if given else "no bearer token"
        return (
            401,
            f"this server needs a bearer token (Authorization: Bearer TOKEN) and got {what}; "
            f"use the token the server was started with (--token or {TOKEN_ENV})",
            [(b"www-authenticate", b"Bearer")],
        )

    async def _body_limit(self, scope: Scope, receive: Receive) -> tuple[_Refusal | None, Receive]:
        length = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    return (400, "Content-Length is not a number", []), receive
                break
        too_big = self._too_big()
        if length is not None:
            return (too_big if length > self.max_body else None), receive
        # No length given (chunked): read it here, within the limit, then hand it on.
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body:
                return too_big, receive
            chunks.append(body)
            more = message.get("more_body", False)
        whole = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        return None, replay


class _App(FastAPI):
    """FastAPI, with the model routes' JSON POSTs handed to :meth:`_Gate.direct` before the
    framework's middleware stack (its error, telemetry and body-limit layers, then routing:
    together several times what serving the request costs). Not when CORS is on (its
    middleware must see every answer) or FastAPI's OpenTelemetry is configured (checked at
    most once a second): then :class:`_Gate` serves them from inside the stack."""

    _gate: _Gate | None = None
    _otel_checked = -1.0
    _otel_on_cached = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate = self._gate
        if gate is not None and scope["type"] == "http" and scope["method"] == "POST":
            route = gate.state.fast_routes.get(scope["path"])
            if route is not None and not self._otel_on() and not self.root_path:
                if await gate.direct(scope, receive, send, route):
                    return
        await super().__call__(scope, receive, send)

    def _otel_on(self) -> bool:
        now = time.monotonic()
        if now - self._otel_checked > 1.0:
            self._otel_checked = now
            native = getattr(self, "_native_telemetry", None)
            self._otel_on_cached = native is not None and bool(native.enabled())
        return self._otel_on_cached


async def _send_json(
    send: Send, status: int, body: Mapping[str, object], headers: list[tuple[bytes, bytes]]
) -> None:
    data = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def create_app(config: ServeConfig | None = None, registry: ModelRegistry | None = None) -> FastAPI:
    """The app for ``config`` (default :class:`ServeConfig`); ``registry`` defaults to the one
    the config describes. Nothing is loaded until a request (or ``preload``) needs it."""
    from contextlib import asynccontextmanager

    config = config or ServeConfig()
    if registry is None:
        registry = ModelRegistry.from_specs(
            config.models,
            defaults=config.default_models,
            device=config.device,
            progress_model=config.progress_model,
        )
    state = ServerState(config, registry)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if config.preload:
            await asyncio.to_thread(registry.preload)
        yield
        for b in list(state.batchers.values()):
            await b.aclose()
        for m in registry.models.values():
            close = getattr(m, "close", None)
            if close is not None:
                close()

    from ..version import __version__

    app = _App(
        title="lean-dojo-v2 API server",
        version=__version__,
        description="LeanCopilot's /generate and /encode, lean-premise-server's /retrieve, an "
        "OpenAI-compatible /v1/chat/completions, over one model registry.",
        lifespan=lifespan,
    )
    app.state.server = state

    @app.exception_handler(APIServerError)
    async def _api_error(request: Request, exc: APIServerError) -> Response:
        return _answer(api_error(request.url.path, exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        path = request.url.path
        if not path.startswith("/v1/"):
            from fastapi.exception_handlers import http_exception_handler

            return await http_exception_handler(request, exc)
        # OpenAI's clients read error.message; FastAPI's own 404/405 body has none.
        message = (
            f"{request.method} {path}: {exc.detail}; the OpenAI-compatible routes are POST "
            "/v1/chat/completions, GET /v1/models and GET /v1/models/{id}"
        )
        return _json(error_body(path, exc.status_code, message), exc.status_code, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return _answer(validation_error(request.url.path, list(exc.errors())))

    # ........................................................................ LeanCopilot

    # Each route's work is a function of its validated request returning the JSON answer (or
    # a Response: a stream): the FastAPI route wraps it, and _Gate.direct calls it as well.
    max_chars = config.max_input_chars
    exp = math.exp

    async def _generate(req: GenerateRequest) -> dict[str, object]:
        if len(req.input) > max_chars or (req.prefix is not None and len(req.prefix) > max_chars):
            state.check_text("input", req.input)
            state.check_text("prefix", req.prefix)
        model = registry.get(req.name, "generator")
        assert isinstance(model, GeneratorModel)
        n = req.num_samples or model.default_num_samples or config.num_samples
        state.check_count("num_samples", n, config.max_outputs, "max_outputs")
        if req.use_reward and not registry.has_progress:
            registry.progress()  # the 400 saying how to configure one, before any generation
        key = ("generate", n, req.prefix or "", _DEFAULT_OPTIONS)
        cands = cast("list[Candidate]", await state.submit(model, key, req.input))
        outputs: list[dict[str, Any]] = [
            {"output": c.tactic, "score": exp(c.logprob)} for c in cands
        ]
        if req.use_reward and outputs:
            steps = await asyncio.to_thread(
                _predict, registry, req.input, req.prefix, [o["output"] for o in outputs]
            )
            for o, s in zip(outputs, steps, strict=True):
                o.update(model_score=o["score"], steps_remaining=s, reward=-s, score=-s)
            outputs.sort(key=lambda o: -o["score"])  # stable: ties keep the model's order
        return {"outputs": outputs}

    @app.post("/generate", response_model=GenerateResponse, responses=_ERRORS)
    async def generate(req: GenerateRequest) -> Response:
        """Tactics for a goal state (LeanCopilot's ``ExternalGenerator``)."""
        return _json(await _generate(req))

    async def _encode(req: EncodeRequest) -> dict[str, object]:
        state.check_text("input", req.input)
        model = registry.get(req.name, "encoder")
        row = cast("np.ndarray", await state.submit(model, ("encode",), req.input))
        return {"outputs": [float(x) for x in row.tolist()]}

    @app.post("/encode", response_model=EncodeResponse, responses=_ERRORS)
    async def encode(req: EncodeRequest) -> Response:
        """One embedding of a text (LeanCopilot's ``ExternalEncoder``)."""
        return _json(await _encode(req))

    # ........................................................................ premises

    def _retriever(name: str | None) -> RetrieverModel:
        if name is not None:
            model = registry.get(name, "retriever")
            assert isinstance(model, RetrieverModel)
            return model
        served = [m for m in registry.models.values() if isinstance(m, RetrieverModel)]
        if not served:
            raise UnknownModelError(
                "no retriever is served: add one to the config's models "
                "(kind: retriever, path: a folder written by export_retriever)"
            )
        if len(served) > 1:
            names = ", ".join(m.name for m in served)
            raise BadAPIRequestError(
                f'several retrievers are served ({names}); name one ("name" in the body, or '
                "the base URL /retrievers/NAME for Lean's client)"
            )
        return served[0]

    async def _retrieve_route(req: RetrieveRequest) -> object:
        state.check_text("state", req.state)
        if req.position is not None and req.file_path is None:
            raise BadAPIRequestError("position needs file_path: the file it is a position in")
        model = _retriever(req.name)
        if req.k <= 0:  # lean-premise-server's answer to k <= 0
            return []
        # Over the limits: capped and truncated as lean-premise-server does, not refused.
        news = (req.new_premises or [])[: config.max_new_premises]
        for p in news:
            state.check_text("a new premise's name", p.name)
            state.check_text("a new premise's decl", p.decl)
        update: dict[str, Any] = {"k": min(req.k, config.max_k)}
        if req.new_premises is not None:
            update["new_premises"] = news
        return await state.submit(model, ("retrieve",), req.model_copy(update=update))

    @app.post("/retrieve", response_model=list[RetrievedPremise], responses=_ERRORS)
    async def retrieve(req: RetrieveRequest) -> Response:
        """The ``k`` best premises for a state (lean-premise-server's request and answer)."""
        return _json(await _retrieve_route(req))

    # Lean's premise-selection client reads these before its first /retrieve. The lists are
    # the loaded retriever's, serialised once.
    listed: dict[tuple[str, str], bytes] = {}

    async def _listing(name: str | None, what: str) -> Response:
        model = _retriever(name)
        body = listed.get((model.name, what))
        if body is None:
            await asyncio.to_thread(model.load)
            body = listed[(model.name, what)] = orjson.dumps(getattr(model, what))
        return Response(body, media_type="application/json")

    @app.get("/max-new-premises", response_model=int, responses=_ERRORS)
    async def max_new_premises() -> Response:
        """The most ``new_premises`` one ``/retrieve`` request may send (``max_new_premises``)."""
        return _json(config.max_new_premises)

    @app.get("/indexed-premises", response_model=list[str], responses=_ERRORS)
    async def indexed_premises(name: str | None = None) -> Response:
        """Every indexed premise's name; an integer in ``local_premises`` is a position here."""
        return await _listing(name, "premise_names")

    @app.get("/indexed-modules", response_model=list[str], responses=_ERRORS)
    async def indexed_modules(name: str | None = None) -> Response:
        """Every module of the retriever's corpus; an integer in ``imported_modules`` is a
        position here."""
        return await _listing(name, "module_names")

    # The same four under /retrievers/NAME: a base URL for Lean's client when several
    # retrievers are served (it cannot send a name).
    @app.get("/retrievers/{name}/max-new-premises", response_model=int, responses=_ERRORS)
    async def named_max_new_premises(name: str) -> Response:
        _retriever(name)
        return _json(config.max_new_premises)

    @app.get("/retrievers/{name}/indexed-premises", response_model=list[str], responses=_ERRORS)
    async def named_indexed_premises(name: str) -> Response:
        return await _listing(name, "premise_names")

    @app.get("/retrievers/{name}/indexed-modules", response_model=list[str], responses=_ERRORS)
    async def named_indexed_modules(name: str) -> Response:
        return await _listing(name, "module_names")

    @app.post(
        "/retrievers/{name}/retrieve", response_model=list[RetrievedPremise], responses=_ERRORS
    )
    async def named_retrieve(name: str, req: RetrieveRequest) -> Response:
        if req.name is not None and req.name != name:
            raise BadAPIRequestError(
                f"the body names retriever {req.name!r} and the URL {name!r}; drop one"
            )
        return _json(await _retrieve_route(req.model_copy(update={"name": name})))

    # ........................................................................ OpenAI

    async def _chat(req: ChatRequest) -> object:
        return await chat_completion(state, req)

    @app.post("/v1/chat/completions", response_model=ChatResponse, responses=_ERRORS)
    async def chat_completions(req: ChatRequest) -> Response:
        """OpenAI-compatible chat completions over the same generators."""
        answer = await _chat(req)
        return answer if isinstance(answer, Response) else _json(answer)

    @app.get("/v1/models", response_model=ModelList, responses=_ERRORS)
    async def list_models_openai() -> Response:
        """The generators, as OpenAI's model list."""
        data = [model_card(m) for m in registry.models.values() if isinstance(m, GeneratorModel)]
        return _json({"object": "list", "data": data})

    @app.get("/v1/models/{model_id:path}", response_model=ModelCard, responses=_ERRORS)
    async def retrieve_model_openai(model_id: str) -> Response:
        """One generator, as OpenAI's model object (404 in OpenAI's error shape if unknown)."""
        model = registry.models.get(model_id)
        if not isinstance(model, GeneratorModel):
            served = sorted(n for n, m in registry.models.items() if isinstance(m, GeneratorModel))
            raise UnknownModelError(
                f"no generator named {model_id!r}; generators served: "
                f"{', '.join(served) or 'none'} (GET /v1/models)"
            )
        return _json(model_card(model))

    # ........................................................................ operations

    @app.get("/health")
    async def health() -> Response:
        """Liveness: always answers, needs no token."""
        return _json({"status": "ok", "models": len(registry.models)})

    @app.get("/models", responses=_ERRORS)
    async def models() -> Response:
        """Every served model: name, role, kind, whether it is loaded."""
        return _json(
            {
                "models": registry.describe(),
                "progress_model": registry.has_progress,
            }
        )

    @app.get("/metrics", responses=_ERRORS)
    async def metrics() -> Response:
        """Prometheus text: requests, latency, queue depth, batch sizes."""
        return Response(
            state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    state.fast_routes = {
        "/generate": (GenerateRequest, _generate),
        "/encode": (EncodeRequest, _encode),
        "/retrieve": (RetrieveRequest, _retrieve_route),
        "/v1/chat/completions": (ChatRequest, _chat),
    }
    app.add_middleware(_Gate, state=state)
    if not config.cors_origins:
        app._gate = _Gate(None, state)
    else:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return app


def _predict(
    registry: ModelRegistry, goal: str, prefix: str | None, tactics: list[str]
) -> list[float]:
    model = registry.progress()
    values = model.predict([goal] * len(tactics), tactics=tactics, prefixes=[prefix] * len(tactics))
    return [float(v) for v in values] if isinstance(values, list) else [float(values)]


app = create_app()
"""The app of the default config (``uvicorn lean_dojo_v2.external_api.server:app``)."""
