"""Bad input is a 4xx with a one-line message, and the server keeps answering."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import CONSTANT, make_app

STATE = "n : ℕ\n⊢ n + 0 = n"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def client():
    app = make_app(CONSTANT, max_input_chars=1000, max_body_bytes=20_000, max_k=50)
    with TestClient(app) as c:
        yield c


BAD = [
    # (what, method, path, kwargs, status, a word the message must hold)
    (
        "malformed JSON",
        "post",
        "/generate",
        {
            "content": b'{"name": "const", "input": ',
            "headers": {"content-type": "application/json"},
        },
        422,
        "not valid JSON",
    ),
    (
        "no content type",
        "post",
        "/generate",
        {"content": b'{"name": "const", "input": "x"}'},
        422,
        "JSON object",
    ),
    ("not an object", "post", "/generate", {"json": ["const", STATE]}, 422, "JSON object"),
    ("wrong type", "post", "/generate", {"json": {"name": "const", "input": 12}}, 422, "input"),
    ("missing field", "post", "/generate", {"json": {"name": "const"}}, 422, "input"),
    (
        "unknown model",
        "post",
        "/generate",
        {"json": {"name": "gpt9", "input": STATE}},
        404,
        "served models: const",
    ),
    (
        "oversized body",
        "post",
        "/generate",
        {"json": {"name": "const", "input": "x" * 30_000}},
        413,
        "max_body_bytes",
    ),
    (
        "over-long input",
        "post",
        "/generate",
        {"json": {"name": "const", "input": "x" * 5000}},
        413,
        "max_input_chars",
    ),
    (
        "use_reward without a progress model",
        "post",
        "/generate",
        {"json": {"name": "const", "input": STATE, "use_reward": True}},
        400,
        "LEANPROGRESS_MODEL",
    ),
    (
        "too many samples",
        "post",
        "/generate",
        {"json": {"name": "const", "input": STATE, "num_samples": 500}},
        400,
        "max_outputs",
    ),
    (
        "zero samples",
        "post",
        "/generate",
        {"json": {"name": "const", "input": STATE, "num_samples": 0}},
        422,
        "num_samples",
    ),
    # k over max_k is capped and k <= 0 answers [] (lean-premise-server's rules:
    # test_retrieval_protocol.py); a k that is no integer is still refused.
    ("k not an integer", "post", "/retrieve", {"json": {"state": STATE, "k": "many"}}, 422, "k"),
    # strict, as documented: a number spelled as a string, or a boolean, is not read as one
    ("k as a numeric string", "post", "/retrieve", {"json": {"state": STATE, "k": "3"}}, 422, "k:"),
    ("k as a boolean", "post", "/retrieve", {"json": {"state": STATE, "k": True}}, 422, "k:"),
    (
        "retrieve without a retriever",
        "post",
        "/retrieve",
        {"json": {"state": STATE, "k": 51}},
        404,
        "export_retriever",
    ),
    (
        "encode a generator",
        "post",
        "/encode",
        {"json": {"name": "const", "input": STATE}},
        400,
        "encoder",
    ),
    (
        "chat without messages",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "const", "messages": []}},
        400,
        "messages",
    ),
    (
        "chat with a role OpenAI does not have",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "const", "messages": [{"role": "hacker", "content": STATE}]}},
        400,
        "messages[0].role",
    ),
    (
        "chat with a null user content",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "const", "messages": [{"role": "user", "content": None}]}},
        400,
        "messages[0].content",
    ),
    (
        "chat with a user message without content",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "const", "messages": [{"role": "user"}]}},
        400,
        "messages[0].content",
    ),
    (
        "chat n too large",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "const", "messages": [{"role": "user", "content": STATE}], "n": 99}},
        400,
        "max_outputs",
    ),
    (
        "chat stream_options without stream",
        "post",
        "/v1/chat/completions",
        {
            "json": {
                "model": "const",
                "messages": [{"role": "user", "content": STATE}],
                "stream_options": {"include_usage": True},
            }
        },
        400,
        "stream: true",
    ),
    (
        "chat unknown model",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "nope", "messages": [{"role": "user", "content": STATE}]}},
        404,
        "nope",
    ),
    ("wrong method", "get", "/generate", {}, 405, ""),
    ("unknown route", "post", "/nowhere", {"json": {}}, 404, ""),
    ("unknown /v1 route", "get", "/v1/nowhere", {}, 404, "POST /v1/chat/completions"),
]


@pytest.mark.parametrize(
    ("what", "method", "path", "kwargs", "status", "word"), BAD, ids=[b[0] for b in BAD]
)
def test_bad_request_is_a_4xx_with_a_message(client, what, method, path, kwargs, status, word):
    r = getattr(client, method)(path, **kwargs)
    assert r.status_code == status, (what, r.status_code, r.text)
    detail = r.json()["detail"]
    message = detail if isinstance(detail, str) else str(detail)
    assert word in message, (what, message)
    if isinstance(detail, str):
        assert "\n" not in detail and "Traceback" not in detail


def test_openai_routes_answer_errors_in_openais_shape(client) -> None:
    r = client.post(
        "/v1/chat/completions",
        json={"model": "nope", "messages": [{"role": "user", "content": STATE}]},
    )
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and "nope" in err["message"]


def test_a_burst_of_bad_requests_then_a_good_one(client) -> None:
    for _ in range(3):
        for _what, method, path, kwargs, status, _word in BAD:
            assert getattr(client, method)(path, **kwargs).status_code == status
    good = client.post("/generate", json={"name": "const", "input": STATE, "prefix": ""})
    assert good.status_code == 200 and good.json()["outputs"][0]["output"] == "rfl"
    assert client.get("/health").status_code == 200


def test_chunked_body_over_the_limit_is_refused() -> None:
    app = make_app(CONSTANT, max_body_bytes=1000)
    with TestClient(app) as c:

        def chunks():
            yield b'{"name": "const", "input": "'
            for _ in range(20):
                yield b"x" * 100
            yield b'"}'

        r = c.post("/generate", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        ok = c.post(
            "/generate",
            content=iter([b'{"name": "const", ', b'"input": "a"}']),
            headers={"content-type": "application/json"},
        )
        assert ok.status_code == 200, ok.text


def test_token_is_required_everywhere_but_health() -> None:
    app = make_app(CONSTANT, token=TOKEN)
    body = {"name": "const", "input": STATE, "prefix": ""}
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        for path in ("/models", "/metrics", "/v1/models", "/openapi.json"):
            assert c.get(path).status_code == 401, path
        r = c.post("/generate", json=body)
        assert r.status_code == 401 and "bearer token" in r.json()["detail"]
        assert r.headers["www-authenticate"] == "Bearer"
        wrong = c.post("/generate", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "wrong" in wrong.json()["detail"]
        assert TOKEN not in wrong.text
        ok = c.post("/generate", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200


def test_token_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("LEAN_DOJO_V2_API_TOKEN", TOKEN)
    with TestClient(make_app(CONSTANT)) as c:
        assert c.get("/models").status_code == 401
        assert c.get("/models", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_cors_is_off_by_default_and_on_when_configured() -> None:
    origin = {"Origin": "http://editor.example"}
    with TestClient(make_app(CONSTANT)) as c:
        assert "access-control-allow-origin" not in c.get("/health", headers=origin).headers
    with TestClient(make_app(CONSTANT, cors_origins=["http://editor.example"])) as c:
        r = c.get("/health", headers=origin)
        assert r.headers["access-control-allow-origin"] == "http://editor.example"


def test_bad_registry_entries_fail_at_start_with_one_line() -> None:
    from lean_dojo_v2.external_api.errors import ModelRegistryError

    for models, word in (
        ({"m": {"kind": "quantum"}}, "unknown kind"),
        ({"m": {"kind": "hf", "modle": "x"}}, "unknown option 'modle'"),
        ({"m": {"kind": "retriever"}}, "path"),
        ({"m": {"kind": "openai"}}, "'model'"),
        ({"m": {"kind": "openai", "model": "x", "base_url": "ftp://h"}}, "http"),
        ({"m": {"kind": "openai", "model": "x", "timeout_s": -1}}, "timeout_s"),
    ):
        with pytest.raises(ModelRegistryError, match=word):
            make_app(models)


def test_no_request_names_a_file_the_server_opens(tmp_path) -> None:
    """Models are the config's, by name: a path as a model name is just an unknown name, and a
    retriever's ``file_path`` is a key of its corpus, never opened."""
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read", "utf-8")
    with TestClient(make_app(CONSTANT)) as c:
        for name in (str(secret), "../../etc/passwd", str(tmp_path)):
            r = c.post("/generate", json={"name": name, "input": STATE})
            assert r.status_code == 404 and "do not read" not in r.text
            r = c.post("/encode", json={"name": name, "input": STATE})
            assert r.status_code == 404


