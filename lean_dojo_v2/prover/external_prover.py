"""``ExternalProver``: tactics and whole proofs from a model behind an OpenAI-compatible chat API.

Anything that speaks ``POST /v1/chat/completions`` works: a vLLM server (``vllm serve MODEL``,
base URL ``http://HOST:8000/v1``), a hosted model (OpenAI, Together, DeepSeek, the Hugging Face
router, ...), or a server of our own. Requests go through the official ``openai`` client:

* **Prompt.** :func:`lean_dojo_v2.models.prompts.chat_messages`: the same system and user turns a
  local chat model gets through its template (premises included when given), or the whole-proof
  instruction for :meth:`ExternalProver.generate_proofs`.
* **Samples.** One request per goal state asks for ``n = num_samples`` choices. A server that
  ignores ``n`` (answers fewer choices) is asked again for the rest, up to ``num_samples``
  requests per state. Several states are requested concurrently (``max_concurrency`` threads).
* **Retries and timeouts.** The client retries connection errors, timeouts, HTTP 408/409/429 and
  5xx with exponential backoff (``max_retries`` times, honouring ``Retry-After``); each attempt
  may take ``timeout`` seconds. What still fails raises :class:`ExternalModelError` naming the
  URL and what to do: the search records it as an ``"error"`` result.
* **Text to tactic.** :func:`~lean_dojo_v2.prover.completions.completion_tactic` (fenced blocks
  unwrapped, a repeated statement and a leading ``by`` removed, multi-line tactics kept whole),
  or :func:`~lean_dojo_v2.prover.completions.completion_proof` for whole proofs; empty answers and
  ``sorry``/``admit`` are dropped, duplicates merged.
* **Scores.** With ``logprobs=True`` the request asks for token log-probs; when every kept choice
  has them, a candidate's score is the sum of its completion's token log-probs. Otherwise (the
  server does not return them, or refuses the option, which is then not asked again) the score is
  the candidate's log-frequency among the samples
  (:func:`~lean_dojo_v2.prover.completions.frequency_scores`), ties in the server's order.
* **Bad answers** (:mod:`~lean_dojo_v2.prover.external_answers`). Every answer is streamed and
  read up to ``max_answer_bytes`` (default 8 MiB, or ``$LEAN_DOJO_V2_MAX_ANSWER_BYTES``); a
  longer one is an :class:`ExternalAnswerTooLargeError` and is not read further. A body that is
  not JSON, or JSON that is not a chat completion (no ``choices`` list, a choice without a
  ``message``), is an :class:`ExternalAnswerError` naming the URL and quoting what came back: the
  search records an ``"error"`` result, apart from a search whose tactics all failed. A choice
  whose text is empty or ``null`` is the model saying nothing: it yields no candidate (a
  warning), not an error.
* **Defaults from the environment.** ``ExternalProver()`` with no arguments (upstream's example)
  talks to ``$OPENAI_BASE_URL`` (else a local vLLM, :data:`DEFAULT_BASE_URL`; upstream
  LeanDojo-v2 defaulted to the Hugging Face Inference API instead) with ``$OPENAI_API_KEY``, and
  uses the model named by ``$LEAN_DOJO_V2_EXTERNAL_MODEL``, else the first model the server lists
  at ``GET {base_url}/models``, asked once at first use (so constructing never touches the
  network). An unreachable server is an :class:`ExternalModelError` naming the URL it tried,
  where that URL came from (``base_url=``, ``$OPENAI_BASE_URL`` or the default) and how to point
  the prover elsewhere; a ``/models`` answer that is not a model list is an
  :class:`ExternalAnswerError` saying what came back.
* **Upstream LeanDojo-v2's calls.** :meth:`ExternalProver.next_tactic` (the best tactic for one
  state) and :meth:`ExternalProver.generate_whole_proof` (the best whole proof of a theorem).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..models.generator import (
    Candidate,
    Completion,
    GeneratorUsage,
    UsageMeter,
    check_generate_args,
    finalize,
)
from ..models.prompts import chat_messages
from ..models.proof_prompt import ProofPrompt, ProofRequest, default_proof_prompt
from .base import BaseProver
from .completions import (
    check_requests,
    completion_proof,
    completion_tactic,
    frequency_scores,
    state_text,
    whole_proof_input,
)
from .external_answers import (
    ExternalAnswerError,
    ExternalAnswerTooLargeError,
    ExternalModelError,
    capped_http_client,
    chat_choices,
    parse_json,
    read_capped,
    served_model_ids,
    usage_counts,
)
from .external_answers import (
    max_answer_bytes as answer_cap,
)
from .threads import CallAbandoned, abandoned

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://localhost:8000/v1"
"""vLLM's default (``vllm serve MODEL``); used when neither ``base_url`` nor ``$OPENAI_BASE_URL``
is given."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""The variable the ``openai`` client itself reads for its base URL."""
API_KEY_ENV = "OPENAI_API_KEY"
"""The variable the key is read from when ``api_key`` is not given (in each worker process, too)."""
MODEL_ENV = "LEAN_DOJO_V2_EXTERNAL_MODEL"
"""The model to ask for when ``model_name`` is not given."""
HOSTED_EXAMPLE_URL = "https://router.huggingface.co/v1"
"""A hosted OpenAI-compatible API, named in the error for an unreachable default URL (the Hugging
Face router: upstream LeanDojo-v2's default was Hugging Face's Inference API)."""


