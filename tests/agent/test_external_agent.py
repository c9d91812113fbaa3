"""ExternalAgent against a fake OpenAI-compatible server on 127.0.0.1 (tests/prover/fake_openai.py)
that answers the recorded tactics: proofs found, re-checked and reported; whole-proof mode;
``train()`` has nothing to train; an unreachable endpoint is one line before any search."""

from __future__ import annotations

import dataclasses
import socket

import pytest
from prover._oracle_server import oracle_answer
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.agent import ExternalAgent
from lean_dojo_v2.prover import SearchConfig

SEARCH = SearchConfig(num_samples=3, max_expansions=30, timeout=60)


def test_external_agent_proves_through_the_endpoint(tmp_path, sample, capsys):
    with FakeOpenAI(completions=oracle_answer(), models=("fake-model",)) as server:
        agent = ExternalAgent(
            model_name="fake-model",
            base_url=server.base_url,
            database_path=tmp_path / "db.sqlite",
            search_config=SEARCH,
            progress=False,
        )
        assert agent.train() is None
        assert "nothing to train" in capsys.readouterr().err
        agent.setup_traced_dataset(sample)
        report = agent.prove(split="val")
        assert server.requests  # the endpoint was asked
        base_url = server.base_url
    d = report.to_dict()
    assert d["agent"] == "ExternalAgent" and d["backend"] == "replay"
    assert d["model"] == f"fake-model @ {base_url}" and d["trained"] is None
    assert d["attempted"] == 2 and d["proved"] >= 1
    assert all(o["checked_by"] == "replay" for o in d["outcomes"] if o["status"] == "proved")
    agent.close()


@pytest.mark.parametrize("asked_by", ["whole_proof=True", "SearchConfig(mode='whole')"])
def test_whole_proof_mode_as_upstream_calls_it(tmp_path, sample, asked_by):
    from lean_dojo_v2.data.dataset import load_theorems
    from lean_dojo_v2.data.goals import goal_texts
    from lean_dojo_v2.prover.result import proof_text

    recorded = {t.full_name: [x.tactic for x in t.traced_tactics] for t in load_theorems(sample)}

    def whole(request, index):
        # the recorded proof of the theorem whose first goal the prompt shows
        text = "\n".join(str(m.get("content")) for m in request["messages"])
        for t in load_theorems(sample):
            goals = goal_texts(t.traced_tactics[0].state_before) if t.traced_tactics else []
            if goals and goals[0] in text:
                return "```lean\n" + proof_text(recorded[t.full_name]) + "\n```"
        return "exact wrong"

    with FakeOpenAI(completions=whole) as server:
        agent = ExternalAgent(
            model_name="fake-model",
            base_url=server.base_url,
            database_path=tmp_path / "db.sqlite",
            search_config=SEARCH
            if asked_by == "whole_proof=True"
            else dataclasses.replace(SEARCH, mode="whole"),
            quiet=True,
            progress=False,
        )
        agent.setup_traced_dataset(sample)
        if asked_by == "whole_proof=True":
            report = agent.prove(whole_proof=True, split="val")
        else:
            report = agent.prove(split="val")
    assert report.whole_proof and report.attempted == 2
    # the one-tactic proof replays whole; the other's recorded order does not (replay's limit)
    proved = [o for o in report.outcomes if o.proved]
    assert [o.theorem for o in proved] == ["Matrix.transpose_nonsing_inv"]
    assert proved[0].checked_by == "replay"
    agent.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("model", ["fake-model", None])
def test_unreachable_endpoint_is_one_line_before_any_search(tmp_path, sample, monkeypatch, model):
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    def boom(*args, **kwargs):
        raise AssertionError("a search started")

    monkeypatch.setattr("lean_dojo_v2.prover.parallel.prove_theorems", boom)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    agent = ExternalAgent(
        model_name=model,
        base_url=url,
        database_path=tmp_path / "db.sqlite",
        quiet=True,
        progress=False,
        prover_kwargs={"max_retries": 0},
    )
    agent.setup_traced_dataset(sample)
    with pytest.raises(ExternalModelError) as info:
        agent.prove(split="val")
    assert url in str(info.value) and "\n" not in str(info.value)
    assert not agent.work_dir.exists()  # nothing exported, nothing written
    agent.close()


def test_bad_endpoint_settings_fail_at_construction(tmp_path):
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with pytest.raises(ExternalModelError, match="http"):
        ExternalAgent(model_name="m", base_url="localhost:8000")


def test_external_agent_searches_in_worker_processes(tmp_path, sample, monkeypatch):
    """``workers=2``: each worker process asks the same endpoint (the key from
    ``$OPENAI_API_KEY``, never pickled); a key given in code keeps the search here, said."""
    import lean_dojo_v2.prover.parallel as parallel

    seen = []
    real = parallel.prove_theorems
    monkeypatch.setattr(
        parallel,
        "prove_theorems",
        lambda *a, **k: seen.append(k["backend"]) or real(*a, **k),
    )
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-environment")
    with FakeOpenAI(completions=oracle_answer(), models=("fake-model",)) as server:
        kwargs = dict(base_url=server.base_url, search_config=SEARCH, progress=False, quiet=True)
        agent = ExternalAgent("fake-model", tmp_path / "a.sqlite", workers=2, **kwargs)
        agent.setup_traced_dataset(sample)
        report = agent.prove(split="val")
        keyed = ExternalAgent(
            "fake-model", tmp_path / "b.sqlite", api_key="in-code", workers=2, **kwargs
        )
        keyed.setup_traced_dataset(sample)
        inline = keyed.prove(split="val")
    assert seen == ["process", "inline"]
    assert report.attempted == 2 and report.proved >= 1 and report.proved == inline.proved
    assert any("workers=2 ignored" in n for n in inline.notes) and not report.notes
    agent.close()
    keyed.close()
