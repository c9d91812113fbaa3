"""What an upstream answers is read with a cap (the model's ``max_answer_bytes``, default 8 MiB,
the same cap and reader as ``ExternalProver``'s): a longer answer is a 502 that says so, and
reading stops there instead of holding the whole body in memory."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient

from .conftest import make_app

STATE = "n : ℕ\n⊢ n + 0 = n"
CAP = 64 * 1024


@contextmanager
def streaming_upstream(
    size: int, *, declare: int | None = None, status: int = 200
) -> Iterator[dict]:
    """An upstream whose every POST is answered with a chat completion of about ``size``
    bytes, written in 16 KiB pieces as the reader takes them with no ``content-length`` (the body ends when the
    connection closes), or with ``declare`` as its ``content-length``. ``seen["sent"]``:
    the bytes it managed to write before the reader hung up."""
    seen: dict = {"sent": 0, "posts": 0}
    piece = b"x" * 16384
    head = b'{"choices": [{"message": {"role": "assistant", "content": "'
    tail = b'"}, "finish_reason": "stop"}]}'

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length", 0)))
            seen["posts"] += 1
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if declare is not None:
                    self.send_header("content-length", str(declare))
                self.end_headers()
                self.wfile.write(head)
                for start in range(0, size, len(piece)):
                    data = piece[: min(len(piece), size - start)]
                    self.wfile.write(data)
                    seen["sent"] += len(data)
                self.wfile.write(tail)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def _chat(url: str, **spec) -> tuple[int, dict]:
    spec = {"kind": "openai", "model": "m", "base_url": url, "backoff_s": 0.01, **spec}
    with TestClient(make_app({"up": spec})) as c:
        r = c.post(
            "/v1/chat/completions",
            json={
                "model": "up",
                "messages": [{"role": "user", "content": STATE}],
                "max_tokens": 16,
            },
        )
    return r.status_code, r.json()


# An answer far longer than what loopback socket buffers hold (a few MiB): the upstream gets to
# write only what the buffers took before the reader hung up.
HUGE = 256 * 2**20


def test_an_answer_over_the_cap_is_a_502_and_reading_stops_there() -> None:
    size = HUGE
    with streaming_upstream(size) as up:
        status, body = _chat(up["url"], max_answer_bytes=CAP)
    assert status == 502, body
    message = body["error"]["message"]
    assert "max_answer_bytes" in message and up["url"] in message and "64 KiB" in message, message
    assert "\n" not in message
    assert up["posts"] == 1  # not asked again: the same question gets the same long answer
    assert up["sent"] < 32 * 2**20, up["sent"]  # hung up early (socket buffers took the rest)


def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read() -> None:
    with streaming_upstream(1000, declare=10 * CAP) as up:
        status, body = _chat(up["url"], max_answer_bytes=CAP)
    assert status == 502 and "says it is" in body["error"]["message"], body


def test_an_error_answer_over_the_cap_is_not_read_whole_either() -> None:
    for status_sent in (400, 500):
        with streaming_upstream(HUGE, status=status_sent) as up:
            status, body = _chat(up["url"], max_answer_bytes=CAP)
        assert status == 502 and "max_answer_bytes" in body["error"]["message"], body
        assert up["sent"] < 32 * 2**20 and up["posts"] == 1


def test_an_answer_under_the_cap_comes_through() -> None:
    with streaming_upstream(CAP // 2) as up:
        status, body = _chat(up["url"], max_answer_bytes=CAP)
    assert status == 200, body
    assert len(body["choices"][0]["message"]["content"]) == CAP // 2


def test_the_default_cap_is_external_provers() -> None:
    from lean_dojo_v2.external_api.adapters import OpenAIAdapter
    from lean_dojo_v2.external_api.errors import ModelRegistryError
    from lean_dojo_v2.prover.external_answers import DEFAULT_MAX_ANSWER_BYTES

    adapter = OpenAIAdapter("up", {"kind": "openai", "model": "m"})
    assert adapter.max_answer_bytes == DEFAULT_MAX_ANSWER_BYTES == 8 * 2**20
    for bad in (0, 100, "big", True):
        with pytest.raises(ModelRegistryError, match="max_answer_bytes"):
            OpenAIAdapter("up", {"kind": "openai", "model": "m", "max_answer_bytes": bad})


def test_the_answer_in_memory_stays_near_the_cap() -> None:
    """Answers of 256 MiB with a 64 KiB cap, several times: the adapter never holds one."""
    import tracemalloc

    from lean_dojo_v2.external_api.adapters import OpenAIAdapter
    from lean_dojo_v2.external_api.errors import UpstreamModelError
    from lean_dojo_v2.external_api.served import GenOptions

    with streaming_upstream(HUGE) as up:
        spec = {"kind": "openai", "model": "m", "base_url": up["url"], "max_answer_bytes": CAP}
        adapter = OpenAIAdapter("up", {**spec, "max_retries": 0})
        adapter.load()
        tracemalloc.start()
        try:
            for _ in range(3):
                with pytest.raises(UpstreamModelError):
                    adapter.chat([{"role": "user", "content": json.dumps(STATE)}], 1, GenOptions())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            adapter.close()
    assert peak < 2 * 2**20, peak
