"""The per-request path: model routes served before the framework's middleware stack, and the
batcher's model threads (a lone request goes straight to a thread; batches are formed by key;
``concurrency`` bounds the calls in flight; shutdown answers what waits)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from lean_dojo_v2.external_api.batching import Batcher
from lean_dojo_v2.external_api.errors import ServerOverloadedError

from .conftest import CONSTANT, make_app

BODY = {"name": "const", "input": "⊢ True", "prefix": ""}


def test_a_lone_request_runs_in_a_model_thread_not_on_the_event_loop() -> None:
    app = make_app(CONSTANT)
    model = app.state.server.registry.get("const")
    threads: list[str] = []
    generate = model.generate

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return generate(*args, **kwargs)

    model.generate = recording
    loop_threads: list[str] = []

    async def main():
        loop_threads.append(threading.current_thread().name)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return [await c.post("/generate", json=BODY) for _ in range(3)]

    replies = asyncio.run(main())
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert len(threads) == 3 and all(t.startswith("model-const") for t in threads)
    assert loop_threads[0] not in threads
    assert app.state.server.batchers["const"].stats.batch_sizes == [1, 1, 1]


def test_model_routes_answer_the_same_with_cors_on() -> None:
    """With CORS on, the model routes are served inside the middleware stack (CORS headers on
    the answer); without it, before the stack: the same answer either way."""
    origin = {"Origin": "http://editor.example"}
    answers = []
    for cors in ([], ["http://editor.example"]):
        with TestClient(make_app(CONSTANT, cors_origins=cors)) as c:
            r = c.post("/generate", json=BODY, headers=origin)
            assert r.status_code == 200
            assert ("access-control-allow-origin" in r.headers) == bool(cors)
            assert r.headers["content-type"] == "application/json"
            answers.append(r.json())
            bad = c.post("/generate", json={"name": "const"}, headers=origin)
            assert bad.status_code == 422 and "input" in bad.json()["detail"]
            metrics = c.get("/metrics").text
            assert 'lean_dojo_v2_requests_total{route="/generate",status="200"} 1' in metrics
            assert 'lean_dojo_v2_requests_total{route="/generate",status="422"} 1' in metrics
    assert answers[0] == answers[1]


def test_an_unexpected_error_is_a_500_with_a_message_and_the_server_goes_on() -> None:
    app = make_app(CONSTANT)
    registry = app.state.server.registry
    get = registry.get
    with TestClient(app) as c:
        registry.get = lambda *a, **k: (_ for _ in ()).throw(ValueError("boom"))
        r = c.post("/generate", json=BODY)
        assert r.status_code == 500 and "server log" in r.json()["detail"]
        registry.get = get
        assert c.post("/generate", json=BODY).status_code == 200
        assert 'route="/generate",status="500"} 1' in c.get("/metrics").text


def _recording_model(calls: list, delay: float = 0.0, running: list | None = None):
    lock = threading.Lock()

    def run(key, payloads):
        with lock:
            calls.append((key, list(payloads)))
            if running is not None:
                running[0] += 1
                running[1] = max(running[1], running[0])
        time.sleep(delay)
        if running is not None:
            with lock:
                running[0] -= 1
        return [(key, p) for p in payloads]

    return run


def test_batches_are_formed_by_key_in_arrival_order() -> None:
    calls: list = []

    async def main():
        b = Batcher("m", _recording_model(calls, 0.05), max_batch=3, window_s=0.001)
        first = asyncio.ensure_future(b.submit("a", 0))
        await asyncio.sleep(0.01)  # the model has the first one; the rest wait together
        keys = ["a", "b", "a", "a", "b", "a"]
        rest = [asyncio.ensure_future(b.submit(k, i)) for i, k in enumerate(keys, 1)]
        results = await asyncio.gather(first, *rest)
        await b.aclose()
        return results

    results = asyncio.run(main())
    assert results == [("a", 0), *[(k, i) for i, k in enumerate("abaaba", 1)]]
    assert calls == [("a", [0]), ("a", [1, 3, 4]), ("b", [2, 5]), ("a", [6])]


def test_concurrency_bounds_the_calls_in_flight() -> None:
    calls: list = []
    running = [0, 0]

    async def main():
        b = Batcher("up", _recording_model(calls, 0.05, running), concurrency=3, batchable=False)
        results = await asyncio.gather(*(b.submit("k", i) for i in range(10)))
        await b.aclose()
        return results

    t0 = time.perf_counter()
    results = asyncio.run(main())
    took = time.perf_counter() - t0
    assert results == [("k", i) for i in range(10)]
    assert len(calls) == 10 and running[1] == 3
    assert took < 10 * 0.05  # concurrent, not one at a time


def test_a_request_whose_client_left_never_reaches_the_model() -> None:
    calls: list = []

    async def main():
        b = Batcher("m", _recording_model(calls, 0.1), max_batch=4, window_s=0)
        first = asyncio.ensure_future(b.submit("k", 1))
        await asyncio.sleep(0.02)
        gone = asyncio.ensure_future(b.submit("k", 2))
        kept = asyncio.ensure_future(b.submit("k", 3))
        await asyncio.sleep(0)
        gone.cancel()
        results = await asyncio.gather(first, kept)
        await b.aclose()
        return results

    assert asyncio.run(main()) == [("k", 1), ("k", 3)]
    assert [p for _, ps in calls for p in ps] == [1, 3]


def test_shutdown_answers_what_waits_and_what_runs_with_503() -> None:
    calls: list = []

    async def main():
        b = Batcher("m", _recording_model(calls, 0.2), max_batch=1, window_s=0)
        running = asyncio.ensure_future(b.submit("k", 1))
        await asyncio.sleep(0.02)
        waiting = asyncio.ensure_future(b.submit("k", 2))
        await asyncio.sleep(0)
        await b.aclose()
        out = await asyncio.gather(running, waiting, return_exceptions=True)
        # The batcher is usable again afterwards (a restarted server).
        again = await b.submit("k", 3)
        await b.aclose()
        return out, again

    (a, w), again = asyncio.run(main())
    for exc in (a, w):
        assert isinstance(exc, ServerOverloadedError) and "shutting down" in str(exc)
    assert again == ("k", 3)
    assert [p for _, ps in calls for p in ps] == [1, 3]


@pytest.mark.parametrize("window_ms", [0, 50])
def test_a_failing_model_answers_its_batch_and_the_next_batch_runs(window_ms) -> None:
    def run(key, payloads):
        if key == "bad":
            raise RuntimeError("model broke")
        return payloads

    async def main():
        b = Batcher("m", run, window_s=window_ms / 1000)
        with pytest.raises(RuntimeError, match="model broke"):
            await b.submit("bad", 1)
        ok = await b.submit("good", 2)
        await b.aclose()
        return ok

    assert asyncio.run(main()) == 2


def test_a_result_that_is_an_exception_fails_its_request_alone() -> None:
    """A model refuses one input of a batch (a prompt over its context) by returning its
    exception in that input's place: that request fails, the others of the call are answered."""
    calls: list = []

    def run(key, payloads):
        calls.append(list(payloads))
        time.sleep(0.05)
        return [ValueError(f"no {p}") if p % 2 else p for p in payloads]

    async def main():
        b = Batcher("m", run, max_batch=8, window_s=0.001)
        first = asyncio.ensure_future(b.submit("k", 0))
        await asyncio.sleep(0.01)  # the model has the first; the rest wait together
        rest = [asyncio.ensure_future(b.submit("k", i)) for i in range(1, 5)]
        out = []
        for future in (first, *rest):
            try:
                out.append(("answered", await future))
            except ValueError as exc:
                out.append(("raised", str(exc)))
        await b.aclose()
        return out

    out = asyncio.run(main())
    assert calls == [[0], [1, 2, 3, 4]]
    assert out == [
        ("answered", 0),
        ("raised", "no 1"),
        ("answered", 2),
        ("raised", "no 3"),
        ("answered", 4),
    ]