def test_preload_loads_every_model_at_start(tiny_bert_dir) -> None:
    app = make_app(
        {**CONSTANT, "enc": {"kind": "encoder", "model": str(tiny_bert_dir), "device": "cpu"}},
        preload=True,
    )
    with TestClient(app) as c:
        loaded = {m["name"]: m["loaded"] for m in c.get("/models").json()["models"]}
    assert loaded == {"const": True, "enc": True}


WRONG_TYPES = [
    # (what, path, body, the field the message names)
    ("num_samples as a string", "/generate", {"num_samples": "3"}, "num_samples"),
    ("num_samples as a boolean", "/generate", {"num_samples": True}, "num_samples"),
    ("num_samples as a float", "/generate", {"num_samples": 3.0}, "num_samples"),
    ("use_reward as a string", "/generate", {"use_reward": "yes"}, "use_reward"),
    ("chat n as a string", "/v1/chat/completions", {"n": "2"}, "n"),
    ("chat n as a boolean", "/v1/chat/completions", {"n": True}, "n"),
    ("chat max_tokens as a string", "/v1/chat/completions", {"max_tokens": "8"}, "max_tokens"),
    ("chat logprobs as a number", "/v1/chat/completions", {"logprobs": 1}, "logprobs"),
    ("chat temperature as a string", "/v1/chat/completions", {"temperature": "0"}, "temperature"),
]


