"""What an OpenAI-compatible model server answers, read with a size cap and checked.

:class:`~lean_dojo_v2.prover.ExternalProver` asks a server it does not control. A proxy's error
page, a server that is not an OpenAI API at all, or one that answers tens of megabytes must end in
one typed line, never a traceback and never hundreds of megabytes of memory (parsing JSON into
Python objects takes about twenty times the text's size). So each answer is:

1. **Read with a cap.** The body is streamed (``httpx``, under the ``openai`` client) and reading
   stops as soon as it passes ``max_answer_bytes`` (default :data:`DEFAULT_MAX_ANSWER_BYTES`,
   or ``$LEAN_DOJO_V2_MAX_ANSWER_BYTES``); any answer whose ``content-length`` already says it is
   larger, an HTTP error's included (:func:`capped_http_client`), is refused before its body is
   read. Either is an :class:`ExternalAnswerTooLargeError`. (The body of an HTTP error sent
   without a length is read by the ``openai`` client itself, uncapped.) A connection that breaks
   or stalls while the body streams is an :class:`ExternalModelError` saying so; the client's
   retries cover only failures before the answer starts.
2. **Parsed.** A body that is not JSON is an :class:`ExternalAnswerError` quoting its start.
3. **Checked.** A chat completion must be an object with a non-empty ``choices`` list whose
   entries are objects with a ``message`` object (:func:`chat_choices`); a model list must be an
   object with a ``data`` list of objects with a text ``id`` (:func:`served_model_ids`). Anything
   else is an :class:`ExternalAnswerError` naming the URL and what came back.

A choice whose ``message.content`` is empty or ``null`` is not malformed: the model said nothing,
and that choice yields no tactic. Token log-probs that are missing or not numbers only change the
score (see :mod:`lean_dojo_v2.prover.external_prover`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from ..data.jsonio import loads
from ..errors import ModelError

if TYPE_CHECKING:
    import openai

DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""8 MiB: about 64 samples of 1,024 tokens each with token log-probs (roughly 100 bytes of JSON
per token), the largest answer the default settings ask for, with room to spare."""
MAX_ANSWER_BYTES_ENV = "LEAN_DOJO_V2_MAX_ANSWER_BYTES"
"""The variable read for the cap when ``max_answer_bytes`` is not given."""

_PREVIEW = 80


class ExternalModelError(ModelError):
    """The OpenAI-compatible model server could not be used: it is unreachable, it timed out or
    kept failing after the retries, it does not serve the model, or it refused the request. The
    message names the URL and the model."""


class ExternalAnswerError(ExternalModelError):
    """The model server answered, but not with what the OpenAI API promises: a body that is not
    JSON, or JSON that is not a chat completion (no ``choices`` list, a choice without a
    ``message``) or not a model list. Inside a search it is an ``"error"`` result, apart from the
    model's tactics failing."""


class ExternalAnswerTooLargeError(ExternalAnswerError):
    """An answer longer than ``max_answer_bytes``; reading stopped there."""


class StreamedAnswer(Protocol):
    """An answer whose body is read piece by piece: an ``httpx.Response`` opened with
    ``stream=True``, or the ``openai`` client's streamed response."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    def iter_bytes(self) -> Iterator[bytes]: ...


class _SentRequest(Protocol):
    @property
    def method(self) -> str: ...

    @property
    def url(self) -> object: ...


class _ArrivingAnswer(Protocol):
    """An answer as the HTTP client's response hook sees it: headers in, body not yet read
    (``httpx.Response``, or ``httpx2.Response`` where the ``openai`` client uses that fork)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def status_code(self) -> int: ...

    @property
    def request(self) -> _SentRequest: ...

    def close(self) -> None: ...


def max_answer_bytes(value: int | None) -> int:
    """The cap to use: ``value``, else ``$LEAN_DOJO_V2_MAX_ANSWER_BYTES``, else
    :data:`DEFAULT_MAX_ANSWER_BYTES`; a whole number of bytes >= 1024."""
    where = "max_answer_bytes"
    if value is None:
        raw = os.environ.get(MAX_ANSWER_BYTES_ENV, "").strip()
        if not raw:
            return DEFAULT_MAX_ANSWER_BYTES
        where = f"${MAX_ANSWER_BYTES_ENV}"
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            raise ExternalModelError(
                f"{where} must be a whole number of bytes (e.g. {DEFAULT_MAX_ANSWER_BYTES}), "
                f"got {raw!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise ExternalModelError(
            f"{where} must be a whole number of bytes >= 1024 (default "
            f"{DEFAULT_MAX_ANSWER_BYTES}), got {value!r}"
        )
    return value


def read_capped(response: StreamedAnswer, cap: int, where: str, what: str) -> bytes:
    """The body of ``response`` (an ``openai`` streamed response or an ``httpx.Response`` opened
    with ``stream=True``), decoded, read piece by piece and given up as soon as it is longer than
    ``cap`` bytes. ``where`` names the server, ``what`` the request (``"POST .../chat/completions"``)."""
    declared = str(response.headers.get("content-length") or "").strip()
    if declared.isdigit() and int(declared) > cap:
        raise _too_large(where, what, cap, f"says it is {_size(int(declared))}")
    body = bytearray()
    try:
        for piece in response.iter_bytes():
            body += piece
            if len(body) > cap:
                raise _too_large(where, what, cap, "went on past that")
    except ExternalAnswerTooLargeError:
        raise
    except Exception as exc:  # noqa: BLE001 - httpx's (or httpx2's) errors, whichever is installed
        # The openai client retries failures before an answer starts, not once its body streams.
        stalled = "Timeout" in type(exc).__name__
        raise ExternalModelError(
            f"{where} broke off its answer to {what} after {len(body):,} bytes "
            f"({type(exc).__name__}: {exc}); "
            + (
                "it stalled: raise timeout=, lower max_tokens, or check the server's load"
                if stalled
                else "check the server (and any proxy in between), then try again"
            )
        ) from exc
    return bytes(body)


