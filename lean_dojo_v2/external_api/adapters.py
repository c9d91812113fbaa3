"""Layer 4 (external_api): upstream adapters: models served by another server, over httpx.

- :class:`OpenAIAdapter` (``kind: openai``): any OpenAI-compatible ``/v1/chat/completions``
  (vLLM, OpenAI, Together, ...); ``base_url`` ends in ``/v1``. The key (``api_key_env``, default
  ``OPENAI_API_KEY``) is optional: a local vLLM needs none.
- :class:`AnthropicAdapter` (``kind: anthropic``): the Messages API (``/v1/messages``), key in
  ``ANTHROPIC_API_KEY``; it has no ``n``, so ``n`` requests are made.
- :class:`GoogleAdapter` (``kind: google``): Gemini's ``generateContent`` with
  ``candidateCount``, key in ``GOOGLE_API_KEY``.

Every adapter has a timeout per attempt (``timeout_s``) and retries connection errors, timeouts,
HTTP 408/409/429 and 5xx ``max_retries`` times with exponential backoff (``backoff_s``, honouring
``Retry-After`` up to 10 s). What still fails is an :class:`UpstreamModelError`: HTTP 504 after a
timeout, 502 otherwise (unreachable, an error status, an answer that is not a completion), with
the URL and what to check; the key never appears in a message.

Every answer, an error's included, is streamed and read with a cap (``max_answer_bytes``, default
8 MiB or ``$LEAN_DOJO_V2_MAX_ANSWER_BYTES``: ``ExternalProver``'s cap, read by the same
:func:`~lean_dojo_v2.prover.external_answers.read_capped`): a ``content-length`` over it is refused
before the body is read, and reading stops as soon as a body passes it. Either is a 502 saying
so, not retried (the same question gets the same answer).

``generate`` (the ``/generate`` route) asks for ``n`` completions of the same chat prompt a
local chat model gets (:func:`~lean_dojo_v2.models.prompts.chat_messages`), reduces each to one
tactic (:func:`~lean_dojo_v2.prover.completions.completion_tactic`), scores by summed token
log-probs when the upstream returns them and by log-frequency otherwise; several states are
asked concurrently (``concurrency``). ``chat`` (the ``/v1/chat/completions`` route) passes the
messages through and answers with the upstream's choices, each with its finish reason in OpenAI's
words (``"length"`` when the token limit cut it), and the upstream's own token counts as ``usage``
(0 where it reports none).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar

from ..models.generator import Candidate, finalize
from ..models.prompts import chat_messages
from ..prover.completions import completion_tactic, frequency_scores
from ..prover.external_answers import (
    ExternalAnswerTooLargeError,
    ExternalModelError,
    max_answer_bytes,
    read_capped,
)
from .errors import ModelRegistryError, UpstreamModelError
from .served import ChatAnswer, Completion, GeneratorModel, GenOptions, message_text

if TYPE_CHECKING:  # pragma: no cover
    import httpx

log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 429})
_MAX_RETRY_AFTER = 10.0


class UpstreamAdapter(GeneratorModel):
    """What the three adapters share: options, the httpx client, retries, ``generate``."""

    batchable = False
    default_base_url = ""
    default_key_env = ""
    key_required = True
    options: ClassVar[tuple[str, ...]] = (
        "model",
        "base_url",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "backoff_s",
        "temperature",
        "max_tokens",
        "concurrency",
        "num_samples",
        "max_answer_bytes",
    )

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        super().__init__(name, spec)
        model = self.spec.get("model")
        if not isinstance(model, str) or not model:
            raise ModelRegistryError(
                f"model {name!r} (kind {self.kind!r}) needs 'model': the name the upstream serves"
            )
        self.model = model
        self.base_url = str(self.spec.get("base_url") or self.default_base_url).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ModelRegistryError(
                f"model {name!r}: 'base_url' must be an http(s) URL, got {self.base_url!r}"
            )
        self.key_env = str(self.spec.get("api_key_env") or self.default_key_env)
        self.timeout_s = self._number("timeout_s", 30.0, minimum=0.001)
        self.max_retries = int(self._number("max_retries", 2, minimum=0))
        self.backoff_s = self._number("backoff_s", 0.5, minimum=0)
        self.temperature = self._number("temperature", 0.7, minimum=0)
        self.max_tokens = int(self._number("max_tokens", 256, minimum=1))
        self.concurrency = int(self._number("concurrency", 8, minimum=1))
        self.default_num_samples = self.spec.get("num_samples")
        try:
            self.max_answer_bytes = max_answer_bytes(self.spec.get("max_answer_bytes"))
        except ExternalModelError as exc:
            raise ModelRegistryError(f"model {name!r}: {exc}") from None
        self.requests_sent = 0
        self._client: httpx.Client | None = None

    def _number(self, key: str, default: float, *, minimum: float) -> float:
        value = self.spec.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise ModelRegistryError(
                f"model {self.name!r}: {key!r} must be a number >= {minimum:g}, got {value!r}"
            )
        if not math.isfinite(value):
            raise ModelRegistryError(f"model {self.name!r}: {key!r} must be finite")
        return float(value)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": self.model, "base_url": self.base_url}

    # ..................................................................... transport

    def _key(self) -> str | None:
        key = os.environ.get(self.key_env, "").strip() if self.key_env else ""
        if not key and self.key_required:
            raise UpstreamModelError(
                f"model {self.name!r} needs an API key for {self.base_url}: set the environment "
                f"variable {self.key_env} and restart the server"
            )
        return key or None

    def _load(self) -> None:
        import httpx

        self._client = httpx.Client(
            timeout=self.timeout_s,
            limits=httpx.Limits(max_connections=self.concurrency * 2),
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """POST ``body`` as JSON with the retries of the module doc; the decoded JSON answer
        (``{}`` for an answer that is not a JSON object: the caller finds its fields missing),
        its body read within ``max_answer_bytes``."""
        import httpx

        self.load()
        client = self._client
        if client is None:  # closed: the server is shutting down
            raise UpstreamModelError(
                f"model {self.name!r} was closed (the server is shutting down); restart the server"
            )
        where = f"the upstream model server {url} (model {self.model!r})"
        last = ""
        timed_out = False
        wait = 0.0
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(wait)
            wait = self.backoff_s * (2**attempt)
            self.requests_sent += 1
            try:
                with client.stream("POST", url, json=body, headers=headers) as response:
                    status = response.status_code
                    retry_after = _retry_after(response)
                    data = self._read(response, where)
            except httpx.TimeoutException:
                timed_out, last = True, f"no answer within {self.timeout_s:g} s"
                continue
            except httpx.TransportError as exc:
                timed_out, last = False, f"cannot connect ({type(exc).__name__}: {exc})"
                continue
            except ExternalModelError as exc:  # the body broke off while it streamed
                timed_out = isinstance(exc.__cause__, httpx.TimeoutException)
                last = f"the answer broke off ({type(exc.__cause__).__name__})"
                continue
            if status in _RETRY_STATUS or status >= 500:
                timed_out, last = False, f"HTTP {status} ({_error_text(data)})"
                wait = max(wait, retry_after)
                continue
            if status >= 400:
                hint = (
                    f"check the key in {self.key_env}"
                    if status in (401, 403)
                    else "check the model name and the request limits"
                )
                raise UpstreamModelError(
                    f"{where} answered HTTP {status} ({_error_text(data)}); {hint}"
                )
            try:
                return _object(json.loads(data))
            except (ValueError, RecursionError):
                raise UpstreamModelError(
                    f"{where} answered something that is not JSON ({_preview(data)}); "
                    "check that base_url points at the API root"
                ) from None
        tries = self.max_retries + 1
        if timed_out:
            raise UpstreamModelError(
                f"{where}: {last} ({tries} attempts); raise timeout_s or check its load",
                status=504,
            )
        raise UpstreamModelError(f"{where}: {last} after {tries} attempts; check the server")

    def _read(self, response: httpx.Response, where: str) -> bytes:
        """The body of a streamed answer, read within ``max_answer_bytes`` (a 502 past it)."""
        cap = self.max_answer_bytes
        try:
            return read_capped(response, cap, where, "the request")
        except ExternalAnswerTooLargeError:
            declared = response.headers.get("content-length", "").strip()
            how = (
                f"its content-length says it is {_size(int(declared))}, so it was not read"
                if declared.isdigit() and int(declared) > cap
                else "it went on past that, so reading stopped there"
            )
            raise UpstreamModelError(
                f"{where} answered HTTP {response.status_code} with more than {_size(cap)} "
                f"(max_answer_bytes of model {self.name!r}): {how}. Ask for less (fewer "
                "samples, a smaller max_tokens), or raise max_answer_bytes in the model's "
                "entry of the server config"
            ) from None

    # ..................................................................... the contract

    def complete(
        self, messages: Sequence[Mapping[str, Any]], n: int, options: GenOptions
    ) -> ChatAnswer:
        """``n`` completions of ``messages`` (text, summed log-prob or None, finish reason),
        with the upstream's token counts."""
        raise NotImplementedError

    def chat(
        self, messages: Sequence[Mapping[str, Any]], n: int, options: GenOptions
    ) -> ChatAnswer:
        return self.complete(messages, n, options)

    def generate(
        self, states: list[str], num_samples: int, prefix: str | None, options: GenOptions
    ) -> list[list[Candidate]]:
        if len(states) <= 1 or self.concurrency == 1:
            return [self._candidates(s, num_samples, prefix, options) for s in states]
        with ThreadPoolExecutor(min(self.concurrency, len(states))) as pool:
            jobs = [pool.submit(self._candidates, s, num_samples, prefix, options) for s in states]
            return [j.result() for j in jobs]

    def _candidates(
        self, state: str, n: int, prefix: str | None, options: GenOptions
    ) -> list[Candidate]:
        messages = chat_messages(state)
        if prefix:
            messages[-1]["content"] += f"\n\nYour tactic must start with: {prefix}"
        samples = self.complete(messages, n, options).choices
        texts = [completion_tactic(c.text) if c.text else None for c in samples]
        if prefix:
            texts = [t if t is not None and t.startswith(prefix) else None for t in texts]
        kept = [(t, c.logprob) for t, c in zip(texts, samples, strict=True) if t is not None]
        scored = [(t, float(lp)) for t, lp in kept if lp is not None]
        if kept and len(scored) == len(kept):
            raw = scored
        else:
            freq = frequency_scores(texts)
            raw = [(t, s) for t, s in zip(texts, freq, strict=True) if t is not None]
        return finalize(raw, n)

    def _temperature(self, options: GenOptions) -> float:
        return self.temperature if options.temperature is None else float(options.temperature)

    def _max_tokens(self, options: GenOptions) -> int:
        return self.max_tokens if options.max_tokens is None else int(options.max_tokens)

    def _malformed(self, what: str) -> UpstreamModelError:
        return UpstreamModelError(
            f"the upstream model server {self.base_url} (model {self.model!r}) sent an answer "
            f"that is not a completion ({what}); check that it speaks the {self.kind} API"
        )


