"""Layer 4 (external_api): what the routes share, and the blocking model calls.

:class:`ServerState` holds the config, the registry, one
:class:`~lean_dojo_v2.external_api.batching.Batcher` per model and the metrics, and checks the
limits every route applies (:meth:`ServerState.check_text`, :meth:`ServerState.check_count`).
:func:`run_batch` is what a batcher's model thread runs for one batch: the operation its key
names, on the payloads; a local generator's prompts are measured in its tokens first, and one
over the model's context or ``max_request_tokens`` is refused alone (:func:`oversized`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import LeanDojoError
from .batching import Batcher
from .errors import APIServerError, BadAPIRequestError
from .metrics import Metrics
from .registry import (
    EncoderModel,
    GeneratorModel,
    GenOptions,
    ModelRegistry,
    RetrieverModel,
    ServedModel,
)
from .served import TokenCounts

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from .config import ServeConfig
    from .schemas import RetrieveRequest

log = logging.getLogger(__name__)

FastRoute = tuple["type[BaseModel]", Callable[[Any], Awaitable[object]]]
"""A model route the server's gate serves directly: its request model, and its handler of a
request of that model."""


class ServerState:
    """What the routes share: the config, the registry, one batcher per model, the metrics."""

    def __init__(self, config: ServeConfig, registry: ModelRegistry) -> None:
        self.config = config
        self.registry = registry
        self.metrics = Metrics()
        self.batchers: dict[str, Batcher] = {}
        self.fast_routes: dict[str, FastRoute] = {}
        """path → (request model, handler): the model routes :class:`_Gate` serves directly."""
        self.metrics.queue_depths = lambda: {n: b.depth() for n, b in self.batchers.items()}
        self.metrics.rejections = self._rejections

    def _rejections(self) -> dict[tuple[str, str], int]:
        out = {}
        for name, b in self.batchers.items():
            out[(name, "queue_full")] = b.stats.rejected_full
            out[(name, "deadline")] = b.stats.dropped_deadline
        return out

    def batcher(self, model: ServedModel) -> Batcher:
        b = self.batchers.get(model.name)
        if b is None:
            cfg = self.config
            b = self.batchers[model.name] = Batcher(
                model.name,
                functools.partial(run_batch, model, max_request_tokens=cfg.max_request_tokens),
                max_batch=cfg.max_batch,
                max_queue=cfg.max_queue,
                window_s=cfg.batch_window_ms / 1000.0,
                timeout_s=cfg.queue_timeout_s,
                concurrency=model.concurrency,
                batchable=model.batchable,
                on_batch=functools.partial(self.metrics.batch, model.name),
            )
        return b

    async def submit(self, model: ServedModel, key: Hashable, payload: object) -> object:
        """The model's answer to ``payload`` (what it is follows the operation of ``key``, see
        :func:`run_batch`), through the model's batcher; a model's failure is an
        :class:`APIServerError` (500)."""
        try:
            return await self.batcher(model).submit(key, payload)
        except (APIServerError, asyncio.CancelledError):
            raise
        except LeanDojoError as exc:
            raise APIServerError(f"model {model.name!r} failed: {exc}", status=500) from exc
        except Exception as exc:
            log.exception("model %r failed", model.name)
            raise APIServerError(
                f"model {model.name!r} failed ({type(exc).__name__}: {exc}); see the server log",
                status=500,
            ) from exc

    def check_text(self, what: str, text: str | None) -> None:
        limit = self.config.max_input_chars
        if text is not None and len(text) > limit:
            raise BadAPIRequestError(
                f"{what} is {len(text)} characters; the limit is {limit} (max_input_chars); "
                "send less, or raise max_input_chars in the server config",
                status=413,
            )

    def check_count(self, what: str, value: int, limit: int, key: str) -> None:
        if value > limit:
            raise BadAPIRequestError(
                f"{what} is {value}; the limit is {limit} ({key}); ask for less, or raise "
                f"{key} in the server config",
                param=what if what.isidentifier() else None,
            )


def run_batch(
    model: ServedModel, key: Hashable, payloads: list[object], max_request_tokens: int
) -> Sequence[object]:
    """The blocking model call of one batch (in a worker thread). The key says the operation and
    what the payloads are: ``("generate" | "complete", n, prefix, options)`` and goal states,
    ``("chat", n, options)`` and chats' messages, ``("encode",)`` and texts, ``("retrieve",)``
    and :class:`RetrieveRequest` s; the routes ask only a model of the matching role."""
    match key:
        case ("generate" | "complete" as op, int() as n, str() as prefix, GenOptions() as options):
            gen = cast(GeneratorModel, model)
            states = cast("list[str]", payloads)
            return _run_generator(gen, op, states, n, prefix or None, options, max_request_tokens)
        case ("chat", int() as n, GenOptions() as options):
            chats = cast("list[list[dict[str, str]]]", payloads)
            return [cast(GeneratorModel, model).chat(m, n, options) for m in chats]
        case ("encode",):
            return list(cast(EncoderModel, model).encode(cast("list[str]", payloads)))
        case ("retrieve",):
            retriever = cast(RetrieverModel, model)
            return [_retrieve(retriever, r) for r in cast("list[RetrieveRequest]", payloads)]
    raise ValueError(f"unknown operation {key!r}")  # pragma: no cover


def _run_generator(
    gen: GeneratorModel,
    op: str,
    states: list[str],
    n: int,
    prefix: str | None,
    options: GenOptions,
    max_request_tokens: int,
) -> Sequence[object]:
    """``generate`` (candidates) or ``complete`` (a chat's choices, with the prompt's size for its
    usage) of a batch of states. A generator that counts tokens has each state checked first
    (:func:`oversized`): one that does not fit is answered with its refusal, the rest of the
    batch is decoded."""
    counts = gen.token_counts(states, prefix, options)
    if counts is None and op == "generate":
        return gen.generate(states, n, prefix, options)
    out: list[object] = [None] * len(states)
    if counts is not None:
        for i, size in enumerate(counts.prompts):
            out[i] = oversized(gen.name, n, size, counts, max_request_tokens)
    keep = [i for i, refusal in enumerate(out) if refusal is None]
    if not keep:
        return out
    kept = [states[i] for i in keep]
    done: Sequence[object]
    if op == "generate":
        done = gen.generate(kept, n, prefix, options)
    else:
        sizes = counts.prompts if counts is not None else [0] * len(states)
        choices = gen.completions(kept, n, prefix, options)
        done = [(sizes[i], c) for i, c in zip(keep, choices, strict=True)]
    for i, d in zip(keep, done, strict=True):
        out[i] = d
    return out


def oversized(
    name: str, n: int, prompt: int, counts: TokenCounts, max_request_tokens: int
) -> BadAPIRequestError | None:
    """The refusal of a prompt of ``prompt`` tokens sampled ``n`` times, or None when it fits:
    over the model's context (413), or over ``max_request_tokens`` (400)."""
    new = counts.max_new
    if counts.context is not None:
        need = prompt + new if counts.shared_context else prompt
        if need > counts.context:
            what = f"{prompt} prompt + {new} new tokens" if counts.shared_context else "the prompt"
            return BadAPIRequestError(
                f"the request needs {need} tokens ({what}) but model {name!r} has a context "
                f"length of {counts.context} tokens; send a shorter goal state"
                + (" or a smaller max_tokens" if counts.shared_context else ""),
                status=413,
                param="messages",
                code="context_length_exceeded",
            )
    held = n * (prompt + new)
    if held > max_request_tokens:
        return BadAPIRequestError(
            f"the request would hold {held} tokens ({n} samples x ({prompt} prompt + {new} new "
            f"tokens)); the limit is {max_request_tokens} (max_request_tokens); ask for fewer "
            "samples or tokens, or raise max_request_tokens in the server config"
        )
    return None


def _retrieve(model: RetrieverModel, req: RetrieveRequest) -> list[dict[str, Any]]:
    from .premise_selection import rank_premises

    return rank_premises(model, req)