def unreachable_hint(base_url: str, source: str) -> str:
    """What to do when nothing answers at ``base_url``; ``source`` says where the URL came from:
    ``"argument"`` (``base_url=``), ``"env"`` (``$OPENAI_BASE_URL``) or ``"default"``."""
    elsewhere = (
        f"point the prover elsewhere with base_url= or ${BASE_URL_ENV} (e.g. "
        f"{HOSTED_EXAMPLE_URL}, the Hugging Face router, with your token in ${API_KEY_ENV})"
    )
    if source == "default":
        return (
            f"{base_url} is the default, a local vLLM (neither base_url= nor ${BASE_URL_ENV} was "
            f"given): start one there (`vllm serve MODEL`), or {elsewhere}"
        )
    if source == "env":
        return (
            f"{base_url} came from ${BASE_URL_ENV}: start the server there (e.g. `vllm serve "
            f"MODEL`), or change ${BASE_URL_ENV} (base_url= takes precedence)"
        )
    return f"start the server at {base_url} (e.g. `vllm serve MODEL`), or {elsewhere}"


__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "MODEL_ENV",
    "ExternalAnswerError",
    "ExternalAnswerTooLargeError",
    "ExternalModelError",
    "ExternalProver",
    "check_endpoint",
]


class ExternalProver(BaseProver):
    """Tactic generator over an OpenAI-compatible chat endpoint.

    ``model_name``: the model the server serves (``GET {base_url}/models`` lists them); default
    ``$LEAN_DOJO_V2_EXTERNAL_MODEL``, else the first model the server lists, asked at first use.
    ``base_url``: the API root, ending in ``/v1``; default ``$OPENAI_BASE_URL``, else a local vLLM
    (``http://localhost:8000/v1``).
    ``api_key``: the bearer token; default ``$OPENAI_API_KEY``, else ``"EMPTY"`` (vLLM and our own
    server accept any). ``timeout``: seconds one HTTP attempt may take. ``max_retries``: retries
    of connection errors, timeouts, 408/409/429 and 5xx (exponential backoff, by the client).
    ``temperature``/``top_p``: sampling. ``max_tokens``: the longest tactic completion;
    ``max_proof_tokens``: the longest whole-proof completion. ``logprobs``: ask for token
    log-probs (see the module docstring for the score without them). ``max_concurrency``: goal
    states requested at the same time. ``premises``: optional premise texts put in every prompt
    (a retrieval-augmented caller passes them per call through :meth:`generate_with_premises`).
    ``extra_body``: extra JSON fields for every request (e.g. vLLM's ``{"top_k": 20}``).
    ``max_answer_bytes``: the longest answer read (default ``$LEAN_DOJO_V2_MAX_ANSWER_BYTES``,
    else 8 MiB); a longer one is an :class:`ExternalAnswerTooLargeError`.
    """

    def __init__(
        self,
        model_name: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        temperature: float = 0.7,
        max_tokens: int = 256,
        *,
        top_p: float = 0.95,
        max_proof_tokens: int = 1024,
        logprobs: bool = True,
        max_concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if model_name is None:
            model_name = os.environ.get(MODEL_ENV) or None
        if model_name is not None and (not isinstance(model_name, str) or not model_name.strip()):
            raise ExternalModelError("model_name must be the name of a model the server serves")
        # Where the URL came from goes into the error when nothing answers there.
        self.base_url_source = "argument"
        if base_url is None:
            base_url = os.environ.get(BASE_URL_ENV) or None
            self.base_url_source = "env"
        if base_url is None:
            base_url, self.base_url_source = DEFAULT_BASE_URL, "default"
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ExternalModelError(
                f"base_url must be an http(s) URL such as {DEFAULT_BASE_URL}, got {base_url!r}"
            )
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ExternalModelError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ExternalModelError(
                f"max_retries must be a whole number >= 0, got {max_retries!r}"
            )
        if not (temperature >= 0 and math.isfinite(temperature)):
            raise ExternalModelError(f"temperature must be >= 0, got {temperature!r}")
        if not 0 < top_p <= 1:
            raise ExternalModelError(f"top_p must be in (0, 1], got {top_p!r}")
        if max_tokens < 1 or max_proof_tokens < 1 or max_concurrency < 1:
            raise ExternalModelError(
                "max_tokens, max_proof_tokens and max_concurrency must be >= 1"
            )
        self._model_name: str | None = model_name
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_tokens = int(max_tokens)
        self.max_proof_tokens = int(max_proof_tokens)
        self.logprobs = bool(logprobs)
        self.max_concurrency = int(max_concurrency)
        self.extra_body = dict(extra_body or {})
        self.max_answer_bytes = answer_cap(max_answer_bytes)
        self.requests_sent = 0
        """HTTP requests made so far (each may have been retried by the client)."""
        self.meter = UsageMeter()
        """What the server reported it used (:meth:`usage`)."""
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()

    def __repr__(self) -> str:
        name = self._model_name if self._model_name is not None else "<first served model>"
        return f"ExternalProver({name!r}, base_url={self.base_url!r})"

    # The client holds sockets and a lock: a copy sent to a worker process makes its own.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state["_lock"] = None
        state["_model_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The model requests ask for: the one given, else the first one the server lists
        (``GET {base_url}/models``, asked once)."""
        with self._model_lock:
            if self._model_name is None:
                self._model_name = self._first_served_model()
            return self._model_name

    def _first_served_model(self) -> str:
        import openai

        where = f"the model server at {self.base_url}"
        try:
            served = _served_models(self.client, self.base_url, self.max_answer_bytes)
        except openai.APIConnectionError as exc:  # timeouts included
            raise ExternalModelError(
                f"cannot reach {where} to ask which model it serves ({exc.__cause__ or exc}); "
                f"{unreachable_hint(self.base_url, self.base_url_source)}; or name the model "
                f"with model_name= / ${MODEL_ENV}"
            ) from None
        except openai.APIStatusError as exc:
            raise ExternalModelError(
                f"{where} answered HTTP {exc.status_code} to GET {self.base_url}/models "
                f"({_message(exc)}); name the model with model_name= or {MODEL_ENV}"
            ) from None
        if not served:
            raise ExternalModelError(
                f"{where} lists no model at GET {self.base_url}/models; name the model with "
                f"model_name= or {MODEL_ENV}"
            )
        log.info("%s serves %s; using %r", where, served, served[0])
        return served[0]

    def check_endpoint(self) -> None:
        """One request before any search (``GET {base_url}/models``): the server answers, and
        serves :attr:`model_name` when it lists models. Without a model name, this is asking for
        the first served one. Raises :class:`ExternalModelError` (one line, naming the URL)."""
        if self._model_name is None:
            self.model_name  # noqa: B018 - asks the server
            return
        check_endpoint(
            self.base_url,
            self._model_name,
            self._api_key or os.environ.get(API_KEY_ENV),
            hint=unreachable_hint(self.base_url, self.base_url_source),
            max_answer_bytes=self.max_answer_bytes,
        )

    @property
    def client(self) -> openai.OpenAI:
        """The ``openai.OpenAI`` client (created on first use)."""
        with self._lock:
            if self._client is None:
                import openai

                key = self._api_key or os.environ.get(API_KEY_ENV) or "EMPTY"
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                    http_client=capped_http_client(
                        self.max_answer_bytes, f"the model server at {self.base_url}"
                    ),
                )
            return self._client

    # ..................................................................... the contract

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, prefix)
        return self._many(states, num_samples, prefix=prefix, whole_proof=False, premises=None)

    def generate_proofs(self, states: list[str], num_samples: int) -> list[list[Candidate]]:
        check_generate_args(states, num_samples, None)
        return self._many(states, num_samples, prefix=None, whole_proof=True, premises=None)

    def generate_with_premises(
        self,
        states: list[str],
        num_samples: int,
        premises: Sequence[Sequence[str]],
        *,
        prefix: str | None = None,
        whole_proof: bool = False,
    ) -> list[list[Candidate]]:
        """:meth:`generate` (or :meth:`generate_proofs`) with ``premises[i]`` (premise texts) in
        the prompt of ``states[i]``."""
        check_generate_args(states, num_samples, prefix)
        if len(premises) != len(states):
            raise ExternalModelError(
                f"premises has {len(premises)} entries for {len(states)} states; pass one list each"
            )
        return self._many(
            states, num_samples, prefix=prefix, whole_proof=whole_proof, premises=premises
        )

    def usage(self) -> GeneratorUsage:
        """What the server reported for every answer so far (its ``usage``: prompt and
        completion tokens; 0 where a server does not say) and the seconds the requests took. A
        remote server uses no GPU of this machine: ``gpu_seconds`` stays 0."""
        return self.meter.total()

    def sample_proofs(
        self,
        requests: Sequence[ProofRequest],
        num_samples: int,
        *,
        prompt: ProofPrompt | None = None,
    ) -> list[list[Completion]]:
        """Exactly ``num_samples`` answers per request as the model wrote them (duplicates and
        empty answers included; ``""`` for an empty one): ``prompt``'s messages (None:
        :func:`~lean_dojo_v2.models.proof_prompt.default_proof_prompt` of each task), ``n``
        choices per request (asked again for the rest when the server sends fewer), up to
        ``max_proof_tokens`` each. Requests run concurrently (``max_concurrency``)."""
        check_requests(requests, num_samples)
        chats = [(prompt or default_proof_prompt(r.task)).messages(r) for r in requests]
        stop = abandoned()  # the search gave up waiting: no further request

        def answers(messages: list[dict[str, str]]) -> list[Completion]:
            got: list[tuple[str | None, float | None]] = []
            while len(got) < num_samples:  # a server that ignores n answers one per request
                _check_stop(stop)
                got.extend(self._request(messages, num_samples - len(got), self.max_proof_tokens))
            return [Completion(text or "", lp) for text, lp in got[:num_samples]]

        if len(chats) == 1 or self.max_concurrency == 1:
            return [answers(m) for m in chats]
        with ThreadPoolExecutor(min(self.max_concurrency, len(chats))) as pool:
            return list(pool.map(answers, chats))

    # ................................................................ upstream LeanDojo-v2's calls

    def next_tactic(self, state: object, goal_id: int = 0, *, num_samples: int = 1) -> str | None:
        """Upstream LeanDojo-v2's one-tactic call: the best of ``num_samples`` tactics for
        ``state`` (a goal state text, a :class:`~lean_dojo_v2.interaction.ProofState`, or anything
        whose ``str`` is the state), or None when the model proposed none. ``goal_id`` is
        upstream's argument; as upstream, the model sees the whole state."""
        del goal_id
        (candidates,) = self.generate([state_text(state)], num_samples)
        return candidates[0].tactic if candidates else None

    def generate_whole_proof(self, theorem: object, *, num_samples: int = 1) -> str:
        """Upstream LeanDojo-v2's whole-proof call: the best of ``num_samples`` whole proofs of
        ``theorem`` (the text of a statement such as ``"theorem t : p ∧ q → q ∧ p := by"``, a
        :class:`~lean_dojo_v2.data.Theorem` or a goal state), as a tactic block without a
        leading ``by``; ``""`` when the model proposed none."""
        (candidates,) = self.generate_proofs([whole_proof_input(theorem)], num_samples)
        return candidates[0].tactic if candidates else ""

    # ..................................................................... requests

    def _many(
        self,
        states: list[str],
        n: int,
        *,
        prefix: str | None,
        whole_proof: bool,
        premises: Sequence[Sequence[str]] | None,
    ) -> list[list[Candidate]]:
        if not states:
            return []
        jobs = [(s, premises[i] if premises is not None else ()) for i, s in enumerate(states)]
        stop = abandoned()  # read here: the pool's threads are not the timed call's
        if len(jobs) == 1 or self.max_concurrency == 1:
            return [self._candidates(s, p, n, prefix, whole_proof, stop) for s, p in jobs]
        with ThreadPoolExecutor(min(self.max_concurrency, len(jobs))) as pool:
            futures = [
                pool.submit(self._candidates, s, p, n, prefix, whole_proof, stop) for s, p in jobs
            ]
            return [f.result() for f in futures]

    def _candidates(
        self,
        state: str,
        premises: Sequence[str],
        n: int,
        prefix: str | None,
        whole_proof: bool,
        stop: threading.Event,
    ) -> list[Candidate]:
        messages = chat_messages(state, premises, whole_proof=whole_proof)
        if prefix:
            messages[-1]["content"] += f"\n\nYour tactic must start with: {prefix}"
        max_tokens = self.max_proof_tokens if whole_proof else self.max_tokens
        samples: list[tuple[str | None, float | None]] = []
        for _ in range(n):  # a server that ignores n answers one choice per request
            _check_stop(stop)
            samples.extend(self._request(messages, n - len(samples), max_tokens))
            if len(samples) >= n:
                break
        extract = completion_proof if whole_proof else completion_tactic
        texts = [extract(text) for text, _ in samples]
        if prefix:
            texts = [t if t is not None and t.startswith(prefix) else None for t in texts]
        kept = [(t, lp) for t, (_, lp) in zip(texts, samples, strict=True) if t is not None]
        if kept and all(lp is not None for _, lp in kept):
            raw = [(t, float(lp)) for t, lp in kept if lp is not None]
        else:
            raw = [
                (t, s) for t, s in zip(texts, frequency_scores(texts), strict=True) if t is not None
            ]
        return finalize(raw, n)

    def _request(
        self, messages: list[dict[str, str]], n: int, max_tokens: int
    ) -> list[tuple[str | None, float | None]]:
        """One chat request: per choice (at least one), its text (None when empty) and the sum of
        its token log-probs (None when not returned). A malformed or oversized answer raises
        :class:`ExternalAnswerError`."""
        import openai

        kwargs: dict[str, Any] = dict(
            model=self.model_name,
            messages=messages,
            n=n,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_tokens,
        )
        if self.logprobs:
            kwargs["logprobs"] = True
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        where = f"the model server at {self.base_url} (model {self.model_name!r})"
        what = f"POST {self.base_url}/chat/completions"
        self.requests_sent += 1
        started = time.perf_counter()
        try:
            # Streamed, so that an answer past max_answer_bytes is never read whole.
            with self.client.chat.completions.with_streaming_response.create(**kwargs) as raw:
                data = read_capped(raw, self.max_answer_bytes, where, what)
        except openai.APITimeoutError as exc:
            raise ExternalModelError(
                f"{where} did not answer within {self.timeout:g} s ({self.max_retries} retries); "
                "raise timeout=, lower max_tokens, or check the server's load"
            ) from exc
        except openai.APIConnectionError as exc:
            raise ExternalModelError(
                f"cannot reach {where} ({exc.__cause__ or exc}); "
                f"{unreachable_hint(self.base_url, self.base_url_source)}"
            ) from exc
        except openai.NotFoundError as exc:
            raise ExternalModelError(
                f"{where} answered 404 ({_message(exc)}): it does not serve this model, or the "
                f"base_url does not end in /v1; list the served models with GET {self.base_url}/models"
            ) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ExternalModelError(
                f"{where} refused the API key (HTTP {exc.status_code}: {_message(exc)}); pass "
                "api_key= or set OPENAI_API_KEY"
            ) from exc
        except openai.BadRequestError as exc:
            if self.logprobs and "logprob" in str(exc).lower():
                log.warning("%s does not support logprobs; scoring by frequency instead", where)
                self.logprobs = False
                return self._request(messages, n, max_tokens)
            raise ExternalModelError(
                f"{where} rejected the request (HTTP 400: {_message(exc)}); check the model's "
                "limits (max_tokens, n) and the sampling settings"
            ) from exc
        except openai.APIStatusError as exc:
            raise ExternalModelError(
                f"{where} answered HTTP {exc.status_code} ({_message(exc)}) after "
                f"{self.max_retries} retries; check the server's log"
            ) from exc
        body = parse_json(data, where, what)
        out = chat_choices(body, where, what)
        tokens_in, tokens_out = usage_counts(body)
        self.meter.add(
            tokens_in=tokens_in, tokens_out=tokens_out, seconds=time.perf_counter() - started
        )
        empty = sum(text is None for text, _ in out)
        if empty:
            log.warning("%s sent %d of %d choices without text; dropped", where, empty, len(out))
        return out


def _check_stop(stop: threading.Event) -> None:
    """A search that ran out of time abandoned this call (:func:`~.threads.abandoned`): its
    further requests would be spent for nothing and counted nowhere."""
    if stop.is_set():
        raise CallAbandoned("the search stopped waiting for these samples; none more asked")


def _served_models(client: openai.OpenAI, base_url: str, cap: int) -> list[str]:
    """The model ids ``GET {base_url}/models`` lists, read with the answer cap and checked."""
    where = f"the model server at {base_url}"
    what = f"GET {base_url}/models"
    with client.models.with_streaming_response.list() as raw:
        data = read_capped(raw, cap, where, what)
    return served_model_ids(parse_json(data, where, what), where, what)


def check_endpoint(
    base_url: str,
    model: str,
    api_key: str | None,
    *,
    hint: str | None = None,
    max_answer_bytes: int | None = None,
    timeout: float = 10.0,
) -> None:
    """Fail early, in one line, when the server at ``base_url`` cannot be reached, answers
    ``GET {base_url}/models`` with something that is not a model list, or does not list ``model``.
    A server without that endpoint (an HTTP error status) is given the benefit of the doubt.
    ``hint`` says what to do when nothing answers (default: :func:`unreachable_hint` for a URL
    given as an argument)."""
    import openai

    cap = answer_cap(max_answer_bytes)
    client = openai.OpenAI(
        base_url=base_url,
        api_key=api_key or "EMPTY",
        timeout=timeout,
        max_retries=0,
        http_client=capped_http_client(cap, f"the model server at {base_url}"),
    )
    try:
        served = _served_models(client, base_url, cap)
    except openai.APIConnectionError as exc:
        raise ExternalModelError(
            f"cannot reach the model server at {base_url} ({type(exc).__name__}: "
            f"{exc.__cause__ or exc}); {hint or unreachable_hint(base_url, 'argument')}"
        ) from None
    except openai.AuthenticationError:
        raise ExternalModelError(
            f"the model server at {base_url} refused the API key; pass api_key= or set "
            f"${API_KEY_ENV} (prove: the variable named by --api-key-env)"
        ) from None
    except openai.APIStatusError as exc:
        log.info("%s/models answered %s; not checking the model name", base_url, exc.status_code)
        return
    finally:
        client.close()
    if served and model not in served:
        raise ExternalModelError(
            f"the server at {base_url} does not serve the model {model!r}; it serves: "
            + ", ".join(served[:10])
        )


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(getattr(exc, "message", exc))