class OpenAIAdapter(UpstreamAdapter):
    """An OpenAI-compatible chat-completions server (vLLM, OpenAI, ...)."""

    kind = "openai"
    default_base_url = "http://localhost:8000/v1"
    default_key_env = "OPENAI_API_KEY"
    key_required = False
    options = (*UpstreamAdapter.options, "logprobs")

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        super().__init__(name, spec)
        self.logprobs = bool(self.spec.get("logprobs", True))

    def complete(
        self, messages: Sequence[Mapping[str, Any]], n: int, options: GenOptions
    ) -> ChatAnswer:
        key = self._key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "n": n,
            "temperature": self._temperature(options),
            "max_tokens": self._max_tokens(options),
        }
        if self.logprobs:
            body["logprobs"] = True
        data = self._post(f"{self.base_url}/chat/completions", body, headers)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self._malformed("no 'choices'")
        out: list[Completion] = []
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, str):
                raise self._malformed("a choice without message.content")
            reason = choice.get("finish_reason")
            out.append(
                Completion(
                    content,
                    _openai_logprob(choice.get("logprobs")),
                    finish_reason=reason if isinstance(reason, str) and reason else "stop",
                )
            )
        usage = _object(data.get("usage"))
        return ChatAnswer(
            out, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        )


def _object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (whose fields are all missing)."""
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    """A token count an upstream reported (0 where it reported none or nonsense)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _openai_logprob(logprobs: object) -> float | None:
    tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(tokens, list) or not tokens:
        return None
    values = [t.get("logprob") if isinstance(t, dict) else None for t in tokens]
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return math.fsum(finite) if len(finite) == len(values) else None


