"""Layer 4 (external_api): ``POST /v1/chat/completions``, OpenAI's chat completions.

:func:`chat_completion` is the route's work (``server.py`` wraps it, and its gate calls it
directly): the request checked as OpenAI checks it, then answered by a local generator (the goal
state of the last user turn, batched with other chats) or passed to an upstream adapter.

What OpenAI refuses is refused, with a 400 naming the parameter (OpenAI's ``param``):

- a message's role other than ``system``, ``developer``, ``user``, ``assistant``, ``tool`` (the
  schema's), and its content as OpenAI has it: a string or a non-empty array of content parts,
  required (not null) except for an assistant message with ``tool_calls``; parts are objects
  with a ``type`` (``text`` parts with a string ``text``); a ``tool`` message needs its
  ``tool_call_id``;
- what the server cannot do, rather than ignore it (code ``unsupported_parameter``):
  ``response_format`` other than text, ``tools``, ``tool_choice`` other than none/auto,
  ``functions``, ``function_call`` other than none/auto, ``logit_bias``, ``stop``,
  ``modalities`` other than text, ``audio``, ``prediction``, ``web_search_options``; and
  content parts other than text (images, audio, files: code ``unsupported_value``).

Sampling hints a tactic model may ignore (``top_p``, ``seed``, ``frequency_penalty``,
``presence_penalty``, ``user``, ``metadata``, ``store``, ...) and unknown fields (vLLM's
``top_k`` through ``extra_body``) are accepted and ignored.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

import orjson

from .errors import BadAPIRequestError
from .registry import GeneratorModel, GenOptions, ServedModel, chat_state, message_text

if TYPE_CHECKING:  # pragma: no cover
    from fastapi.responses import StreamingResponse

    from .schemas import ChatMessage, ChatRequest
    from .served import ChatAnswer, Completion
    from .server_state import ServerState

_DEFAULT_OPTIONS = GenOptions()

# A parameter → the values that ask for nothing the server lacks (None: left out or null).
_NOT_ASKED: dict[str, tuple[object, ...]] = {
    "response_format": (None, {"type": "text"}),
    "tools": (None, []),
    "tool_choice": (None, "none", "auto"),
    "functions": (None, []),
    "function_call": (None, "none", "auto"),
    "logit_bias": (None, {}),
    "stop": (None, "", []),
    "modalities": (None, ["text"]),
    "audio": (None,),
    "prediction": (None,),
    "web_search_options": (None,),
}
_WHY = {
    "response_format": "the server answers plain text (tactics), not JSON",
    "tools": "the served models do not call tools",
    "tool_choice": "the served models do not call tools",
    "functions": "the served models do not call functions",
    "function_call": "the served models do not call functions",
    "logit_bias": "the served models sample without token biases",
    "stop": "the served models end each choice at the end of its tactic, not at stop sequences",
    "modalities": "the served models answer text only",
    "audio": "the served models answer text only",
    "prediction": "predicted outputs are not supported",
    "web_search_options": "the served models do not search the web",
}
ROLES = ("system", "developer", "user", "assistant", "tool")
_PART_TYPES = {
    "system": ("text",),
    "developer": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "tool": ("text",),
}


def check_chat_request(req: ChatRequest) -> None:
    """A 400 (:class:`BadAPIRequestError` with OpenAI's ``param`` and ``code``) for a
    parameter the server does not support or a message OpenAI would refuse."""
    extra = req.model_extra or {}
    for name, fine in _NOT_ASKED.items():
        value = extra.get(name)
        if all(value != ok for ok in fine):
            raise BadAPIRequestError(
                f"{name} is not supported: {_WHY[name]}; leave {name} out",
                param=name,
                code="unsupported_parameter",
            )
    for i, message in enumerate(req.messages):
        _check_message(i, message)


def _check_message(i: int, m: ChatMessage) -> None:
    where = f"messages[{i}]"
    content = m.content
    if content is None:
        has_calls = bool((m.model_extra or {}).get("tool_calls")) or bool(
            (m.model_extra or {}).get("function_call")
        )
        if m.role == "assistant" and has_calls:
            pass
        elif m.role == "assistant" or "content" not in m.model_fields_set:
            needs = "unless it has tool_calls" if m.role == "assistant" else "(a string)"
            _refuse(
                f"{where}.content",
                f"a{'n' if m.role[0] in 'aeiou' else ''} {m.role} message needs content {needs}",
                "missing_required_parameter",
            )
        else:
            _refuse(
                f"{where}.content",
                "expected a string or an array of content parts, got null",
                "invalid_type",
            )
    elif isinstance(content, list):
        if not content:
            _refuse(f"{where}.content", "an array of content parts needs a part", "invalid_value")
        for j, part in enumerate(content):
            _check_part(f"{where}.content[{j}]", m.role, part)
    elif not isinstance(content, str):
        _refuse(
            f"{where}.content",
            f"expected a string or an array of content parts, got {_json_type(content)}",
            "invalid_type",
        )
    extra = m.model_extra or {}
    if m.role == "tool" and not isinstance(extra.get("tool_call_id"), str):
        missing = extra.get("tool_call_id") is None
        _refuse(
            f"{where}.tool_call_id",
            "a tool message needs the tool_call_id (a string) it answers",
            "missing_required_parameter" if missing else "invalid_type",
        )
    name = extra.get("name")
    if name is not None and not isinstance(name, str):
        _refuse(f"{where}.name", f"expected a string, got {_json_type(name)}", "invalid_type")


def _check_part(where: str, role: str, part: object) -> None:
    if not isinstance(part, dict):
        _refuse(
            where, f"expected a content part (an object), got {_json_type(part)}", "invalid_type"
        )
    kind = part.get("type")
    allowed = _PART_TYPES[role]
    if kind not in allowed:
        _refuse(
            f"{where}.type",
            f"a {role} message's content parts are of type {' or '.join(map(repr, allowed))}, "
            f"got {kind!r}",
            "invalid_value" if kind is None or isinstance(kind, str) else "invalid_type",
        )
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            _refuse(
                f"{where}.text",
                "a text part needs its text (a string)",
                "missing_required_parameter" if text is None else "invalid_type",
            )
    elif kind != "refusal":
        _refuse(
            f"{where}.type",
            f"{kind} parts are not supported: the served models read text only; send the "
            "content as text",
            "unsupported_value",
        )


def _refuse(param: str, why: str, code: str) -> NoReturn:
    raise BadAPIRequestError(f"{param}: {why}", param=param, code=code)


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else type(value).__name__


# ----------------------------------------------------------------------------- the route


async def chat_completion(
    state: ServerState, req: ChatRequest
) -> dict[str, object] | StreamingResponse:
    """The answer to a chat-completions request (a dict for JSON, or a stream)."""
    config = state.config
    model = state.registry.get(req.model, "generator")
    assert isinstance(model, GeneratorModel)
    check_chat_request(req)
    n = req.n
    state.check_count("n", n, config.max_outputs, "max_outputs")
    max_tokens = req.max_tokens or req.max_completion_tokens
    if max_tokens is not None:
        key = "max_tokens" if req.max_tokens else "max_completion_tokens"
        state.check_count(key, max_tokens, config.max_tokens, "max_tokens")
        state.check_count(
            "n x max_tokens", n * max_tokens, config.max_request_tokens, "max_request_tokens"
        )
    if req.top_logprobs:
        raise BadAPIRequestError(
            "top_logprobs is not supported: a choice's logprobs hold one entry, the whole "
            "completion with its summed log-prob; leave top_logprobs out (or 0)",
            param="top_logprobs",
            code="unsupported_parameter",
        )
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    if req.stream_options is not None and not req.stream:
        raise BadAPIRequestError(
            "stream_options needs stream: true; leave it out otherwise", param="stream_options"
        )
    messages = [{"role": m.role, "content": message_text(m.content)} for m in req.messages]
    state.check_text("the messages", "".join(m["content"] for m in messages))
    options = (
        _DEFAULT_OPTIONS
        if req.temperature is None and max_tokens is None
        else GenOptions(req.temperature, max_tokens)
    )
    if type(model).chat is GeneratorModel.chat:
        # A local model: the goal state of the chat, batched with other chats' (every
        # sample kept, with its token count and finish reason).
        goal, prefix = chat_state(messages)
        key_ = ("complete", n, prefix or "", options)
        prompt_tokens, done = cast(
            "tuple[int, list[Completion]]", await state.submit(model, key_, goal)
        )
        total = None
    else:
        # An upstream server (or a custom model): its choices and usage as it counted them.
        answer = cast("ChatAnswer", await state.submit(model, ("chat", n, options), messages))
        prompt_tokens, done = answer.prompt_tokens, answer.choices
        total = answer.completion_tokens
    created, ident = int(time.time()), f"chatcmpl-{uuid.uuid4().hex}"
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": c.text},
            "finish_reason": c.finish_reason,
            "logprobs": logprobs_entry(c.text, c.logprob) if req.logprobs else None,
        }
        for i, c in enumerate(done)
    ]
    generated = sum(c.tokens for c in done) if total is None else total
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": generated,
        "total_tokens": prompt_tokens + generated,
    }
    if req.stream:
        from fastapi.responses import StreamingResponse

        return StreamingResponse(
            stream_chunks(ident, created, req.model, choices, usage if include_usage else None),
            media_type="text/event-stream",
        )
    return {
        "id": ident,
        "object": "chat.completion",
        "created": created,
        "model": req.model,
        "choices": choices,
        "usage": usage,
    }


def model_card(model: ServedModel) -> dict[str, Any]:
    """OpenAI's model object of a served generator."""
    return {"id": model.name, "object": "model", "created": 0, "owned_by": "lean-dojo-v2"}


def logprobs_entry(text: str, logprob: float | None) -> dict[str, Any] | None:
    """OpenAI's ``logprobs`` of a choice: one entry holding the whole completion and its summed
    log-prob (what ``ExternalProver`` adds up), or None when the model gave none."""
    if logprob is None or not math.isfinite(logprob):
        return None
    return {
        "content": [
            {
                "token": text,
                "logprob": logprob,
                "bytes": list(text.encode("utf-8")),
                "top_logprobs": [],
            }
        ]
    }


async def stream_chunks(
    ident: str,
    created: int,
    model: str,
    choices: Sequence[dict[str, Any]],
    usage: dict[str, int] | None = None,
) -> AsyncIterator[bytes]:
    """Server-sent events: each choice's whole text in one chunk, a closing chunk each, then
    (with ``stream_options.include_usage``) a chunk of no choices carrying the usage, DONE."""
    base: dict[str, Any] = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }
    if usage is not None:
        base["usage"] = None  # as OpenAI: every chunk but the last has "usage": null
    for c in choices:
        delta = {"role": "assistant", "content": c["message"]["content"]}
        chunk = {
            "index": c["index"],
            "delta": delta,
            "logprobs": c["logprobs"],
            "finish_reason": None,
        }
        yield b"data: " + orjson.dumps({**base, "choices": [chunk]}) + b"\n\n"
        end = {
            "index": c["index"],
            "delta": {},
            "logprobs": None,
            "finish_reason": c["finish_reason"],
        }
        yield b"data: " + orjson.dumps({**base, "choices": [end]}) + b"\n\n"
    if usage is not None:
        yield b"data: " + orjson.dumps({**base, "choices": [], "usage": usage}) + b"\n\n"
    yield b"data: [DONE]\n\n"
