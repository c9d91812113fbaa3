"""End to end with a real Lean (skipped where ``lean`` and ``lake`` are not installed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lean_dojo_v2.lean_dojo import LeanGitRepo, trace

pytestmark = pytest.mark.lean

SOURCE = """\
/-- Addition commutes (a doc comment, not code). -/
theorem add_comm' (a b : Nat) : a + b = b + a := by
  rw [Nat.add_comm]

theorem two_steps (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
  constructor
  · exact hp
  · exact hq

theorem term_mode (n : Nat) : n + 0 = n := rfl

theorem unfinished (n : Nat) : n * 1 = n := by
  sorry

def double (n : Nat) : Nat := n + n
"""


def _lean_version() -> str:
    out = subprocess.run(["lean", "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"version (\d+\.\d+\.\d+(?:-rc\d+)?)", out)
    assert m, out
    return m.group(1)


@pytest.fixture
def tiny_project(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "Tiny").mkdir(parents=True)
    (root / "lean-toolchain").write_text(f"leanprover/lean4:v{_lean_version()}\n")
    (root / "lakefile.toml").write_text(
        'name = "tiny"\ndefaultTargets = ["Tiny"]\n\n[[lean_lib]]\nname = "Tiny"\n'
    )
    (root / "Tiny.lean").write_text("import Tiny.Basic\n")
    (root / "Tiny" / "Basic.lean").write_text(SOURCE)
    (root / ".gitignore").write_text(".lake/\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tiny"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def test_trace_a_tiny_project(tiny_project: Path):
    traced = trace(LeanGitRepo(str(tiny_project)), progress=False)
    assert traced.failures == {}
    thms = {t.full_name: t for t in traced.theorems()}
    assert set(thms) == {"add_comm'", "two_steps", "term_mode", "unfinished"}

    [rw] = thms["add_comm'"].traced_tactics
    assert rw.tactic == "rw [Nat.add_comm]"
    assert rw.state_before == "a b : Nat\n⊢ a + b = b + a"
    assert rw.state_after == "no goals"
    assert rw.annotated_tactic == "rw [<a>Nat.add_comm</a>]"
    [ann] = rw.annotations
    assert ann.full_name == "Nat.add_comm" and ann.def_path.startswith(".lake/packages/lean4/")
    assert thms["add_comm'"].theorem_statement == "theorem add_comm' (a b : Nat) : a + b = b + a"

    steps = thms["two_steps"].traced_tactics
    assert steps[0].tactic == "constructor"
    assert "case left" in steps[0].state_after and "\n\n" in steps[0].state_after
    # Steps inside focusing dots are recorded with their own goal; the dots themselves are not.
    assert [s.tactic for s in steps[1:]] == ["exact hp", "exact hq"]

    assert thms["term_mode"].traced_tactics == [] and thms["term_mode"].theorem_statement is None
    assert ("Tiny/Basic.lean", "unfinished") in traced.sorry_theorems()

    [pf] = [f for f in traced.premise_files() if f.path == "Tiny/Basic.lean"]
    names = [p.full_name for p in pf.premises]
    assert names == ["add_comm'", "two_steps", "term_mode", "unfinished", "double"]
    double = pf.premises[-1]
    assert double.code == "def double (n : Nat) : Nat := n + n"
    assert double.kind == "commanddeclaration"