class AnthropicAdapter(UpstreamAdapter):
    """Anthropic's Messages API."""

    kind = "anthropic"
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    api_version = "2023-06-01"

    def complete(
        self, messages: Sequence[Mapping[str, Any]], n: int, options: GenOptions
    ) -> ChatAnswer:
        headers = {"x-api-key": self._key() or "", "anthropic-version": self.api_version}
        system = "\n\n".join(
            message_text(m.get("content")) for m in messages if m.get("role") == "system"
        )
        turns = [
            {
                "role": "assistant" if m.get("role") == "assistant" else "user",
                "content": message_text(m.get("content")),
            }
            for m in messages
            if m.get("role") != "system"
        ]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": self._max_tokens(options),
            "temperature": min(self._temperature(options), 1.0),
        }
        if system:
            body["system"] = system

        def one() -> tuple[Completion, int]:
            data = self._post(f"{self.base_url}/v1/messages", body, headers)
            blocks = data.get("content")
            if not isinstance(blocks, list):
                raise self._malformed("no 'content' list")
            text = "".join(
                b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            )
            usage = _object(data.get("usage"))
            reason = "length" if data.get("stop_reason") == "max_tokens" else "stop"
            done = Completion(text, None, _count(usage.get("output_tokens")), reason)
            return done, _count(usage.get("input_tokens"))

        if n == 1 or self.concurrency == 1:
            answers = [one() for _ in range(n)]
        else:
            with ThreadPoolExecutor(min(n, self.concurrency)) as pool:
                answers = list(pool.map(lambda _: one(), range(n)))
        # One request per choice, each with the same prompt: it counts once, as in OpenAI's n.
        return ChatAnswer([c for c, _ in answers], max((p for _, p in answers), default=0))


