"""Micro-batching with a tiny real model, and the batcher's load shedding."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from lean_dojo_v2.external_api.batching import Batcher
from lean_dojo_v2.external_api.errors import ServerOverloadedError

from .conftest import make_app

STATES = [
    "n : ℕ\n⊢ n + 0 = n",
    "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1",
    "x : ℝ\nhx : 0 < x\n⊢ 0 < x ^ 2",
    "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q",
    "a b c : ℕ\n⊢ a + b + c = a + c + b",
    "n : ℕ\n⊢ n * 1 = n",
    "l : List ℕ\n⊢ l ++ [] = l",
    "⊢ True",
]


async def _concurrent(app, bodies):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        replies = await asyncio.gather(*(client.post("/generate", json=b) for b in bodies))
    return [r.json() for r in replies]


def test_concurrent_requests_share_generator_calls_and_match_serial(tiny_causal_dir) -> None:
    spec = {
        "kind": "hf",
        "model": str(tiny_causal_dir),
        "device": "cpu",
        "strategy": "greedy",
        "max_new_tokens": 8,
    }
    app = make_app({"tiny": spec}, batch_window_ms=20, max_batch=16)
    model = app.state.server.registry.get("tiny")
    bodies = [{"name": "tiny", "input": s, "prefix": ""} for s in STATES]
    with TestClient(app) as client:  # serial: one request at a time
        client.post("/generate", json=bodies[0])  # load the model first
        model.calls = 0
        serial = [client.post("/generate", json=b).json() for b in bodies]
    assert model.calls == len(bodies)
    model.calls = 0
    together = asyncio.run(_concurrent(app, bodies))
    assert model.calls < len(bodies), f"{model.calls} generator calls for {len(bodies)} requests"
    for a, b in zip(serial, together, strict=True):
        assert [o["output"] for o in a["outputs"]] == [o["output"] for o in b["outputs"]]
        for x, y in zip(a["outputs"], b["outputs"], strict=True):
            assert x["score"] == pytest.approx(y["score"], rel=1e-3)
    sizes = app.state.server.batchers["tiny"].stats.batch_sizes
    assert max(sizes) > 1


def test_different_prefixes_and_sample_counts_are_separate_calls() -> None:
    app = make_app({"c": {"kind": "constant"}}, batch_window_ms=20)
    bodies = [
        {"name": "c", "input": "⊢ True", "prefix": p, "num_samples": n}
        for p in ("", "rw")
        for n in (1, 2)
        for _ in range(3)
    ]
    replies = asyncio.run(_concurrent(app, bodies))
    for body, reply in zip(bodies, replies, strict=True):
        outs = [o["output"] for o in reply["outputs"]]
        assert len(outs) == body["num_samples"]
        assert all(o.startswith(body["prefix"]) for o in outs)
    assert app.state.server.registry.get("c").calls >= 4  # one per (prefix, n) at least


def _slow_model(calls: list):
    def run(key, payloads):
        calls.append(list(payloads))
        time.sleep(0.2)
        return [p * 2 for p in payloads]

    return run


def test_full_queue_answers_503_with_retry_after() -> None:
    calls: list = []

    async def main():
        b = Batcher("m", _slow_model(calls), max_batch=1, max_queue=2, window_s=0, timeout_s=30)
        first = asyncio.ensure_future(b.submit("k", 1))
        await asyncio.sleep(0.05)  # the model has the first one
        queued = [asyncio.ensure_future(b.submit("k", i)) for i in (2, 3)]
        await asyncio.sleep(0)
        with pytest.raises(ServerOverloadedError) as info:
            await b.submit("k", 4)
        assert info.value.status == 503 and info.value.retry_after >= 1
        assert "max_queue" in str(info.value)
        results = await asyncio.gather(first, *queued)
        await b.aclose()
        return results, b.stats

    results, stats = asyncio.run(main())
    assert results == [2, 4, 6]
    assert stats.rejected_full == 1
    assert [p for c in calls for p in c] == [1, 2, 3]  # 4 never reached the model


def test_a_request_past_its_deadline_never_reaches_the_model() -> None:
    calls: list = []

    async def main():
        b = Batcher("m", _slow_model(calls), max_batch=1, max_queue=10, window_s=0, timeout_s=0.1)
        first = asyncio.ensure_future(b.submit("k", 1))
        await asyncio.sleep(0.01)
        late = asyncio.ensure_future(b.submit("k", 2))  # waits behind a 0.2 s call
        with pytest.raises(ServerOverloadedError, match="queue_timeout_s"):
            await late
        assert await first == 2
        await asyncio.sleep(0.3)
        await b.aclose()
        return b.stats

    stats = asyncio.run(main())
    assert calls == [[1]]
    assert stats.dropped_deadline == 1


def test_overload_through_http_is_503_not_a_hang() -> None:
    app = make_app(
        {"slow": {"kind": "constant", "delay_ms": 100}},
        max_queue=2,
        max_batch=1,
        batch_window_ms=0,
    )
    bodies = [{"name": "slow", "input": "⊢ True", "prefix": ""}] * 8

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await asyncio.gather(*(c.post("/generate", json=b) for b in bodies))

    replies = asyncio.run(main())
    codes = sorted(r.status_code for r in replies)
    assert codes.count(503) >= 4 and codes.count(200) >= 2
    refused = next(r for r in replies if r.status_code == 503)
    assert int(refused.headers["retry-after"]) >= 1
    assert "max_queue" in refused.json()["detail"]


def test_a_lone_request_does_not_wait_for_the_window() -> None:
    app = make_app({"c": {"kind": "constant"}}, batch_window_ms=500)
    with TestClient(app) as client:
        client.post("/generate", json={"name": "c", "input": "a"})
        t0 = time.perf_counter()
        for _ in range(5):
            client.post("/generate", json={"name": "c", "input": "a"})
        assert (time.perf_counter() - t0) / 5 < 0.25
