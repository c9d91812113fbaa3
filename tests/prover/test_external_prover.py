"""ExternalProver with the real ``openai`` client against a local fake OpenAI-compatible server
(``tests/prover/fake_openai.py``): n samples, servers that ignore n, logprobs or frequency
scores, completion clean-up, retries on 5xx, timeouts, unreachable URLs, unknown models,
choices without text, and proof search on a real theorem through ReplayEnv."""

from __future__ import annotations

import logging
import math
import socket
import subprocess
import sys
import time

import pytest

from lean_dojo_v2.errors import ModelError

from .fake_openai import FakeOpenAI, completion_logprob

STATE = "n : ℕ\n⊢ n + 0 = n"


def prover_for(server: FakeOpenAI, **kw):
    from lean_dojo_v2.prover import ExternalProver

    kw.setdefault("timeout", 5.0)
    return ExternalProver("fake-model", base_url=server.base_url, **kw)


def tactics(cands) -> list[str]:
    return [c.tactic for c in cands]


# --------------------------------------------------------------------------- samples and scores


def test_n_samples_come_from_one_request():
    with FakeOpenAI(completions=["simp", "rfl", "omega", "decide"]) as server:
        (cands,) = prover_for(server).generate([STATE], 4)
        assert len(server.requests) == 1 and server.requests[0]["n"] == 4
        assert sorted(tactics(cands)) == ["decide", "omega", "rfl", "simp"]


def test_server_ignoring_n_is_asked_again_for_the_rest():
    with FakeOpenAI(completions=["simp", "rfl", "omega"], honour_n=False) as server:
        (cands,) = prover_for(server).generate([STATE], 3)
        assert len(server.requests) == 3
        assert [r["n"] for r in server.requests] == [3, 2, 1]
        assert sorted(tactics(cands)) == ["omega", "rfl", "simp"]


def test_logprobs_are_summed_over_tokens_when_returned():
    with FakeOpenAI(completions=["rw [Nat.add_zero]", "simp", "omega"]) as server:
        (cands,) = prover_for(server).generate([STATE], 3)
        assert server.requests[0]["logprobs"] is True
        by_tactic = {c.tactic: c.logprob for c in cands}
        assert by_tactic["rw [Nat.add_zero]"] == pytest.approx(completion_logprob(0))
        assert by_tactic["simp"] == pytest.approx(completion_logprob(1))
        assert tactics(cands) == ["rw [Nat.add_zero]", "simp", "omega"]  # best first


def test_without_logprobs_scores_are_log_frequencies_in_server_order():
    with FakeOpenAI(completions=["rfl", "simp", "simp", "omega"], logprobs=False) as server:
        (cands,) = prover_for(server).generate([STATE], 4)
        assert tactics(cands) == ["simp", "rfl", "omega"]
        assert [c.logprob for c in cands] == pytest.approx(
            [math.log(2 / 4), math.log(1 / 4), math.log(1 / 4)]
        )


def test_logprobs_option_off_sends_no_logprobs():
    with FakeOpenAI(completions=["simp"]) as server:
        (cands,) = prover_for(server, logprobs=False).generate([STATE], 1)
        assert "logprobs" not in server.requests[0]
        assert cands[0].logprob == 0.0  # log(1/1)


def test_completion_text_becomes_one_tactic():
    answers = [
        "```lean\ninduction n with\n  | zero => rfl\n  | succ n ih => simp [ih]\n```",
        "by simp",
        "Try this:\n```lean4\nsimp\n```",  # a duplicate of the one above, once unwrapped
        "sorry",
        "theorem foo (n : ℕ) : n + 0 = n := by\n  exact Nat.add_zero n",
        "  admit  ",
    ]
    with FakeOpenAI(completions=answers, logprobs=False) as server:
        (cands,) = prover_for(server).generate([STATE], 6)
    assert tactics(cands) == [
        "simp",
        "induction n with\n  | zero => rfl\n  | succ n ih => simp [ih]",
        "exact Nat.add_zero n",
    ]


def test_prompt_is_the_shared_chat_prompt_with_canonical_state():
    from lean_dojo_v2.models.prompts import SYSTEM_PROMPT, chat_messages

    with FakeOpenAI(completions=["simp"]) as server:
        prover_for(server, temperature=0.3, max_tokens=77).generate([STATE], 2)
        req = server.requests[0]
    assert req["messages"] == chat_messages(STATE)
    assert req["messages"][0]["content"] == SYSTEM_PROMPT
    assert req["model"] == "fake-model" and req["temperature"] == 0.3 and req["max_tokens"] == 77


def test_several_states_are_answered_each_with_its_own_candidates():
    states = [f"x{i} : ℕ\n⊢ x{i} = x{i}" for i in range(5)]

    def answer(body, k):
        user = body["messages"][-1]["content"]
        return f"exact rfl_{user.split()[0]}"

    with FakeOpenAI(completions=answer, logprobs=False) as server:
        out = prover_for(server, max_concurrency=3).generate(states, 2)
        assert len(server.requests) == 5
    assert [tactics(c) for c in out] == [[f"exact rfl_x{i}"] for i in range(5)]


