"""Contract tests of every route: LeanCopilot's exact protocol (also through a real ``curl``
with LeanCopilot's arguments), ``use_reward``, ``/encode``, ``/retrieve`` (lean-premise-server's
shape, accessibility rules, new premises), health, models, metrics and the OpenAPI schema."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from fastapi.testclient import TestClient

from .conftest import CONSTANT, live_server, make_app

STATE = "a b c : ℕ\n⊢ a + b + c = a + c + b"


@pytest.fixture(scope="module")
def tiny_client(tiny_causal_dir, tiny_bert_dir, retriever_dir):
    app = make_app(
        {
            "tiny": {
                "kind": "hf",
                "model": str(tiny_causal_dir),
                "device": "cpu",
                "seed": 0,
                "max_new_tokens": 8,
            },
            "greedy": {
                "kind": "hf",
                "model": str(tiny_causal_dir),
                "device": "cpu",
                "strategy": "greedy",
                "max_new_tokens": 8,
            },
            "enc": {"kind": "encoder", "model": str(tiny_bert_dir), "device": "cpu"},
            "ret": {"kind": "retriever", "path": str(retriever_dir), "device": "cpu"},
            **CONSTANT,
        }
    )
    with TestClient(app) as client:
        yield client


def test_generate_answers_exactly_leancopilots_shape(tiny_client) -> None:
    r = tiny_client.post("/generate", json={"name": "tiny", "input": STATE, "prefix": ""})
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["outputs"]
    outs = body["outputs"]
    assert outs, "the tiny model proposed nothing"
    for o in outs:
        assert set(o) == {"output", "score"}  # no extra keys without use_reward
        assert isinstance(o["output"], str) and o["output"].strip()
        assert 0 < o["score"] <= 1  # exp of a summed log-prob
    scores = [o["score"] for o in outs]
    assert scores == sorted(scores, reverse=True)
    assert len({o["output"] for o in outs}) == len(outs)  # deduplicated


def test_generate_scores_are_exp_of_the_generators_log_probs(tiny_client) -> None:
    from lean_dojo_v2.models.generator import load_generator

    app = tiny_client.app
    model = app.state.server.registry.get("greedy")
    r = tiny_client.post("/generate", json={"name": "greedy", "input": STATE, "prefix": ""})
    (out,) = r.json()["outputs"]
    direct = load_generator(model.spec["model"], device="cpu", strategy="greedy", max_new_tokens=8)
    (cand,) = direct.generate([STATE], 8)[0]
    assert out["output"] == cand.tactic
    assert out["score"] == pytest.approx(math.exp(cand.logprob), rel=1e-4)


def test_prefix_starts_every_output(tiny_client) -> None:
    r = tiny_client.post("/generate", json={"name": "tiny", "input": STATE, "prefix": "rw"})
    assert r.status_code == 200
    assert all(o["output"].startswith("rw") for o in r.json()["outputs"])


def test_prefix_may_be_null_and_num_samples_is_optional(tiny_client) -> None:
    r = tiny_client.post(
        "/generate", json={"name": "const", "input": STATE, "prefix": None, "num_samples": 2}
    )
    assert [o["output"] for o in r.json()["outputs"]] == ["rfl", "simp"]


def test_use_reward_adds_steps_and_reranks(tiny_causal_dir, progress_dir) -> None:
    app = make_app(CONSTANT, progress_model=str(progress_dir))
    with TestClient(app) as client:
        plain = client.post("/generate", json={"name": "const", "input": STATE, "prefix": ""})
        r = client.post(
            "/generate", json={"name": "const", "input": STATE, "prefix": "", "use_reward": True}
        )
    assert r.status_code == 200, r.text
    outs = r.json()["outputs"]
    model_scores = {o["output"]: o["score"] for o in plain.json()["outputs"]}
    assert {o["output"] for o in outs} == set(model_scores)
    for o in outs:
        assert set(o) == {"output", "score", "model_score", "steps_remaining", "reward"}
        assert o["steps_remaining"] >= 0
        assert o["reward"] == o["score"] == -o["steps_remaining"]
        assert o["model_score"] == pytest.approx(model_scores[o["output"]])
    assert [o["score"] for o in outs] == sorted((o["score"] for o in outs), reverse=True)


def test_encode_returns_one_normalised_vector(tiny_client, tiny_bert_dir) -> None:
    from lean_dojo_v2.models.retrieval import load_encoder

    r = tiny_client.post("/encode", json={"name": "enc", "input": STATE})
    assert r.status_code == 200
    vec = r.json()["outputs"]
    assert list(r.json()) == ["outputs"]
    assert math.isclose(math.fsum(x * x for x in vec), 1.0, rel_tol=1e-4)
    direct = load_encoder(str(tiny_bert_dir), device="cpu").encode([STATE])[0]
    assert vec == pytest.approx(direct.tolist(), abs=1e-5)
    # A retriever encodes with its own encoder; a generator cannot encode.
    assert tiny_client.post("/encode", json={"name": "ret", "input": STATE}).status_code == 200
    bad = tiny_client.post("/encode", json={"name": "tiny", "input": STATE})
    assert bad.status_code == 400 and "encoder" in bad.json()["detail"]


def test_retrieve_has_lean_premise_servers_shape(tiny_client) -> None:
    r = tiny_client.post("/retrieve", json={"state": STATE, "k": 5})
    assert r.status_code == 200, r.text
    hits = r.json()
    assert len(hits) == 5
    assert all(set(h) == {"score", "name"} for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_retrieve_honours_accessibility_of_a_file_position(tiny_client, retriever_dir) -> None:
    from lean_dojo_v2.data import Corpus, Pos
    from lean_dojo_v2.models.premise_index import load_retriever

    corpus = load_retriever(retriever_dir, device="cpu").corpus
    target = max(corpus.files, key=lambda f: len(corpus.imports_of(f.path)))
    pos = Pos(10**6, 0)
    allowed = {p.full_name for p in corpus.accessible_premises(target.path, pos)}
    r = tiny_client.post(
        "/retrieve",
        json={
            "state": STATE,
            "k": 1024,
            "file_path": target.path,
            "position": {"line": pos.line_nb, "column": pos.column_nb},
        },
    )
    names = [h["name"] for h in r.json()]
    assert names and set(names) <= allowed
    assert len(names) == len(allowed)
    assert isinstance(corpus, Corpus)


def test_retrieve_by_imported_modules_and_new_premises(tiny_client, retriever_dir) -> None:
    from lean_dojo_v2.external_api.registry import module_name
    from lean_dojo_v2.models.premise_index import load_retriever

    corpus = load_retriever(retriever_dir, device="cpu").corpus
    leaf = next(f for f in corpus.files if f.premises and not f.imports)
    module = module_name(leaf.path)
    r = tiny_client.post(
        "/retrieve",
        json={
            "state": STATE,
            "k": 1024,
            "imported_modules": [module, "My.Own.Module"],
            "new_premises": [{"name": "my_lemma", "decl": "theorem my_lemma : a + 0 = a"}],
        },
    )
    names = {h["name"] for h in r.json()}
    assert names == {p.full_name for p in leaf.premises} | {"my_lemma"}
    # Nothing imported: only the new premises and the named local ones.
    some = corpus.files[-1].premises or leaf.premises
    r = tiny_client.post(
        "/retrieve",
        json={
            "state": STATE,
            "k": 10,
            "imported_modules": [],
            "local_premises": [some[0].full_name],
            "new_premises": [{"name": "n1", "decl": "lemma n1 : True"}],
        },
    )
    assert {h["name"] for h in r.json()} == {some[0].full_name, "n1"}


def test_retrieve_rejects_unknown_file_and_position_without_file(tiny_client) -> None:
    r = tiny_client.post("/retrieve", json={"state": STATE, "k": 3, "file_path": "No/Such.lean"})
    assert r.status_code == 400 and "No/Such.lean" in r.json()["detail"]
    r = tiny_client.post("/retrieve", json={"state": STATE, "position": {"line": 1, "column": 0}})
    assert r.status_code == 400 and "file_path" in r.json()["detail"]


def test_retrieve_without_a_retriever_says_how_to_serve_one() -> None:
    with TestClient(make_app(CONSTANT)) as client:
        r = client.post("/retrieve", json={"state": STATE, "k": 3})
    assert r.status_code == 404 and "export_retriever" in r.json()["detail"]


def test_health_models_metrics_and_openapi(tiny_client) -> None:
    assert tiny_client.get("/health").json()["status"] == "ok"
    models = {m["name"]: m for m in tiny_client.get("/models").json()["models"]}
    assert models["tiny"]["role"] == "generator" and models["ret"]["role"] == "retriever"
    assert models["enc"]["role"] == "encoder"
    text = tiny_client.get("/metrics").text
    for name in (
        "lean_dojo_v2_requests_total",
        "lean_dojo_v2_request_seconds_bucket",
        "lean_dojo_v2_queue_depth",
        "lean_dojo_v2_batch_size_bucket",
    ):
        assert name in text
    schema = tiny_client.get("/openapi.json").json()
    for path in ("/generate", "/encode", "/retrieve", "/v1/chat/completions", "/v1/models"):
        assert path in schema["paths"]
    gen = schema["components"]["schemas"]["GenerateRequest"]
    assert set(gen["required"]) == {"name", "input"}


def test_the_default_config_serves_default_and_default_encoder_without_loading() -> None:
    from lean_dojo_v2.external_api.server import app

    with TestClient(app) as client:
        models = {m["name"]: m for m in client.get("/models").json()["models"]}
    assert models["default"]["role"] == "generator"
    assert models["default-encoder"]["role"] == "encoder"
    assert not any(m["loaded"] for m in models.values())


@pytest.mark.parametrize("size", ["small", "large"])
def test_leancopilots_curl_request_works(size: str) -> None:
    """The exact command LeanCopilot's ``send`` runs (``LeanCopilot/Models/External.lean``): a
    one-line JSON body (``pretty 99999999999999999``), curl's own headers; a body over 1 KiB
    makes curl send ``Expect: 100-continue``."""
    state = STATE if size == "small" else (STATE + "\n") * 100
    req = json.dumps({"name": "const", "input": state, "prefix": ""}, ensure_ascii=False)
    with live_server(make_app(CONSTANT)) as url:
        host_url = url.replace("127.0.0.1", "localhost") + "/generate"
        out = subprocess.run(
            [
                "curl", "-X", "POST", host_url,
                "-H", "accept: application/json",
                "-H", "Content-Type: application/json",
                "-d", req,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    outputs = json.loads(out.stdout)["outputs"]
    assert [o["output"] for o in outputs][:2] == ["rfl", "simp"]
    assert all(isinstance(o["score"], float) for o in outputs)


@pytest.mark.parametrize("size", ["small", "large"])
def test_leancopilots_exact_bytes_over_a_socket(size: str) -> None:
    """The request curl makes for LeanCopilot, byte for byte (so the test needs no curl): its
    headers, a one-line body, and for a body over 1 KiB ``Expect: 100-continue``, where curl
    waits for ``100 Continue`` before sending the body."""
    import socket

    state = STATE if size == "small" else (STATE + "\n") * 100
    body = json.dumps({"name": "const", "input": state, "prefix": ""}, ensure_ascii=False)
    data = body.encode()
    with live_server(make_app(CONSTANT)) as url:
        port = int(url.rsplit(":", 1)[1])
        head = (
            f"POST /generate HTTP/1.1\r\nHost: localhost:{port}\r\nUser-Agent: curl/7.88.1\r\n"
            "accept: application/json\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n"
        )
        if len(data) > 1024:
            head += "Expect: 100-continue\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall((head + "\r\n").encode())
            if len(data) > 1024:
                interim = sock.recv(1024)
                assert interim.startswith(b"HTTP/1.1 100"), interim
            sock.sendall(data)
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += sock.recv(65536)
            header, _, rest = reply.partition(b"\r\n\r\n")
            length = int(
                next(
                    line.split(b":", 1)[1]
                    for line in header.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
            )
            while len(rest) < length:
                rest += sock.recv(65536)
    assert header.startswith(b"HTTP/1.1 200")
    assert b"content-type: application/json" in header.lower()
    outputs = json.loads(rest)["outputs"]
    assert [o["output"] for o in outputs] == ["rfl", "simp", "omega", "linarith"]


def test_a_lora_adapter_is_served(tiny_causal_dir, tmp_path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(tiny_causal_dir))
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"])
    get_peft_model(base, config).save_pretrained(tmp_path / "adapter")
    spec = {
        "kind": "hf",
        "model": str(tiny_causal_dir),
        "adapter": str(tmp_path / "adapter"),
        "device": "cpu",
        "max_new_tokens": 4,
    }
    with TestClient(make_app({"lora": spec})) as client:
        r = client.post("/generate", json={"name": "lora", "input": STATE, "prefix": ""})
        models = client.get("/models").json()["models"]
    assert r.status_code == 200, r.text
    assert models[0]["loaded"] is True
