"""A model server that answers badly (tests/prover/fake_openai.py in its hostile modes):
``ExternalProver``, ``ExternalAgent`` and ``prove --generator openai`` end in one typed line that
names the URL and says what came back, never a traceback; an answer past ``max_answer_bytes`` is
not read whole; malformed answers count as errors, apart from the model's tactics failing; and
an unreachable default URL says where it came from and how to point elsewhere."""

from __future__ import annotations

import gc
import socket
import tracemalloc

import pytest

from lean_dojo_v2.data import sample_dataset_path

from ._oracle_server import one_line_error
from .fake_openai import FakeOpenAI

STATE = "n : ℕ\n⊢ n + 0 = n"
MiB = 1024 * 1024


def prover_for(server: FakeOpenAI, **kw):
    from lean_dojo_v2.prover import ExternalProver

    kw.setdefault("timeout", 10.0)
    kw.setdefault("max_retries", 0)
    return ExternalProver("fake-model", base_url=server.base_url, **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- answer size


def test_answer_past_the_cap_stops_reading_and_is_a_typed_error():
    """48 MiB sent without a length: reading stops just past the 1 MiB cap, so the process never
    holds the answer (nor the ~20x of it that parsing JSON into objects would take)."""
    from lean_dojo_v2.prover.external_prover import ExternalAnswerTooLargeError

    size = 48 * MiB
    with FakeOpenAI(huge=size, declare_length=False) as server:
        prover = prover_for(server, max_answer_bytes=MiB)
        with pytest.raises(ExternalAnswerTooLargeError):  # first use imports openai: not measured
            prover.generate([STATE], 4)
        gc.collect()
        tracemalloc.start()
        try:
            with pytest.raises(ExternalAnswerTooLargeError) as info:
                prover.generate([STATE], 4)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    message = str(info.value)
    assert server.base_url in message and "1.0 MiB" in message and "max_answer_bytes" in message
    assert "\n" not in message
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB while reading a capped answer"
    assert server.huge_sent < size  # two answers: the client hung up on each, not draining it


def test_answer_declaring_a_length_past_the_cap_is_refused_before_reading():
    from lean_dojo_v2.prover.external_prover import ExternalAnswerTooLargeError

    with FakeOpenAI(huge=40 * MiB) as server:
        with pytest.raises(ExternalAnswerTooLargeError, match=r"says it is 40\.0 MiB"):
            prover_for(server, max_answer_bytes=2 * MiB).generate([STATE], 1)


def test_error_answer_declaring_a_length_past_the_cap_is_refused_before_reading():
    """The openai client reads an HTTP error's body itself: the declared length stops it first."""
    from lean_dojo_v2.prover.external_prover import ExternalAnswerTooLargeError

    with FakeOpenAI(fail_first=5, fail_status=400, fail_body_bytes=40 * MiB) as server:
        with pytest.raises(ExternalAnswerTooLargeError) as info:
            prover_for(server, max_answer_bytes=MiB).generate([STATE], 1)
    message = str(info.value)
    assert "HTTP 400" in message and "says it is 40.0 MiB" in message and server.base_url in message


def test_answer_cut_off_midway_is_a_typed_error():
    from lean_dojo_v2.prover.external_prover import ExternalAnswerError, ExternalModelError

    with FakeOpenAI(huge=MiB, cut_after=100_000) as server:
        with pytest.raises(ExternalModelError) as info:
            prover_for(server).generate([STATE], 1)
    assert not isinstance(info.value, ExternalAnswerError)  # the connection failed, not the JSON
    message = str(info.value)
    assert "broke off" in message and server.base_url in message and "\n" not in message


def test_cap_is_configurable_by_argument_and_environment(monkeypatch):
    from lean_dojo_v2.prover.external_answers import DEFAULT_MAX_ANSWER_BYTES
    from lean_dojo_v2.prover.external_prover import (
        ExternalAnswerTooLargeError,
        ExternalModelError,
    )

    with FakeOpenAI(huge=3 * MiB) as server:
        assert prover_for(server).max_answer_bytes == DEFAULT_MAX_ANSWER_BYTES
        # the padding is white space after the tactic: an ordinary answer, only long
        (cands,) = prover_for(server, max_answer_bytes=4 * MiB).generate([STATE], 1)
        assert [c.tactic for c in cands] == ["simp"]
        monkeypatch.setenv("LEAN_DOJO_V2_MAX_ANSWER_BYTES", str(2 * MiB))
        with pytest.raises(ExternalAnswerTooLargeError):
            prover_for(server).generate([STATE], 1)
    monkeypatch.setenv("LEAN_DOJO_V2_MAX_ANSWER_BYTES", "lots")
    with pytest.raises(ExternalModelError, match="LEAN_DOJO_V2_MAX_ANSWER_BYTES"):
        prover_for(server)
    with pytest.raises(ExternalModelError, match="max_answer_bytes"):
        prover_for(server, max_answer_bytes=0)


def test_model_list_past_the_cap_is_a_typed_error():
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalAnswerTooLargeError

    with FakeOpenAI(models_answer="huge", huge=3 * MiB) as server:
        prover = ExternalProver(base_url=server.base_url, max_answer_bytes=MiB)
        with pytest.raises(ExternalAnswerTooLargeError, match="/models"):
            prover.model_name  # noqa: B018


# --------------------------------------------------------------------------- garbage /v1/models

GARBAGE_MODELS = [
    ("not_json", "not JSON ('<html><body>Welcome to nginx!</body></html>')"),
    ("no_data", "not a model list"),
    ("not_object", "not a model list ('\"fake-model\"'"),
    ("bad_ids", "not a model list"),
]


@pytest.mark.parametrize(("answer", "said"), GARBAGE_MODELS)
def test_garbage_model_list_is_one_typed_line_for_the_prover(answer, said):
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalAnswerError

    with FakeOpenAI(models_answer=answer) as server:
        with pytest.raises(ExternalAnswerError) as info:
            ExternalProver(base_url=server.base_url).model_name  # noqa: B018
        with pytest.raises(ExternalAnswerError) as named:
            ExternalProver("fake-model", base_url=server.base_url).check_endpoint()
    for exc in (info.value, named.value):
        message = str(exc)
        assert f"GET {server.base_url}/models" in message and said in message
        assert "\n" not in message


@pytest.mark.parametrize(("answer", "said"), GARBAGE_MODELS)
def test_garbage_model_list_is_one_line_for_prove(answer, said, capsys):
    with FakeOpenAI(models_answer=answer) as server:
        line = one_line_error(
            ["prove", "--data", str(sample_dataset_path()), "--generator", "openai"]
            + ["--model", "fake-model", "--base-url", server.base_url],
            capsys,
        )
    assert f"{server.base_url}/models" in line and said in line


def test_model_list_without_the_endpoint_is_given_the_benefit_of_the_doubt():
    from lean_dojo_v2.prover.external_prover import check_endpoint

    with FakeOpenAI() as server:
        # a 404 at /models (the fake answers 404 to any other GET path): nothing to check
        assert check_endpoint(server.base_url.removesuffix("/v1") + "/elsewhere", "m", None) is None


# --------------------------------------------------------------------------- malformed chat answers

MALFORMED = [
    ("not_json", "not JSON ('<html><body>502 Bad Gateway (proxy)</body></html>')"),
    ("not_object", "not a chat completion (a list, not an object"),
    ("no_choices", "no 'choices' list"),
    ("empty_choices", "an empty 'choices' list"),
    ("choices_not_list", "no 'choices' list"),
    ("choice_not_object", "choice 0 has no 'message' object"),
    ("no_message", "choice 0 has no 'message' object"),
]


@pytest.mark.parametrize(("malformed", "said"), MALFORMED)
def test_malformed_chat_answer_is_a_typed_error_naming_the_url(malformed, said):
    from lean_dojo_v2.prover.external_prover import ExternalAnswerError

    with FakeOpenAI(malformed=malformed) as server:
        with pytest.raises(ExternalAnswerError) as info:
            prover_for(server).generate([STATE], 2)
    message = str(info.value)
    assert f"POST {server.base_url}/chat/completions" in message and said in message
    assert "\n" not in message


@pytest.mark.parametrize("malformed", ["not_json", "no_choices"])
def test_malformed_answer_ends_a_search_as_an_error(malformed):
    from lean_dojo_v2.data.dataset import load_theorems
    from lean_dojo_v2.interaction import ReplayEnv
    from lean_dojo_v2.prover import SearchConfig

    theorem = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    with (
        FakeOpenAI(malformed=malformed) as server,
        ReplayEnv.from_dataset(sample_dataset_path()) as env,
    ):
        result = prover_for(server).prove(
            theorem, env, SearchConfig(num_samples=2, max_expansions=3)
        )
    assert result.status == "error"
    assert "ExternalAnswerError" in (result.error or "") and server.base_url in result.error


# --------------------------------------------------------------------------- ExternalAgent


@pytest.fixture()
def agent_for(tmp_path, monkeypatch):
    from lean_dojo_v2.config import reset_settings

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    reset_settings()
    made = []

    def make(server: FakeOpenAI, model: str | None = "fake-model"):
        from lean_dojo_v2.agent import ExternalAgent
        from lean_dojo_v2.prover import SearchConfig

        agent = ExternalAgent(
            model_name=model,
            base_url=server.base_url,
            database_path=tmp_path / f"db{len(made)}.sqlite",
            search_config=SearchConfig(num_samples=2, max_expansions=4, timeout=60),
            quiet=True,
            progress=False,
            prover_kwargs={"max_retries": 0},
        )
        agent.setup_traced_dataset(sample_dataset_path())
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.close()
    reset_settings()


def test_agent_counts_malformed_answers_as_errors_not_failed_searches(agent_for):
    with FakeOpenAI(malformed="not_json") as server:
        report = agent_for(server).prove(split="val").to_dict()
    assert report["attempted"] >= 1
    assert report["error"] == report["attempted"] and report["failed"] == 0
    for outcome in report["outcomes"]:
        assert outcome["status"] == "error"
        assert "not JSON" in outcome["reason"] and server.base_url in outcome["reason"]


def test_agent_counts_empty_answers_as_failed_searches(agent_for):
    # The model said nothing: its tactics failed; the server did nothing wrong.
    with FakeOpenAI(malformed="empty_content") as server:
        report = agent_for(server).prove(split="val").to_dict()
    assert report["attempted"] >= 1
    assert report["failed"] == report["attempted"] and report["error"] == 0


@pytest.mark.parametrize("model", ["fake-model", None])
def test_agent_with_garbage_model_list_is_one_typed_line(agent_for, model):
    from lean_dojo_v2.prover.external_prover import ExternalAnswerError

    with FakeOpenAI(models_answer="not_json") as server:
        agent = agent_for(server, model)
        with pytest.raises(ExternalAnswerError) as info:
            agent.prove(split="val")
    message = str(info.value)
    assert f"GET {server.base_url}/models" in message and "not JSON" in message
    assert "\n" not in message


# --------------------------------------------------------------------------- nothing answers


def test_no_argument_prover_says_which_url_it_tried_and_how_to_point_elsewhere(monkeypatch):
    import lean_dojo_v2.prover.external_prover as ep
    from lean_dojo_v2.prover import ExternalProver

    url = f"http://127.0.0.1:{_free_port()}/v1"
    for name in ("OPENAI_BASE_URL", "LEAN_DOJO_V2_EXTERNAL_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(ep, "DEFAULT_BASE_URL", url)  # the default, on a port nothing serves
    prover = ExternalProver(max_retries=0, timeout=2.0)
    with pytest.raises(ep.ExternalModelError) as info:
        prover.model_name  # noqa: B018
    message = str(info.value)
    assert f"cannot reach the model server at {url}" in message
    assert "is the default" in message and "neither base_url= nor $OPENAI_BASE_URL" in message
    assert "base_url=" in message and "$OPENAI_BASE_URL" in message
    assert "\n" not in message


def test_unreachable_url_from_the_environment_says_so(monkeypatch):
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    url = f"http://127.0.0.1:{_free_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with pytest.raises(ExternalModelError) as info:
        ExternalProver("m", max_retries=0, timeout=2.0).generate([STATE], 1)
    message = str(info.value)
    assert url in message and "came from $OPENAI_BASE_URL" in message