@pytest.mark.parametrize("cors", [False, True], ids=["direct", "inside-the-stack"])
@pytest.mark.parametrize(
    ("what", "path", "extra", "field"), WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES]
)
def test_wrong_json_types_are_refused_naming_the_field(cors, what, path, extra, field) -> None:
    """A 422 on LeanCopilot's routes; on OpenAI's, a 400 in OpenAI's shape, as OpenAI and vLLM
    answer (the openai package raises BadRequestError for it)."""
    base = (
        {"name": "const", "input": STATE, "prefix": ""}
        if path == "/generate"
        else {"model": "const", "messages": [{"role": "user", "content": STATE}]}
    )
    app = make_app(CONSTANT, cors_origins=["http://editor.example"] if cors else [])
    with TestClient(app) as c:
        r = c.post(path, json={**base, **extra})
        assert r.status_code == (400 if path.startswith("/v1/") else 422), (what, r.text)
        assert f"{field}:" in r.json()["detail"], r.text
        if path.startswith("/v1/"):
            err = r.json()["error"]
            assert err["type"] == "invalid_request_error" and err["param"] == field, err
            assert err["code"] == "invalid_type" and f"{field}:" in err["message"]
        assert c.post(path, json=base).status_code == 200  # the right types still work


@pytest.fixture(scope="module")
def tiny_app(tiny_causal_dir):
    """The tiny model (a context of 1024 tokens) behind a small max_request_tokens."""
    spec = {"kind": "hf", "model": str(tiny_causal_dir), "device": "cpu", "max_new_tokens": 4}
    app = make_app({"tiny": spec, **CONSTANT}, max_request_tokens=2000)
    with TestClient(app) as c:
        yield c


LONG_STATE = "x : ℝ\n⊢ " + " + ".join(f"x ^ {i}" for i in range(400)) + " = 0"


