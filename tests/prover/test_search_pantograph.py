"""Search through the Pantograph environment against the fake REPL (tests/fake_pantograph): a
crash, a garbage answer and a hung tactic in the middle of a search each drop only their own
branch; the REPL is relaunched, lost states are re-created and the proof is found and checked by
the (fake) Lean frontend. Goals are miniF2F-test states recorded by real Lean runs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data import Pos, Theorem, TracedTactic, goal_texts
from lean_dojo_v2.interaction import AsyncPantographEnv, PantographConfig, PantographEnv
from lean_dojo_v2.models.generator import Candidate
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

from ._search_helpers import RecordedTacticGenerator

pytestmark = pytest.mark.timeout(180)

TESTS_DIR = Path(__file__).resolve().parents[1]
MINIF2F = TESTS_DIR / "data" / "real" / "minictx" / "derived" / "minif2f_test_traced_tactics.json"


def fake_config(**kwargs) -> PantographConfig:
    if str(TESTS_DIR) not in sys.path:
        sys.path.insert(0, str(TESTS_DIR))
    from fake_pantograph.launcher import fake_command

    base = dict(
        command=fake_command(),
        imports=("Init",),
        ready_timeout=30.0,
        request_timeout=30.0,
        tactic_timeout=10.0,
    )
    base.update(kwargs)
    return PantographConfig(**base)


def minif2f(name: str) -> Theorem:
    rec = next(r for r in json.loads(MINIF2F.read_text("utf-8")) if r["full_name"] == name)
    return Theorem(
        url="https://github.com/rah4927/lean-dojo-mew",
        commit="d00c776260c77de7e70125ef0cd119de6c0ff1de",
        file_path="MiniF2F/Test.lean",
        full_name=rec["full_name"],
        start=Pos(1, 1),
        end=Pos(1, 1),
        traced_tactics=[
            TracedTactic.unannotated(s["tactic"], s["state_before"], s["state_after"])
            for s in rec["traced_tactics"]
        ],
        theorem_statement=rec["statement"],
        has_statement_field=True,
    )


class MagicGenerator(RecordedTacticGenerator):
    """The recorded tactic among wrong ones, plus one of the fake REPL's magic tactics per
    recorded step, ranked first so that it runs before the others."""

    def __init__(self, theorems, magic: list[str]) -> None:
        super().__init__(theorems)
        self.magic = {}
        for thm in theorems:
            for k, tt in enumerate(thm.traced_tactics):
                if k < len(magic):
                    self.magic[goal_texts(tt.state_before)[0]] = magic[k]

    def generate(self, states, num_samples, *, prefix=None):
        out = super().generate(states, num_samples - 1, prefix=prefix)
        for text, cands in zip(states, out, strict=True):
            extra = self.magic.get(text.split("\n\n")[0])
            if extra:
                cands.insert(0, Candidate(extra, 0.0))
        return out


def test_crash_garbage_and_hang_mid_search_drop_only_their_branch():
    thm = minif2f("mathd_algebra_478")  # three recorded tactics
    gen = MagicGenerator(
        [thm, minif2f("mathd_algebra_141")], ["fake_crash", "fake_garbage", "fake_hang"]
    )
    cfg = SearchConfig(num_samples=4, frontier_batch=1, tactic_timeout=1.0, max_expansions=20)
    search = BestFirstSearch(gen, cfg)
    with PantographEnv(fake_config(tactic_timeout=1.0, timeout_grace=0.4)) as env:
        result = search.search(env, thm)
    s = result.stats
    assert result.status == "proved", (result.error, s)
    assert result.proof == [t.tactic for t in thm.traced_tactics]
    assert result.checked_by == "lean" and result.backend == "pantograph"
    assert s["env_crashes"] == 2  # fake_crash, fake_garbage
    assert s["tactic_errors"]["timeout"] == 1  # fake_hang: the watchdog's TacticTimeout
    assert s["env_restarts"] == 3 and s["rebuilds"] >= 3 and s["rebuild_failures"] == 0
    assert any("Stack overflow" in m for m in s["crash_messages"])
    assert any("PANIC" in m for m in s["crash_messages"])
    # the magic tactics' edges are the only branches lost to the environment
    edges = search.last_tree.edges
    assert [e.tactic for e in edges if e.outcome == "crash"] == ["fake_crash", "fake_garbage"]
    assert [e.tactic for e in edges if e.outcome == "error:timeout"] == ["fake_hang"]
    assert not [e for e in edges if e.outcome in ("stale", "skipped")]


def test_two_async_pantograph_envs_share_one_search_and_survive_a_crash():
    thm = minif2f("mathd_algebra_141")  # five recorded tactics
    gen = MagicGenerator([thm, minif2f("mathd_algebra_478")], ["", "fake_crash"])
    cfg = SearchConfig(num_samples=4, frontier_batch=2, max_expansions=30)

    async def main():
        envs = [AsyncPantographEnv(fake_config()) for _ in range(2)]
        try:
            for e in envs:
                await e.open()
            search = BestFirstSearch(gen, cfg)
            return await search.search_async(envs, thm), search
        finally:
            for e in envs:
                await e.close()

    result, search = asyncio.run(main())
    s = result.stats
    assert result.status == "proved", (result.error, s)
    assert result.checked_by == "lean" and s["shared_states"] is False and s["envs"] == 2
    assert s["env_crashes"] == 1 and s["env_restarts"] == 1
    assert [e.tactic for e in search.last_tree.edges if e.outcome == "crash"] == ["fake_crash"]
