"""The OpenAI-compatible routes, with the official ``openai`` package and our ``ExternalProver``
as clients, unchanged."""

from __future__ import annotations

import math

import pytest

from .conftest import CONSTANT, live_server, make_app

STATE = "n : ℕ\n⊢ n + 0 = n"


@pytest.fixture(scope="module")
def base_url(tiny_causal_dir):
    spec = {
        "kind": "hf",
        "model": str(tiny_causal_dir),
        "device": "cpu",
        "max_new_tokens": 8,
        "seed": 0,
    }
    with live_server(make_app({**CONSTANT, "tiny": spec})) as url:
        yield url + "/v1"


def test_openai_client_lists_models_and_completes(base_url) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    assert {m.id for m in client.models.list()} == {"const", "tiny"}
    r = client.chat.completions.create(
        model="const",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": STATE}],
        n=3,
        temperature=0.7,
        max_tokens=32,
        logprobs=True,
    )
    assert [c.message.content for c in r.choices] == ["rfl", "simp", "omega"]
    assert [c.index for c in r.choices] == [0, 1, 2]
    lp = [math.fsum(t.logprob for t in c.logprobs.content) for c in r.choices]
    assert lp == sorted(lp, reverse=True)
    assert r.choices[0].finish_reason == "stop" and r.object == "chat.completion"


def test_openai_client_streams(base_url) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    texts: dict[int, str] = {}
    finished = set()
    for chunk in client.chat.completions.create(
        model="const", messages=[{"role": "user", "content": STATE}], n=2, stream=True
    ):
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            if choice.finish_reason:
                finished.add(choice.index)
    assert texts == {0: "rfl", 1: "simp"} and finished == {0, 1}


def test_openai_client_sees_errors_as_api_errors(base_url) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="nope"):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="const", messages=[{"role": "user", "content": "x"}], n=1000
        )


def test_a_local_model_through_chat_matches_generate(base_url) -> None:
    import httpx
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    r = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": STATE}], n=4, temperature=0
    )
    greedy = [c.message.content for c in r.choices]
    assert len(greedy) <= 1, greedy  # temperature 0: the one greedy candidate (if not empty)
    root = base_url.removesuffix("/v1")
    direct = httpx.post(f"{root}/generate", json={"name": "tiny", "input": STATE, "prefix": ""})
    assert direct.status_code == 200


def test_external_prover_uses_our_server_unchanged(base_url) -> None:
    from lean_dojo_v2.prover.external_prover import ExternalProver

    prover = ExternalProver(base_url=base_url, api_key="unused", max_retries=0)
    assert prover.model_name == "const"  # the first model /v1/models lists
    (cands,) = prover.generate([STATE], 3)
    assert [c.tactic for c in cands] == ["rfl", "simp", "omega"]
    assert cands[0].logprob == pytest.approx(-0.5)
    (ruled,) = prover.generate([STATE], 2, prefix="rw ")
    assert [c.tactic for c in ruled] == ["rw rfl", "rw simp"]
    tiny = ExternalProver("tiny", base_url=base_url, api_key="unused", max_retries=0)
    (found,) = tiny.generate([STATE], 2)
    assert all(isinstance(c.tactic, str) and c.tactic for c in found)
