"""What the agents added below them, tested where they are used: the pass loop's listener
(``CurriculumTrainer.add_pass_listener``, trainer/pass_loop.py), the proof environment choice
(agent/environment.py) and the placeholder triage (prover/triage.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from trainer.test_pass_loop import Boom, FakeConfig, FakeTrainer, _db

from lean_dojo_v2.agent.environment import choose_env, is_built_project
from lean_dojo_v2.data.model import Pos, Theorem
from lean_dojo_v2.prover.triage import placeholder_declarations, placeholder_dependencies

TESTS = Path(__file__).resolve().parents[1]


def test_pass_listener_sees_each_pass_after_its_state_is_written(tmp_path):
    out = tmp_path / "out"
    seen = []

    def listener(k, p, dataset, info):
        state = json.loads((out / "training_state.json").read_text())
        seen.append((k, p.label, dataset.path, info["steps"], state["passes_done"]))

    trainer = FakeTrainer(FakeConfig(output_dir=str(out)), fail_at=2)
    trainer.add_pass_listener(listener)
    with pytest.raises(Boom):
        trainer.train(database=_db(tmp_path))
    assert [(k, steps, done) for k, _, _, steps, done in seen] == [(0, 1, 1), (1, 2, 2)]
    assert seen[0][1].startswith("r0@") and seen[0][2] == out / "data"
    # resumed: only the pass this call runs is reported
    trainer.fail_at = None
    trainer.train(database=_db(tmp_path))
    assert [k for k, *_ in seen] == [0, 1, 2]


def _fake_repl(monkeypatch):
    fake = TESTS / "fake_pantograph" / "fake_repl.py"
    monkeypatch.setenv("LEAN_DOJO_V2_PANTOGRAPH", f"{sys.executable} {fake}")


def _project(root: Path, built: bool) -> Path:
    root.mkdir()
    (root / "lakefile.lean").write_text("import Lake\n")
    if built:
        (root / ".lake" / "build").mkdir(parents=True)
    return root


def test_pantograph_is_chosen_with_a_repl_and_a_built_project(tmp_path, monkeypatch, sample):
    _fake_repl(monkeypatch)
    built = _project(tmp_path / "built", True)
    assert is_built_project(built) and not is_built_project(None)
    choice = choose_env(built, sample, tactic_timeout=5)
    assert choice.backend == "pantograph" and choice.notice is None
    assert choice.make_env.config["project_dir"] == str(built.resolve())
    assert choice.make_env.config["tactic_timeout"] == 5
    # a REPL but no built project: replay, and the notice says why
    choice = choose_env(_project(tmp_path / "unbuilt", False), sample)
    assert choice.backend == "replay" and "no built checkout" in choice.notice
    assert choose_env(built, sample, backend="replay").backend == "replay"


def test_without_a_repl_replay_is_chosen_with_a_one_line_notice(tmp_path, monkeypatch, sample):
    from lean_dojo_v2.errors import LeanNotFoundError

    for var in ("LEAN_DOJO_V2_PANTOGRAPH", "LEAN_DOJO_V2_PANTOGRAPH_CHECKOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(
        "lean_dojo_v2.interaction.pantograph.locate.pypantograph_binary", lambda: None
    )
    choice = choose_env(_project(tmp_path / "p", True), sample)
    assert choice.backend == "replay" and "\n" not in choice.notice
    assert "only tactics recorded" in choice.notice and "lean-dojo-v2 doctor" in choice.notice
    assert choice.make_env.data == str(sample.resolve())
    with pytest.raises(LeanNotFoundError):
        choose_env(tmp_path / "p", sample, backend="pantograph")


SOURCE = """import Mathlib

namespace Econ

/-- a rate we have not decided yet -/
noncomputable def rate : ℝ := sorry

def fixed : ℕ := 3

theorem rate_pos : 0 < rate := sorry

theorem fixed_pos : 0 < fixed := by decide

-- mentions rate only in a comment and in the proof: not a dependency
theorem other (x : ℝ) : x = x := by
  have := rate
  rfl

lemma helper_sorry : True := sorry

end Econ

theorem uses_qualified : Econ.rate ≤ Econ.rate := sorry
"""


def _thm(name: str, line: int) -> Theorem:
    return Theorem("u", "c" * 40, "Econ.lean", name, Pos(line, 1), Pos(line, 1))


def test_triage_finds_theorems_whose_statement_uses_a_sorry_definition(tmp_path):
    (tmp_path / "Econ.lean").write_text(SOURCE, "utf-8")
    (tmp_path / ".lake").mkdir()
    (tmp_path / ".lake" / "Dep.lean").write_text("def ignored : ℕ := sorry\n")
    assert placeholder_declarations(tmp_path) == {"Econ.rate": "Econ.lean"}  # theorems are not
    lines = SOURCE.split("\n")

    def at(prefix: str) -> int:
        return next(i for i, text in enumerate(lines, 1) if text.startswith(prefix))

    theorems = [
        _thm("Econ.rate_pos", at("theorem rate_pos")),
        _thm("Econ.fixed_pos", at("theorem fixed_pos")),
        _thm("Econ.other", at("theorem other")),
        _thm("Econ.helper_sorry", at("lemma helper_sorry")),
        _thm("uses_qualified", at("theorem uses_qualified")),
    ]
    assert placeholder_dependencies(tmp_path, theorems) == {
        "Econ.rate_pos": ["Econ.rate"],
        "uses_qualified": ["Econ.rate"],
    }
