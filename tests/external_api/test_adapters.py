"""Upstream adapters against fake upstream servers on 127.0.0.1: OpenAI-compatible, Anthropic
and Google answers, retries after 5xx, timeouts, malformed answers, missing keys."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient

from .conftest import make_app

STATE = "n : ℕ\n⊢ n + 0 = n"


@contextmanager
def fake_upstream(answer: Callable[[str, dict, dict], tuple[int, object]]) -> Iterator[dict]:
    """A threaded HTTP server whose POSTs are answered by ``answer(path, body, headers)`` →
    ``(status, body)`` (a body that is bytes is sent as it is; ``("sleep", s)`` waits ``s``)."""
    seen: dict = {"requests": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen["requests"].append((self.path, body, headers))
            status, reply = answer(self.path, body, headers)
            if status == "sleep":
                time.sleep(reply)
                status, reply = 200, {}
            data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def openai_answer(texts, logprobs=None):
    choices = []
    for i, t in enumerate(texts):
        c = {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
        if logprobs is not None:
            c["logprobs"] = {"content": [{"token": t, "logprob": logprobs[i]}]}
        choices.append(c)
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": choices}


def _app(kind, url, **extra):
    spec = {"kind": kind, "model": "m", "base_url": url, "backoff_s": 0.01, **extra}
    return make_app({"up": spec})


def test_openai_adapter_generate_parses_scores_and_dedups(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    texts = ["```lean\nsimp\n```", "simp", "by omega", "sorry"]
    with fake_upstream(lambda p, b, h: (200, openai_answer(texts, [-1.0, -0.5, -2.0, -0.1]))) as up:
        with TestClient(_app("openai", up["url"] + "/v1")) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE, "prefix": ""})
        path, body, headers = up["requests"][0]
    assert r.status_code == 200, r.text
    outs = r.json()["outputs"]
    assert [o["output"] for o in outs] == ["simp", "omega"]  # fence and `by` gone, sorry dropped
    assert outs[0]["score"] == pytest.approx(pytest.importorskip("math").exp(-0.5))
    assert path == "/v1/chat/completions" and body["n"] == 8 and body["model"] == "m"
    assert headers["authorization"] == "Bearer sk-test"
    assert body["messages"][-1]["content"].endswith("n + 0 = n")


def test_openai_adapter_chat_passes_messages_through() -> None:
    with fake_upstream(lambda p, b, h: (200, openai_answer(["hello"]))) as up:
        with TestClient(_app("openai", up["url"] + "/v1")) as c:
            messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
            r = c.post(
                "/v1/chat/completions",
                json={"model": "up", "messages": messages, "n": 1, "temperature": 0.2},
            )
        _, body, headers = up["requests"][0]
    assert r.json()["choices"][0]["message"]["content"] == "hello"
    assert body["messages"] == messages and body["temperature"] == 0.2
    assert "authorization" not in headers  # no key set: none sent (a local vLLM)


def test_retries_after_5xx_then_succeeds() -> None:
    replies = iter([(503, {"error": {"message": "busy"}}), (500, b"oops")])

    def answer(p, b, h):
        return next(replies, (200, openai_answer(["rfl"])))

    with fake_upstream(answer) as up:
        with TestClient(_app("openai", up["url"] + "/v1", max_retries=2)) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE, "num_samples": 1})
        assert len(up["requests"]) == 3
    assert r.status_code == 200 and r.json()["outputs"][0]["output"] == "rfl"


def test_persistent_5xx_is_a_502_naming_the_upstream() -> None:
    with fake_upstream(lambda p, b, h: (500, {"error": {"message": "model crashed"}})) as up:
        with TestClient(_app("openai", up["url"] + "/v1", max_retries=1)) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE})
            assert c.get("/health").status_code == 200
        assert len(up["requests"]) == 2
    assert r.status_code == 502
    assert "model crashed" in r.json()["detail"] and up["url"] in r.json()["detail"]


def test_timeout_is_a_504_after_retries() -> None:
    with fake_upstream(lambda p, b, h: ("sleep", 1.0)) as up:
        app = _app("openai", up["url"] + "/v1", timeout_s=0.2, max_retries=1)
        with TestClient(app) as c:
            t0 = time.monotonic()
            r = c.post("/generate", json={"name": "up", "input": STATE})
            took = time.monotonic() - t0
    assert r.status_code == 504 and "timeout_s" in r.json()["detail"]
    assert took < 5


@pytest.mark.parametrize(
    "reply",
    [b"<html>not json</html>", {"choices": []}, {"choices": [{"message": {}}]}, {"result": 1}],
    ids=["not-json", "no-choices", "no-content", "other-object"],
)
def test_malformed_answers_are_a_502(reply) -> None:
    with fake_upstream(lambda p, b, h: (200, reply)) as up:
        with TestClient(_app("openai", up["url"] + "/v1", max_retries=0)) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE})
            again = c.post(
                "/v1/chat/completions",
                json={"model": "up", "messages": [{"role": "user", "content": STATE}]},
            )
    assert r.status_code == 502 and "not" in r.json()["detail"]
    assert again.status_code == 502


def test_unreachable_upstream_is_a_502() -> None:
    from .conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    with TestClient(_app("openai", url, max_retries=1)) as c:
        r = c.post("/generate", json={"name": "up", "input": STATE})
    assert r.status_code == 502 and "cannot connect" in r.json()["detail"]


def test_upstream_401_says_to_check_the_key_without_showing_it(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    with fake_upstream(lambda p, b, h: (401, {"error": {"message": "bad key"}})) as up:
        with TestClient(_app("openai", up["url"] + "/v1")) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE})
    assert r.status_code == 502
    assert "OPENAI_API_KEY" in r.json()["detail"] and "sk-very-secret" not in r.text


def test_anthropic_adapter(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
    reply = {"content": [{"type": "text", "text": "`omega`"}], "role": "assistant"}
    with fake_upstream(lambda p, b, h: (200, reply)) as up:
        with TestClient(_app("anthropic", up["url"])) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE, "num_samples": 3})
        path, body, headers = up["requests"][0]
    assert r.status_code == 200, r.text
    (out,) = r.json()["outputs"]
    assert out["output"] == "omega" and out["score"] == pytest.approx(1.0)  # 3 of 3 samples
    assert len(up["requests"]) == 3  # no n in the Messages API: one request per sample
    assert path == "/v1/messages" and headers["x-api-key"] == "ak"
    assert headers["anthropic-version"] and "system" in body
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_anthropic_without_key_says_which_variable(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with TestClient(_app("anthropic", "http://127.0.0.1:9")) as c:
        r = c.post("/generate", json={"name": "up", "input": STATE})
    assert r.status_code == 502 and "ANTHROPIC_API_KEY" in r.json()["detail"]


def test_google_adapter(monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "gk")
    reply = {
        "candidates": [
            {"content": {"parts": [{"text": "simp"}], "role": "model"}},
            {"content": {"parts": [{"text": "simp"}], "role": "model"}},
            {"content": {"parts": [{"text": "rfl"}], "role": "model"}},
        ]
    }
    with fake_upstream(lambda p, b, h: (200, reply)) as up:
        with TestClient(_app("google", up["url"])) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE, "num_samples": 3})
        path, body, headers = up["requests"][0]
    outs = r.json()["outputs"]
    assert [o["output"] for o in outs] == ["simp", "rfl"]
    assert outs[0]["score"] == pytest.approx(2 / 3)  # frequency score: no log-probs
    assert path == "/v1beta/models/m:generateContent" and headers["x-goog-api-key"] == "gk"
    assert body["generationConfig"]["candidateCount"] == 3
    assert "systemInstruction" in body


def test_google_malformed_answer_is_a_502(monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "gk")
    with fake_upstream(lambda p, b, h: (200, {"candidates": [{"oops": 1}]})) as up:
        with TestClient(_app("google", up["url"])) as c:
            r = c.post("/generate", json={"name": "up", "input": STATE})
    assert r.status_code == 502 and "google" in r.json()["detail"]


# ---------------------------------------------------------------- chat: usage and finish reasons


def _chat_through(kind: str, url: str, n: int) -> dict:
    """A chat completion through the adapter with the ``openai`` package itself."""
    import openai

    from .conftest import live_server

    with live_server(_app(kind, url)) as base:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        answer = client.chat.completions.create(
            model="up", messages=[{"role": "user", "content": STATE}], n=n, max_tokens=16
        )
    return answer.model_dump()


def test_openai_upstreams_usage_and_finish_reasons_come_through(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    reply = openai_answer(["simp", "", "rw [Nat.add_zero]"])
    reply["choices"][2]["finish_reason"] = "length"
    reply["usage"] = {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}
    with fake_upstream(lambda p, b, h: (200, reply)) as up:
        answer = _chat_through("openai", up["url"] + "/v1", 3)
    # Exactly n choices, an empty one included, each with the upstream's finish reason.
    assert [c["message"]["content"] for c in answer["choices"]] == ["simp", "", "rw [Nat.add_zero]"]
    assert [c["finish_reason"] for c in answer["choices"]] == ["stop", "stop", "length"]
    assert answer["usage"]["prompt_tokens"] == 31
    assert answer["usage"]["completion_tokens"] == 12
    assert answer["usage"]["total_tokens"] == 43


def test_anthropic_usage_counts_the_prompt_once_and_every_choice(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
    replies = iter(
        [
            {"content": [{"type": "text", "text": "omega"}], "stop_reason": "end_turn"},
            {"content": [{"type": "text", "text": "simp ["}], "stop_reason": "max_tokens"},
        ]
    )

    def answer(p, b, h):
        reply = next(replies)
        out = 3 if reply["stop_reason"] == "end_turn" else 16
        return 200, {**reply, "usage": {"input_tokens": 40, "output_tokens": out}}

    with fake_upstream(answer) as up:
        got = _chat_through("anthropic", up["url"], 2)
    assert sorted(c["finish_reason"] for c in got["choices"]) == ["length", "stop"]
    assert got["usage"]["prompt_tokens"] == 40  # the same prompt, sent twice, counts once
    assert got["usage"]["completion_tokens"] == 19


def test_google_usage_and_finish_reasons(monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "gk")
    reply = {
        "candidates": [
            {"content": {"parts": [{"text": "simp"}]}, "finishReason": "STOP"},
            {"content": {"parts": [{"text": "rw [h"}]}, "finishReason": "MAX_TOKENS"},
        ],
        "usageMetadata": {"promptTokenCount": 25, "candidatesTokenCount": 18},
    }
    with fake_upstream(lambda p, b, h: (200, reply)) as up:
        got = _chat_through("google", up["url"], 2)
    assert [c["finish_reason"] for c in got["choices"]] == ["stop", "length"]
    assert got["usage"] == {
        **got["usage"],
        "prompt_tokens": 25,
        "completion_tokens": 18,
        "total_tokens": 43,
    }


def test_an_upstream_without_usage_reports_zeros_not_an_error() -> None:
    with fake_upstream(lambda p, b, h: (200, openai_answer(["simp"]))) as up:
        got = _chat_through("openai", up["url"] + "/v1", 1)
    assert got["choices"][0]["message"]["content"] == "simp"
    assert got["usage"]["prompt_tokens"] == 0 and got["usage"]["completion_tokens"] == 0


def test_a_closed_adapter_refuses_with_an_upstream_error() -> None:
    """After ``close()`` (server shutdown) a call is an ``UpstreamModelError`` saying so, not an
    AttributeError from the missing client."""
    from lean_dojo_v2.external_api.adapters import OpenAIAdapter
    from lean_dojo_v2.external_api.errors import UpstreamModelError
    from lean_dojo_v2.external_api.served import GenOptions

    adapter = OpenAIAdapter("up", {"kind": "openai", "model": "m", "max_retries": 0})
    adapter.load()
    adapter.close()
    with pytest.raises(UpstreamModelError, match="closed"):
        adapter.generate([STATE], 2, None, GenOptions())