class GoogleAdapter(UpstreamAdapter):
    """Google's Gemini ``generateContent``."""

    kind = "google"
    default_base_url = "https://generativelanguage.googleapis.com"
    default_key_env = "GOOGLE_API_KEY"

    def complete(
        self, messages: Sequence[Mapping[str, Any]], n: int, options: GenOptions
    ) -> ChatAnswer:
        headers = {"x-goog-api-key": self._key() or ""}
        system = "\n\n".join(
            message_text(m.get("content")) for m in messages if m.get("role") == "system"
        )
        contents = [
            {
                "role": "model" if m.get("role") == "assistant" else "user",
                "parts": [{"text": message_text(m.get("content"))}],
            }
            for m in messages
            if m.get("role") != "system"
        ]
        body: dict[str, Any] = {
            "contents": contents,
            "generationConfig": {
                "candidateCount": n,
                "temperature": self._temperature(options),
                "maxOutputTokens": self._max_tokens(options),
            },
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        url = f"{self.base_url}/v1beta/models/{self.model}:generateContent"
        data = self._post(url, body, headers)
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            raise self._malformed("no 'candidates'")
        out: list[Completion] = []
        for cand in candidates:
            parts = (cand.get("content") or {}).get("parts") if isinstance(cand, dict) else None
            if not isinstance(parts, list):
                raise self._malformed("a candidate without content.parts")
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            reason = _GOOGLE_FINISH.get(str(cand.get("finishReason", "")), "stop")
            out.append(Completion(text, None, finish_reason=reason))
        usage = _object(data.get("usageMetadata"))
        return ChatAnswer(
            out, _count(usage.get("promptTokenCount")), _count(usage.get("candidatesTokenCount"))
        )


# Gemini's finishReason in OpenAI's words; any other reason ends a choice normally ("stop").
_GOOGLE_FINISH = {
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}


def _error_text(data: bytes) -> str:
    """A short text of an error answer's body: its ``error.message`` when it has one."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return " ".join(data[:120].decode("utf-8", "replace").split()) or "no body"
    if isinstance(parsed, dict):
        err = parsed.get("error", parsed)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:200]
        if isinstance(err, str):
            return err[:200]
    return str(parsed)[:120]


def _preview(data: bytes) -> str:
    return repr(data[:80].decode("utf-8", "replace"))


def _size(n: int) -> str:
    """``n`` bytes in words: ``8 MiB``, ``64 KiB``, ``1,500 bytes``."""
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _retry_after(response: httpx.Response) -> float:
    value = response.headers.get("retry-after", "")
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER)
    except ValueError:
        return 0.0
