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
    assert len(greedy) == 4 and len(set(greedy)) == 1, greedy  # temperature 0: one text, n times
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


# ............................................................................ OpenAI's fields


def _client(base_url: str):
    import openai

    return openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)


def _tiny_rows(tiny_causal_dir, n: int, max_new_tokens: int) -> list[list[int]]:
    """The token ids the served ``tiny`` model decodes for STATE (same seed, same settings)."""
    from lean_dojo_v2.models.generator import load_generator

    direct = load_generator(
        str(tiny_causal_dir), device="cpu", seed=0, max_new_tokens=max_new_tokens
    )
    rows, _ = direct.decode_rows([STATE], n)
    assert not any(t in direct.stop_ids for ids in rows for t in ids)  # none ended by itself
    return rows


def test_usage_counts_prompt_and_completion_tokens_with_the_models_tokenizer(
    base_url, tiny_causal_dir
) -> None:
    from transformers import AutoTokenizer

    from lean_dojo_v2.data import canonical_state
    from lean_dojo_v2.models.prompts import SYSTEM_PROMPT

    r = _client(base_url).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": STATE}], n=3, max_tokens=5
    )
    tok = AutoTokenizer.from_pretrained(tiny_causal_dir)
    # What the model sees: its own system turn and the goal, in its chat template.
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": canonical_state(STATE)},
    ]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt_tokens = len(tok(text, add_special_tokens=False)["input_ids"])
    generated = sum(len(ids) for ids in _tiny_rows(tiny_causal_dir, 3, 5))
    assert r.usage.prompt_tokens == prompt_tokens > 20
    assert r.usage.completion_tokens == generated == 15
    assert r.usage.total_tokens == prompt_tokens + generated


def test_finish_reason_is_length_when_max_tokens_cut_the_output(base_url, tiny_causal_dir) -> None:
    client = _client(base_url)
    r = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": STATE}], n=4, max_tokens=2
    )
    rows = _tiny_rows(tiny_causal_dir, 4, 2)
    assert all(len(ids) == 2 for ids in rows)  # every sequence ran into the limit
    assert [c.finish_reason for c in r.choices] == ["length"] * 4
    done = client.chat.completions.create(
        model="const", messages=[{"role": "user", "content": STATE}], n=2, max_tokens=2
    )
    assert [c.finish_reason for c in done.choices] == ["stop", "stop"]


def test_exactly_n_choices_come_back_even_when_samples_repeat(base_url, tiny_causal_dir) -> None:
    import httpx

    client = _client(base_url)
    # One token each: several of the 6 samples decode to the same text.
    r = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": STATE}], n=6, max_tokens=1
    )
    texts = [c.message.content for c in r.choices]
    assert len(texts) == 6 and len(set(texts)) < 6, texts
    assert [c.index for c in r.choices] == list(range(6))
    greedy = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": STATE}], n=3, temperature=0
    )
    assert len(greedy.choices) == 3 and len({c.message.content for c in greedy.choices}) == 1
    # LeanCopilot's /generate keeps its documented deduplicated outputs.
    root = base_url.removesuffix("/v1")
    body = {"name": "tiny", "input": STATE, "prefix": "", "num_samples": 6}
    outs = [o["output"] for o in httpx.post(f"{root}/generate", json=body).json()["outputs"]]
    assert len(outs) == len(set(outs))


def test_external_prover_needs_one_request_for_n_repeating_samples(base_url) -> None:
    from lean_dojo_v2.prover.external_prover import ExternalProver

    prover = ExternalProver(
        "tiny", base_url=base_url, api_key="unused", max_retries=0, max_tokens=1
    )
    prover.generate([STATE], 6)
    assert prover.requests_sent == 1  # it asks again only when fewer than n choices come


def test_models_retrieve_and_an_unknown_id_in_openais_error_shape(base_url) -> None:
    import httpx
    import openai

    client = _client(base_url)
    model = client.models.retrieve("tiny")
    assert (model.id, model.object, model.owned_by) == ("tiny", "model", "lean-dojo-v2")
    with pytest.raises(openai.NotFoundError, match="nope"):
        client.models.retrieve("nope")
    r = httpx.get(f"{base_url}/models/nope")
    assert r.status_code == 404
    err = r.json()["error"]
    assert set(err) >= {"message", "type", "param", "code"}
    assert err["type"] == "invalid_request_error" and err["code"] == "model_not_found"
    assert "served" in err["message"]


def test_top_logprobs_is_refused_with_a_400_that_says_so(base_url) -> None:
    import openai

    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        _client(base_url).chat.completions.create(
            model="const",
            messages=[{"role": "user", "content": STATE}],
            logprobs=True,
            top_logprobs=3,
        )


def test_a_stream_with_include_usage_ends_with_the_usage(base_url) -> None:
    client = _client(base_url)
    args = dict(model="tiny", messages=[{"role": "user", "content": STATE}], n=2, max_tokens=3)
    whole = client.chat.completions.create(**args)
    chunks = list(
        client.chat.completions.create(**args, stream=True, stream_options={"include_usage": True})
    )
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.model_dump() == whole.usage.model_dump()
    assert whole.usage.completion_tokens == 6
    plain = list(client.chat.completions.create(**args, stream=True))
    assert all(c.usage is None for c in plain)