def test_prefix_keeps_only_tactics_starting_with_it():
    with FakeOpenAI(completions=["simp", "rw [h]", "rw [Nat.add_zero]"], logprobs=False) as server:
        (cands,) = prover_for(server).generate([STATE], 3, prefix="rw")
        assert "rw" in server.requests[0]["messages"][-1]["content"]
    assert sorted(tactics(cands)) == ["rw [Nat.add_zero]", "rw [h]"]


def test_generate_with_premises_puts_them_in_the_prompt():
    from lean_dojo_v2.models.prompts import user_content

    with FakeOpenAI(completions=["simp"]) as server:
        prover_for(server).generate_with_premises(
            [STATE], 1, [["theorem Nat.add_zero (n : ℕ) : n + 0 = n"]]
        )
        assert server.requests[0]["messages"][-1]["content"] == user_content(
            STATE, ["theorem Nat.add_zero (n : ℕ) : n + 0 = n"]
        )


def test_generate_proofs_keeps_every_line_and_uses_whole_proof_prompt():
    from lean_dojo_v2.models.prompts import PROOF_SYSTEM_PROMPT

    proof = "intro h\ninduction n with\n  | zero => rfl\n  | succ n ih => simp [ih]"
    answers = [f"```lean\nby\n  {proof.replace(chr(10), chr(10) + '  ')}\n```", "intro h\nsorry"]
    with FakeOpenAI(completions=answers) as server:
        (cands,) = prover_for(server, max_proof_tokens=300).generate_proofs([STATE], 2)
        req = server.requests[0]
    assert tactics(cands) == [proof]
    assert req["messages"][0]["content"] == PROOF_SYSTEM_PROMPT and req["max_tokens"] == 300


# --------------------------------------------------------------------------- retries and errors


def test_5xx_is_retried_then_answered():
    with FakeOpenAI(completions=["simp"], fail_first=2, fail_status=503) as server:
        (cands,) = prover_for(server, max_retries=2).generate([STATE], 1)
        assert len(server.requests) == 3
    assert tactics(cands) == ["simp"]


def test_5xx_after_all_retries_is_a_typed_error_naming_the_url():
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with FakeOpenAI(fail_first=100, fail_status=500) as server:
        with pytest.raises(ExternalModelError, match="HTTP 500") as info:
            prover_for(server, max_retries=1).generate([STATE], 1)
        assert server.base_url in str(info.value)
        assert len(server.requests) == 2
    assert isinstance(info.value, ModelError)


def test_slow_answer_times_out_with_a_typed_error():
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with FakeOpenAI(delay=2.0) as server:
        start = time.monotonic()
        with pytest.raises(ExternalModelError, match="did not answer within 0.3 s"):
            prover_for(server, timeout=0.3, max_retries=1).generate([STATE], 1)
        assert time.monotonic() - start < 1.9
        assert len(server.requests) == 2