def test_a_prompt_over_the_models_context_is_refused_naming_it(tiny_app) -> None:
    """A 413 on /generate; on /v1/chat/completions a 400 with OpenAI's code
    ``context_length_exceeded``, as OpenAI and vLLM answer."""
    assert len(LONG_STATE) < 32768  # under max_input_chars: the context is what refuses it
    for path, body, status in (
        ("/generate", {"name": "tiny", "input": LONG_STATE, "prefix": "", "num_samples": 1}, 413),
        (
            "/v1/chat/completions",
            {"model": "tiny", "messages": [{"role": "user", "content": LONG_STATE}]},
            400,
        ),
    ):
        r = tiny_app.post(path, json=body)
        assert r.status_code == status, r.text
        message = r.json()["detail"]
        assert "context length of 1024 tokens" in message and "tiny" in message, message
        if status == 400:
            err = r.json()["error"]
            assert err["code"] == "context_length_exceeded" and err["param"] == "messages"
    ok = tiny_app.post("/generate", json={"name": "tiny", "input": STATE, "num_samples": 2})
    assert ok.status_code == 200 and ok.json()["outputs"]


def test_an_over_context_prompt_fails_alone_in_its_batch(tiny_app) -> None:
    """Batched with a good request, the long one is refused and the good one answered."""
    import asyncio

    import httpx

    async def both():
        transport = httpx.ASGITransport(app=tiny_app.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await asyncio.gather(
                *(
                    c.post("/generate", json={"name": "tiny", "input": s, "num_samples": 2})
                    for s in (LONG_STATE, STATE, LONG_STATE, STATE)
                )
            )

    batchers = tiny_app.app.state.server.batchers
    before = len(batchers["tiny"].stats.batch_sizes) if "tiny" in batchers else 0
    replies = asyncio.run(both())
    assert [r.status_code for r in replies] == [413, 200, 413, 200]
    assert max(batchers["tiny"].stats.batch_sizes[before:]) > 1  # some shared a model call


def test_lengths_over_max_request_tokens_are_a_400_naming_the_cap(tiny_app) -> None:
    # n x (prompt + max_tokens) over 2000: refused before the model runs
    r = tiny_app.post(
        "/v1/chat/completions",
        json={
            "model": "const",
            "messages": [{"role": "user", "content": STATE}],
            "n": 4,
            "max_tokens": 600,
        },
    )
    assert r.status_code == 400 and "max_request_tokens" in r.json()["detail"], r.text
    # the prompt's own tokens count too: 40 samples of ~130 tokens each
    r = tiny_app.post("/generate", json={"name": "tiny", "input": STATE, "num_samples": 40})
    assert r.status_code == 400, r.text
    assert "max_request_tokens" in r.json()["detail"] and "2000" in r.json()["detail"]
    assert tiny_app.post("/generate", json={"name": "tiny", "input": STATE}).status_code == 200


@pytest.mark.slow
def test_the_default_model_refuses_a_prompt_over_its_context_and_answers_after() -> None:
    """The bundled SmolLM2 (a context of 8,192 tokens): a long goal state under
    max_input_chars is refused at once, not decoded into garbage."""
    state = "x : ℝ\n⊢ " + " + ".join(f"x⁻¹ ^ {i}" for i in range(1000)) + " = 0"
    assert len(state) < 32768
    with TestClient(make_app(default_models=True)) as c:
        r = c.post("/generate", json={"name": "default", "input": state, "prefix": ""})
        assert r.status_code == 413 and "8192 tokens" in r.json()["detail"], r.text
        chat = {"model": "default", "messages": [{"role": "user", "content": state}]}
        r = c.post("/v1/chat/completions", json=chat)  # as OpenAI and vLLM answer it
        error = r.json()["error"]
        assert r.status_code == 400 and error["code"] == "context_length_exceeded", r.text
        assert "8192 tokens" in error["message"]
        body = {"name": "default", "input": STATE, "prefix": "", "num_samples": 1}
        assert c.post("/generate", json=body).status_code == 200