def test_a_local_choice_ends_stop_when_its_tactic_ended_and_length_when_cut(
    tiny_causal_dir,
) -> None:
    from lean_dojo_v2.external_api.served import GenOptions, HFGenerator

    spec = {"kind": "hf", "model": str(tiny_causal_dir), "device": "cpu", "seed": 0}
    model = HFGenerator("t", {**spec, "max_new_tokens": 3})
    # A prefix holding a whole tactic: whatever follows its line break is not part of it.
    (ended,) = model.completions([STATE], 2, "simp\nrfl", GenOptions())
    assert [(c.text, c.finish_reason, c.tokens) for c in ended] == [("simp", "stop", 3)] * 2
    (cut,) = model.completions([STATE], 2, "simp ", GenOptions())
    assert [(c.finish_reason, c.tokens) for c in cut] == [("length", 3)] * 2
    assert all(c.text.startswith("simp ") for c in cut)


# ----------------------------------------------------------------------------- OpenAI's errors


def _bad_request(base_url, **kwargs):
    """The ``openai.BadRequestError`` a create() with ``kwargs`` raises (a 400, as OpenAI and
    vLLM answer; a 422 would be an ``UnprocessableEntityError``, which ``except
    openai.BadRequestError`` does not catch)."""
    import openai

    args = {"model": "const", "messages": [{"role": "user", "content": STATE}], **kwargs}
    with pytest.raises(openai.BadRequestError) as info:
        _client(base_url).chat.completions.create(**args)
    err = info.value
    assert err.status_code == 400 and err.type == "invalid_request_error", err.body
    return err


@pytest.mark.parametrize(
    ("kwargs", "param", "code"),
    [
        ({"n": 0}, "n", "invalid_value"),
        ({"temperature": 3}, "temperature", "invalid_value"),
        ({"max_tokens": "8"}, "max_tokens", "invalid_type"),
        ({"messages": []}, "messages", "invalid_value"),
        ({"messages": [{"role": "hacker", "content": "x"}]}, "messages[0].role", "invalid_value"),
        ({"messages": [{"role": "user", "content": None}]}, "messages[0].content", "invalid_type"),
        ({"messages": [{"content": "x"}]}, "messages[0].role", "missing_required_parameter"),
        (
            {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": 5}]},
            "messages[1].content",
            "invalid_type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
            "missing_required_parameter",
        ),
        (
            {"messages": [{"role": "tool", "content": "42"}]},
            "messages[0].tool_call_id",
            "missing_required_parameter",
        ),
        (
            {"messages": [{"role": "assistant"}]},
            "messages[0].content",
            "missing_required_parameter",
        ),
    ],
    ids=lambda v: str(v)[:40],
)
def test_invalid_requests_are_bad_request_errors_naming_the_parameter(
    base_url, kwargs, param, code
) -> None:
    err = _bad_request(base_url, **kwargs)
    assert err.param == param and err.code == code, err.body
    assert param in err.message and "\n" not in err.message


def test_every_role_openai_accepts_is_accepted(base_url) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": [{"type": "text", "text": "tactics only"}]},
        {"role": "user", "content": "first goal"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },  # fmt: skip
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
        {"role": "assistant", "content": "simp"},
        {"role": "user", "content": [{"type": "text", "text": STATE}]},
    ]
    r = _client(base_url).chat.completions.create(model="const", messages=messages)
    assert r.choices[0].message.content == "rfl"


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"response_format": {"type": "json_object"}}, "response_format"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
            "tools",
        ),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"functions": [{"name": "f", "parameters": {}}]}, "functions"),
        ({"function_call": {"name": "f"}}, "function_call"),
        ({"logit_bias": {"123": 5}}, "logit_bias"),
        ({"stop": ["\n"]}, "stop"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"prediction": {"type": "content", "content": "rfl"}}, "prediction"),
        ({"web_search_options": {}}, "web_search_options"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_what_the_server_does_not_support_is_refused_naming_it(base_url, kwargs, param) -> None:
    err = _bad_request(base_url, **kwargs)
    assert err.param == param and err.code == "unsupported_parameter", err.body
    assert param in err.message


def test_defaults_of_unsupported_parameters_and_sampling_hints_are_accepted(base_url) -> None:
    """What asks for nothing the server lacks: text output, no tools, no stop, and the
    sampling hints a tactic model may ignore (ExternalProver sends top_p)."""
    r = _client(base_url).chat.completions.create(
        model="const",
        messages=[{"role": "user", "content": STATE}],
        response_format={"type": "text"},
        tools=[],
        tool_choice="none",
        stop=None,
        logit_bias={},
        modalities=["text"],
        top_p=0.95,
        seed=1,
        user="me",
        frequency_penalty=0,
        presence_penalty=0,
        extra_body={"top_k": 20},
    )
    assert r.choices[0].message.content == "rfl"


def test_a_context_overflow_is_a_400_with_context_length_exceeded(base_url) -> None:
    long_state = "x : ℝ\n⊢ " + " + ".join(f"x ^ {i}" for i in range(400)) + " = 0"
    err = _bad_request(
        base_url, model="tiny", messages=[{"role": "user", "content": long_state}], max_tokens=4
    )
    assert err.code == "context_length_exceeded" and err.param == "messages", err.body
    assert "context length of 1024 tokens" in err.message


def test_malformed_json_on_openais_routes_is_a_400() -> None:
    from fastapi.testclient import TestClient

    with TestClient(make_app(CONSTANT)) as c:
        r = c.post(
            "/v1/chat/completions",
            content=b'{"model": "const", "messages": ',
            headers={"content-type": "application/json"},
        )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and "not valid JSON" in err["message"]