def test_slow_first_answer_is_retried_after_timeout():
    with FakeOpenAI(completions=["simp"], delay=2.0, delay_first=1) as server:
        (cands,) = prover_for(server, timeout=0.5, max_retries=1).generate([STATE], 1)
        assert len(server.requests) == 2
    assert tactics(cands) == ["simp"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_base_url_is_a_typed_error_naming_the_url():
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    url = f"http://127.0.0.1:{_free_port()}/v1"
    prover = ExternalProver("m", base_url=url, max_retries=0, timeout=2.0)
    with pytest.raises(ExternalModelError, match="cannot reach") as info:
        prover.generate([STATE], 1)
    assert url in str(info.value)


def test_unknown_model_is_a_typed_error():
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with FakeOpenAI() as server:
        with pytest.raises(ExternalModelError, match="404.*does not serve this model"):
            ExternalProver("no-such-model", base_url=server.base_url).generate([STATE], 1)


@pytest.mark.parametrize("malformed", ["empty_content", "null_content"])
def test_choices_without_text_give_no_candidates_and_a_warning(malformed, caplog):
    # The model said nothing (not a malformed answer: see test_external_hostile.py for those).
    with FakeOpenAI(completions=["simp"], malformed=malformed) as server:
        with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.prover.external_prover"):
            out = prover_for(server).generate([STATE, STATE + " "], 2)
    assert out == [[], []]
    assert "without text" in caplog.text


def test_answer_with_unusable_logprobs_falls_back_to_frequency_scores():
    with FakeOpenAI(completions=["simp", "rfl"], malformed="bad_logprobs") as server:
        (cands,) = prover_for(server).generate([STATE], 2)
    assert {c.logprob for c in cands} == {math.log(1 / 2)}


def test_server_refusing_logprobs_is_asked_without_them():
    from lean_dojo_v2.prover import ExternalProver

    class Refusing(FakeOpenAI):
        def _answer(self, body):
            if body.get("logprobs"):
                self.requests.append(body)
                return 400, {"error": {"message": "logprobs is not supported", "type": "invalid"}}
            return super()._answer(body)

    with Refusing(completions=["simp"]) as server:
        prover = ExternalProver("fake-model", base_url=server.base_url)
        assert tactics(prover.generate([STATE], 1)[0]) == ["simp"]
        assert tactics(prover.generate([STATE], 1)[0]) == ["simp"]
        assert [bool(r.get("logprobs")) for r in server.requests] == [True, False, False]


def test_api_key_from_argument_else_environment(monkeypatch):
    from lean_dojo_v2.prover import ExternalProver

    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    with FakeOpenAI(completions=["simp"]) as server:
        ExternalProver("fake-model", base_url=server.base_url).generate([STATE], 1)
        ExternalProver("fake-model", base_url=server.base_url, api_key="arg-key").generate(
            [STATE], 1
        )
        monkeypatch.delenv("OPENAI_API_KEY")
        ExternalProver("fake-model", base_url=server.base_url).generate([STATE], 1)
        auth = [h["authorization"] for h in server.headers]
    assert auth == ["Bearer env-key", "Bearer arg-key", "Bearer EMPTY"]


def test_no_import_time_or_construction_time_check():
    code = (
        "import os; os.environ.pop('OPENAI_API_KEY', None);"
        "import sys; from lean_dojo_v2.prover import ExternalProver;"
        "p = ExternalProver('m', base_url='http://127.0.0.1:9/v1');"
        "assert 'openai' not in sys.modules, 'openai imported before first use'; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "localhost:8000"},
        {"timeout": 0},
        {"max_retries": -1},
        {"temperature": -1.0},
        {"max_tokens": 0},
    ],
)
def test_bad_arguments_are_typed_errors(kwargs):
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with pytest.raises(ExternalModelError):
        ExternalProver("m", **kwargs)


def test_pickled_prover_makes_its_own_client():
    import pickle

    with FakeOpenAI(completions=["simp"]) as server:
        prover = prover_for(server)
        prover.generate([STATE], 1)
        copy = pickle.loads(pickle.dumps(prover))
        assert tactics(copy.generate([STATE], 1)[0]) == ["simp"]


# --------------------------------------------------------------------------- end to end


@pytest.fixture()
def replay_env():
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.interaction import ReplayEnv

    env = ReplayEnv.from_dataset(sample_dataset_path())
    yield env
    env.close()


def _theorem(name: str):
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems

    (thm,) = [t for t in load_theorems(sample_dataset_path()) if t.full_name == name]
    return thm


def test_external_prover_proves_real_theorem_through_search_on_replay(replay_env):
    """The server answers, for the goal state it is asked about, the recorded tactic among two
    wrong ones (fenced, with prose); best-first search finds the two-step proof."""
    from lean_dojo_v2.data import canonical_state
    from lean_dojo_v2.prover import SearchConfig

    thm = _theorem("Order.pred_eq_iff_covBy")
    recorded = {canonical_state(t.state_before): t.tactic for t in thm.traced_tactics}

    def answer(body, k):
        user = body["messages"][-1]["content"]
        right = recorded.get(user, "simp")
        return ["exact le_rfl", f"Use this:\n```lean\n{right}\n```", "aesop"][k % 3]

    with FakeOpenAI(completions=answer, logprobs=False) as server:
        prover = prover_for(server)
        result = prover.prove(thm, replay_env, SearchConfig(num_samples=3, max_expansions=10))
    assert result.status == "proved", result
    assert result.proof == [t.tactic for t in thm.traced_tactics]
    assert result.checked_by == "replay"


def test_external_prover_whole_proof_mode_on_replay(replay_env):
    from lean_dojo_v2.prover import SearchConfig

    thm = _theorem("Order.pred_eq_iff_covBy")
    proof = "\n".join(t.tactic for t in thm.traced_tactics)
    answers = ["intro h\nsorry", f"```lean\nby\n  {proof.replace(chr(10), chr(10) + '  ')}\n```"]
    with FakeOpenAI(completions=answers) as server:
        result = prover_for(server).prove(
            thm, replay_env, SearchConfig(num_samples=2, whole_proof=True, max_expansions=2)
        )
    assert result.status == "proved", result
    assert result.proof == [t.tactic for t in thm.traced_tactics]


def test_unreachable_server_makes_an_error_result_not_a_traceback(replay_env):
    from lean_dojo_v2.prover import ExternalProver, SearchConfig

    thm = _theorem("Order.pred_eq_iff_covBy")
    url = f"http://127.0.0.1:{_free_port()}/v1"
    prover = ExternalProver("m", base_url=url, max_retries=0)
    result = prover.prove(thm, replay_env, SearchConfig(num_samples=2, max_expansions=3))
    assert result.status == "error"
    assert url in (result.error or "")
