"""The Pantograph environment split by job (``lean_text``, ``async_env``, ``blocking``), and the
one ``frontend.distil`` → ``frontend.process`` fallback."""

from __future__ import annotations

import json

import pytest

from lean_dojo_v2.data import goal_texts
from lean_dojo_v2.interaction.pantograph import PantographEnv, async_env, lean_text

from .conftest import fake_config

pytestmark = pytest.mark.timeout(120)


def test_the_async_env_has_one_way_to_read_a_theorem_source():
    # ``statement_of`` repeated ``theorem_source``; it is gone.
    assert not hasattr(async_env.AsyncPantographEnv, "statement_of")


def test_option_items_reads_mappings_and_key_value_items():
    assert lean_text.option_items(None) == {}
    assert lean_text.option_items({"maxHeartbeats": 400000}) == {"maxHeartbeats": 400000}
    assert lean_text.option_items(["--maxHeartbeats=400000", " pp.all = true "]) == {
        "maxHeartbeats": "400000",
        "pp.all": "true",
    }
    assert lean_text.option_items("maxRecDepth=10") == {"maxRecDepth": "10"}


def _sent(log) -> list[tuple[str, dict]]:
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        cmd, _, payload = line.partition(" ")
        if cmd.startswith("frontend."):
            out.append((cmd, json.loads(payload)))
    return out


@pytest.mark.parametrize("version", ["0.3.4", "0.3.15"])
def test_start_from_source_gives_the_same_states_by_distil_or_by_process(
    tmp_path, version, minif2f_theorems
):
    thm = minif2f_theorems[2]
    stmt = thm.theorem_statement
    head = stmt[: stmt.rindex(":=")].rstrip()
    first = thm.traced_tactics[0]
    text = f"theorem {head} := by\n  {first.tactic}\n  sorry\n"
    log = tmp_path / "requests.log"
    cfg = fake_config(env={"FAKE_PANTOGRAPH_VERSION": version, "FAKE_PANTOGRAPH_LOG": str(log)})
    with PantographEnv(cfg) as penv:
        (state,) = penv.start_from_source(text, binder_name="h")
        assert state.goals == tuple(goal_texts(first.state_after))
        assert state.handle.label == "source/text"
    sent = _sent(log)
    assert sent[0][0] == "frontend.distil"  # always asked first
    assert sent[0][1]["binderName"] == "h"
    if version == "0.3.4":  # "Unknown command": the same text again, by frontend.process
        assert [c for c, _ in sent] == ["frontend.distil", "frontend.process"]
        assert sent[1][1]["sorrys"] is True and sent[1][1]["file"] == text
    else:
        assert [c for c, _ in sent] == ["frontend.distil"]
