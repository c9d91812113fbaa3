"""``SearchResult`` and ``proof_text``: JSON-ready results, and proof text that the environments
split back into the same tactics (real multi-line tactics of the bundled sample)."""

from __future__ import annotations

import json
import math

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.interaction import ReplayEnv, normalize_tactic, split_tactics
from lean_dojo_v2.prover import SearchResult, proof_text


def test_to_dict_is_json_ready_and_round_trips():
    result = SearchResult(
        theorem="Nat.add_comm'",
        file_path="Mathlib/Foo.lean",
        status="proved",
        proof=["intro n", "induction n with\n  | zero => simp\n  | succ n ih => omega"],
        expansions=3,
        seconds=0.25,
        backend="replay",
        checked_by="replay",
        stats={"tactic_errors": {"tactic": 2}, "ratio": math.inf, "order": (1, 2)},
    )
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)  # raises on NaN/inf or a non-JSON type
    back = SearchResult.from_dict(json.loads(text))
    assert back.proof == result.proof and back.status == "proved" and back.checked_by == "replay"
    assert back.stats["ratio"] is None and back.stats["order"] == [1, 2]
    assert result.proved and result.proof_text.startswith("intro n\ninduction n with")


def test_proof_text_splits_back_into_the_same_tactics_for_every_recorded_proof():
    theorems = [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]
    multi_line = 0
    for thm in theorems:
        tactics = [t.tactic for t in thm.traced_tactics]
        multi_line += sum("\n" in t for t in tactics)
        back = split_tactics(proof_text(tactics))
        assert [normalize_tactic(t) for t in back] == [normalize_tactic(t) for t in tactics], (
            thm.full_name
        )
    assert multi_line > 0  # the sample does hold multi-line tactics


def test_proof_text_of_a_replayed_path_is_accepted_by_verify():
    theorems = [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]
    env = ReplayEnv.from_theorems(theorems)
    thm = next(t for t in theorems if any("\n" in tt.tactic for tt in t.traced_tactics))
    # the tactics that apply in order from the first state (nested ones are part of their parent)
    state, used = env.start(thm), []
    for tt in thm.traced_tactics:
        if not hasattr(state, "goals"):
            break
        out = env.run_tactic(state, tt.tactic)
        if hasattr(out, "message"):
            continue
        used.append(tt.tactic)
        state = out
    assert env.verify(thm, proof_text(used)).ok
    assert proof_text(["  simp  ", "", "\r\nexact h\r\n"]) == "simp\nexact h"