def capped_http_client(cap: int, where: str) -> openai.DefaultHttpxClient:
    """The ``openai`` client's own HTTP client (its defaults), refusing any answer whose
    ``content-length`` passes ``cap`` before its body is read: the client reads the body of an
    HTTP error itself, where :func:`read_capped` cannot stop it."""
    import openai

    def refuse_declared(response: _ArrivingAnswer) -> None:
        declared = str(response.headers.get("content-length") or "").strip()
        if declared.isdigit() and int(declared) > cap:
            response.close()
            what = f"{response.request.method} {response.request.url}"
            status = f"HTTP {response.status_code} "
            raise _too_large(where, status + what, cap, f"says it is {_size(int(declared))}")

    return openai.DefaultHttpxClient(event_hooks={"response": [refuse_declared]})


def _too_large(where: str, what: str, cap: int, how: str) -> ExternalAnswerTooLargeError:
    return ExternalAnswerTooLargeError(
        f"{where} answered {what} with more than {_size(cap)} (max_answer_bytes); the answer "
        f"{how}, so it was not read. Ask for less (fewer samples, a smaller max_tokens, "
        f"logprobs=False) or raise max_answer_bytes= / ${MAX_ANSWER_BYTES_ENV}"
    )


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def preview(data: bytes | str) -> str:
    """The start of an answer, on one line, for an error message."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join(text.split())
    if not text:
        return "an empty body"
    cut = text[:_PREVIEW] + ("..." if len(text) > _PREVIEW else "")
    return repr(cut)


def parse_json(data: bytes, where: str, what: str) -> object:
    """``data`` as JSON, or an :class:`ExternalAnswerError` quoting its start."""
    try:
        return loads(data)
    except ValueError:  # every failure of the one JSON reader is a DataFormatError
        raise ExternalAnswerError(
            f"{where} answered {what} with a body that is not JSON ({preview(data)}); check "
            "that base_url is an OpenAI-compatible API root (it usually ends in /v1) and not a "
            "web page or a proxy's error page"
        ) from None


def chat_choices(body: object, where: str, what: str) -> list[tuple[str | None, float | None]]:
    """Per choice of a chat completion: its text (None when empty or ``null``) and the sum of its
    token log-probs (None when not returned or not numbers). A body that is not a chat completion
    is an :class:`ExternalAnswerError`."""

    def wrong(why: str) -> ExternalAnswerError:
        return ExternalAnswerError(
            f"{where} answered {what} with JSON that is not a chat completion ({why}: "
            f"{preview(json.dumps(body))}); check that the server speaks the OpenAI chat "
            "completions API"
        )

    if not isinstance(body, dict):
        raise wrong(f"a {type(body).__name__}, not an object")
    if isinstance(body.get("error"), dict | str):  # some servers answer errors with status 200
        raise ExternalAnswerError(f"{where} answered {what} with an error: {_error_text(body)}")
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise wrong("no 'choices' list")
    if not choices:
        raise wrong("an empty 'choices' list")
    out: list[tuple[str | None, float | None]] = []
    for i, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise wrong(f"choice {i} has no 'message' object")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise wrong(f"choice {i}'s message.content is a {type(content).__name__}")
        text = content if content and content.strip() else None
        out.append((text, _logprob(choice.get("logprobs")) if text is not None else None))
    return out


def usage_counts(body: object) -> tuple[int, int]:
    """``(prompt_tokens, completion_tokens)`` of a chat completion's ``usage`` (what the server
    billed); ``(0, 0)`` for a server that does not say."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return count("prompt_tokens"), count("completion_tokens")


def served_model_ids(body: object, where: str, what: str) -> list[str]:
    """The model ids of a ``GET /models`` answer (``{"data": [{"id": ...}, ...]}``), or an
    :class:`ExternalAnswerError` saying what came back instead."""
    data = body.get("data") if isinstance(body, dict) else None
    ids = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else None
    names = [i for i in ids or () if isinstance(i, str) and i]
    if ids is None or len(names) != len(ids):
        raise ExternalAnswerError(
            f"{where} answered {what} with JSON that is not a model list "
            f'({preview(json.dumps(body))}; expected {{"data": [{{"id": ...}}]}}); check '
            "that base_url is an OpenAI-compatible API root, or name the model with "
            "model_name= / $LEAN_DOJO_V2_EXTERNAL_MODEL"
        )
    return names


def _logprob(logprobs: object) -> float | None:
    """The sum of a choice's token log-probs, or None when they are missing or not numbers."""
    tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(tokens, list) or not tokens:
        return None
    values = [t.get("logprob") if isinstance(t, dict) else None for t in tokens]
    numbers = [
        float(v)
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    if len(numbers) != len(values):
        return None
    return math.fsum(numbers)


def _error_text(body: Mapping[str, object]) -> str:
    err = body.get("error")
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:200]
    return preview(json.dumps(err))


__all__ = [
    "DEFAULT_MAX_ANSWER_BYTES",
    "MAX_ANSWER_BYTES_ENV",
    "ExternalAnswerError",
    "ExternalAnswerTooLargeError",
    "ExternalModelError",
    "StreamedAnswer",
    "capped_http_client",
    "chat_choices",
    "max_answer_bytes",
    "parse_json",
    "preview",
    "read_capped",
    "served_model_ids",
]
