"""A small local OpenAI-compatible chat server for tests, scriptable per test.

It speaks the two endpoints :class:`~lean_dojo_v2.prover.ExternalProver` uses, in the wire format
of OpenAI and vLLM: ``POST /v1/chat/completions`` (``choices[i].message.content``, optional
``choices[i].logprobs.content[j].logprob``) and ``GET /v1/models``. It runs
:class:`http.server.ThreadingHTTPServer` on ``127.0.0.1`` (a free port) in a daemon thread::

    with FakeOpenAI(completions=["simp", "```lean\\nrfl\\n```"]) as server:
        prover = ExternalProver("fake-model", base_url=server.base_url)

What a test can script (attributes of :class:`Script`, changeable while the server runs):

* ``completions``: the texts answered, one per choice, cycling through the list across choices and
  requests; or a function ``(request_json, choice_index) -> str`` (e.g. answer by goal state).
* ``logprobs``: whether choices carry token log-probs (when the request asks for them). The
  completion ``j`` of the list has total log-prob ``-(j + 1) / 4`` (:func:`completion_logprob`),
  spread over its tokens.
* ``honour_n``: answer ``n`` choices, or always one (servers that ignore ``n``).
* ``fail_first`` / ``fail_status``: answer the first K chat requests with that HTTP status;
  ``fail_body_bytes``: pad that error's JSON body to about this many bytes (length declared).
* ``delay`` / ``delay_first``: sleep before answering (all requests, or only the first K).
* ``malformed``: ``"no_choices"`` (JSON without ``choices``), ``"not_json"`` (a 200 with an HTML
  body), ``"not_object"`` (a JSON list), ``"empty_choices"`` (``choices: []``),
  ``"choices_not_list"``, ``"choice_not_object"`` (a choice that is a string), ``"no_message"`` (a
  choice without ``message``), ``"empty_content"`` (``content: ""``), ``"null_content"``
  (``content: null``), ``"bad_logprobs"`` (``logprobs.content`` entries without numbers);
  ``malformed_first`` limits it to the first K requests.
* ``huge``: answer every chat request with a valid completion of about this many bytes (the text
  of its one choice padded with spaces), sent in 64 KiB pieces as the client reads them;
  ``declare_length``: whether the answer says its length (``content-length``) or is read to the
  end of the connection. ``huge_sent`` counts the bytes the client took before it hung up.
  ``cut_after``: hang up after about this many bytes of such an answer, its length declared.
* ``models``: the model names served; any other name gets a 404 like OpenAI's.
* ``models_answer``: what ``GET /v1/models`` answers instead of the list: ``"not_json"`` (a 200
  with an HTML body), ``"no_data"`` (an object without ``data``), ``"not_object"`` (a JSON
  string), ``"bad_ids"`` (entries whose ``id`` is a number), ``"huge"`` (a valid list padded to
  ``huge`` bytes, declared in ``content-length``).

``requests`` holds every chat request body received (parsed JSON), in order; ``headers`` their
HTTP headers (lower-case names). Each answer's ``usage`` counts three characters a token: the
prompt's messages once, and every choice's text.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion_logprob(index: int) -> float:
    """The total log-prob the server gives completion ``index`` of a ``completions`` list."""
    return -(index + 1) / 4


@dataclass
class Script:
    completions: list[str] | Callable[[dict[str, Any], int], str] = field(
        default_factory=lambda: ["simp"]
    )
    logprobs: bool = True
    honour_n: bool = True
    fail_first: int = 0
    fail_status: int = 500
    fail_body_bytes: int = 0
    delay: float = 0.0
    delay_first: int | None = None
    malformed: str | None = None
    malformed_first: int | None = None
    models: tuple[str, ...] = ("fake-model",)
    models_answer: str | None = None
    huge: int = 0
    declare_length: bool = True
    cut_after: int | None = None


def _tokens(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)] or [""]


class FakeOpenAI:
    """The server; a context manager that starts and stops it."""

    def __init__(self, **script: Any) -> None:
        self.script = Script(**script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._chat_calls = 0
        self.huge_sent = 0
        self._choices = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._base_url: str | None = None
        self._thread: threading.Thread | None = None

    # ....................................................................... lifecycle

    @property
    def base_url(self) -> str:
        """The API root (``http://127.0.0.1:PORT/v1``); still known after the server stopped."""
        assert self._base_url is not None, "server not started"
        return self._base_url

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    data = [
                        {"id": m, "object": "model", "owned_by": "fake"} for m in fake.script.models
                    ]
                    odd = fake.script.models_answer
                    if odd == "not_json":
                        self._send_raw(
                            200, b"<html><body>Welcome to nginx!</body></html>", "text/html"
                        )
                    elif odd == "no_data":
                        self._send(200, {"object": "list", "models": fake.script.models})
                    elif odd == "not_object":
                        self._send(200, "fake-model")
                    elif odd == "bad_ids":
                        self._send(200, {"object": "list", "data": [{"id": 7, "object": "model"}]})
                    elif odd == "huge":
                        pad = " " * max(fake.script.huge, 0)
                        self._send(200, {"object": "list", "data": data, "note": pad})
                    else:
                        self._send(200, {"object": "list", "data": data})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                body = json.loads(raw or b"{}")
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload = fake._answer(body)
                if fake.script.huge and status == 200:
                    self._send_huge(payload)
                elif isinstance(payload, bytes):
                    self._send_raw(status, payload, "text/html")
                else:
                    self._send(status, payload)

            def _send(self, status: int, payload: Any) -> None:
                self._send_raw(status, json.dumps(payload).encode(), "application/json")

            def _send_huge(self, payload: Any) -> None:
                # The padding goes inside the first choice's text, so the whole answer is valid
                # JSON of about `huge` bytes, produced piece by piece as the client reads.
                marker = "\u0000PAD\u0000"
                payload["choices"][0]["message"]["content"] += marker
                head, tail = json.dumps(payload).encode().split(b"\\u0000PAD\\u0000")
                size = max(fake.script.huge - len(head) - len(tail), 0)
                piece = b" " * 65536
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    if fake.script.declare_length:
                        self.send_header("content-length", str(len(head) + size + len(tail)))
                    else:
                        self.send_header("connection", "close")
                        self.close_connection = True
                    self.end_headers()
                    self.wfile.write(head)
                    fake.huge_sent += len(head)
                    left = size
                    while left > 0:
                        if (
                            fake.script.cut_after is not None
                            and fake.huge_sent >= fake.script.cut_after
                        ):
                            self.close_connection = True  # mid-answer: the client sees it cut
                            return
                        chunk = piece[: min(left, len(piece))]
                        self.wfile.write(chunk)
                        fake.huge_sent += len(chunk)
                        left -= len(chunk)
                    self.wfile.write(tail)
                    fake.huge_sent += len(tail)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                    self.close_connection = True

            def _send_raw(self, status: int, data: bytes, ctype: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    if status >= 500:
                        self.send_header("retry-after-ms", "20")  # keep the client's backoff short
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        host, port = self._server.server_address[:2]
        self._base_url = f"http://{host}:{port}/v1"
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ....................................................................... answers

    def _answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        s = self.script
        with self._lock:
            self.requests.append(body)
            call = self._chat_calls
            self._chat_calls += 1
        if s.delay and (s.delay_first is None or call < s.delay_first):
            time.sleep(s.delay)
        if call < s.fail_first:
            error = {"error": {"message": "scripted failure", "type": "server_error"}}
            if s.fail_body_bytes:
                error["padding"] = " " * s.fail_body_bytes
            return s.fail_status, error
        if body.get("model") not in s.models:
            return 404, {
                "error": {
                    "message": f"The model `{body.get('model')}` does not exist.",
                    "type": "NotFoundError",
                    "code": 404,
                }
            }
        malformed = s.malformed if (s.malformed_first is None or call < s.malformed_first) else None
        if malformed == "not_json":
            return 200, b"<html><body>502 Bad Gateway (proxy)</body></html>"
        if malformed == "no_choices":
            return 200, {"id": "x", "object": "chat.completion", "model": body.get("model")}
        odd_choices = {
            "not_object": None,
            "empty_choices": [],
            "choices_not_list": "simp",
            "choice_not_object": ["simp"],
            "no_message": [{"index": 0, "finish_reason": "stop"}],
        }
        if malformed == "not_object":
            return 200, ["simp"]
        if malformed in odd_choices:
            return 200, {"id": "x", "object": "chat.completion", "choices": odd_choices[malformed]}
        n = int(body.get("n") or 1) if s.honour_n else 1
        choices = []
        for i in range(n):
            with self._lock:
                k = self._choices
                self._choices += 1
            if callable(s.completions):
                text, index = s.completions(body, k), 0
            else:
                index = k % len(s.completions)
                text = s.completions[index]
            choice: dict[str, Any] = {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
            if malformed == "empty_content":
                choice["message"]["content"] = ""
            elif malformed == "null_content":
                choice["message"]["content"] = None
            if s.logprobs and body.get("logprobs"):
                toks = _tokens(text)
                each = completion_logprob(index) / len(toks)
                entries = [
                    {"token": t, "logprob": each, "bytes": list(t.encode()), "top_logprobs": []}
                    for t in toks
                ]
                if malformed == "bad_logprobs":
                    entries = [{"token": t} for t in toks]
                choice["logprobs"] = {"content": entries}
            choices.append(choice)
        # three characters a token, as the log-probs are spread (the prompt counted once)
        prompt_tokens = sum(len(_tokens(str(m.get("content", "")))) for m in body["messages"])
        completion_tokens = sum(len(_tokens(c["message"]["content"] or "")) for c in choices)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
