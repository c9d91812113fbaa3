"""The published OpenAPI schema, and a property-based run against it (schemathesis, on
hypothesis): whatever the generated requests, the server answers no 5xx and stays up."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from .conftest import make_app


@pytest.fixture(scope="module")
def fuzz_app(tiny_causal_dir, tiny_bert_dir, retriever_dir):
    return make_app(
        {
            "const": {"kind": "constant"},
            "tiny": {
                "kind": "hf",
                "model": str(tiny_causal_dir),
                "device": "cpu",
                "max_new_tokens": 4,
                "strategy": "greedy",
            },
            "enc": {"kind": "encoder", "model": str(tiny_bert_dir), "device": "cpu"},
            "ret": {"kind": "retriever", "path": str(retriever_dir), "device": "cpu"},
        },
        max_input_chars=2000,
        max_outputs=4,
        num_samples=2,
        max_tokens=16,
    )


def test_no_request_the_schema_allows_gets_a_5xx(fuzz_app) -> None:
    """Every operation of the published schema, with requests hypothesis draws from it (valid
    and invalid bodies alike). Driven by hand rather than through schemathesis' pytest plugin,
    whose lazy-fixture loader does not run under this pytest."""
    from hypothesis import given

    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = {op.path for op in operations}
    assert {"/generate", "/encode", "/retrieve", "/v1/chat/completions"} <= paths
    seen: dict[int, int] = {}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if mode is GenerationMode.NEGATIVE and operation.method.upper() == "GET":
                continue  # no body to get wrong

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=12,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case) -> None:
                _served_names(case)
                response = case.call()
                seen[response.status_code] = seen.get(response.status_code, 0) + 1
                assert response.status_code < 500, (
                    case.method,
                    case.path,
                    case.body,
                    response.text,
                )

            check()
    print("status codes seen:", dict(sorted(seen.items())))
    assert not [code for code in seen if code >= 500]
    assert sum(seen.values()) >= len(operations)


# Random names would almost all be answered 404; half of the drawn bodies name a served model
# of the route's role instead, so the models themselves see the generated inputs.
_NAMES = {
    "/generate": ("name", ["const", "tiny"]),
    "/encode": ("name", ["enc", "ret"]),
    "/retrieve": ("name", ["ret"]),
    "/v1/chat/completions": ("model", ["const", "tiny"]),
}


def _served_names(case) -> None:
    key, names = _NAMES.get(case.path, (None, []))
    body = case.body
    if key and isinstance(body, dict) and isinstance(body.get(key), str):
        pick = len(body[key]) % (len(names) + 1)
        if pick < len(names):
            body[key] = names[pick]


def test_the_schema_is_published_and_the_server_is_still_up(fuzz_app) -> None:
    with TestClient(fuzz_app) as client:
        schema_doc = client.get("/openapi.json").json()
        assert schema_doc["info"]["title"] == "lean-dojo-v2 API server"
        assert client.get("/docs").status_code == 200
        r = client.post("/generate", json={"name": "const", "input": "⊢ True"})
        assert r.status_code == 200
