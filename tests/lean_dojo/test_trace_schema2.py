"""Trace schema 2: the shapes ``ExtractData.lean`` writes since it follows LeanDojo's step rule,
imports `module` files at the server level, drops the end-of-input command and reports items it
could not read — read by ``traced_file.py`` without Lean.

The traces here are written the way the script writes them (``{"line", "column"}`` positions,
0-based columns), for small sources whose positions are computed from the text itself.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.lean_dojo.errors import TraceFormatError
from lean_dojo_v2.lean_dojo.layout import CORE_DIR, ProjectLayout
from lean_dojo_v2.lean_dojo.traced_file import SCHEMA_VERSION, TracedFile

EXTRACTOR = Path(__file__).parents[2] / "lean_dojo_v2/lean_dojo/ExtractData.lean"


def at(text: str, needle: str, nth: int = 0) -> int:
    return [m.start() for m in re.finditer(re.escape(needle), text)][nth]


def pos(text: str, index: int) -> dict[str, int]:
    line = text.count("\n", 0, index) + 1
    return {"line": line, "column": index - (text.rfind("\n", 0, index) + 1)}


def span(text: str, needle: str, nth: int = 0) -> dict[str, Any]:
    s = at(text, needle, nth)
    return {"start": pos(text, s), "end": pos(text, s + len(needle))}


def trace(text: str, module: str, **parts: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": "lean_dojo_v2.trace",
        "schema_version": 2,
        "lean_version": "4.29.0",
        "module": module,
        "file": module.replace(".", "/") + ".lean",
        "lean_options": [],
        "imports": [],
        "module_files": {},
        "commands": [],
        "declarations": [],
        "tactics": [],
        "premises": [],
        "messages": [],
        "errors": [],
    }
    out.update(parts)
    return out


def theorem(text: str, name: str, whole: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The command and declaration records of the theorem whose source is ``whole``."""
    s = at(text, whole)
    r = {"start": pos(text, s), "end": pos(text, s + len(whole))}
    command = {
        "kind": "Lean.Parser.Command.declaration",
        **r,
        "value_starts": [pos(text, s + whole.index(":= by"))],
    }
    decl = {
        "name": name,
        "private": False,
        "kind": "theorem",
        **r,
        "name_start": pos(text, s + whole.index(name)),
        "name_end": pos(text, s + whole.index(name) + len(name)),
    }
    return command, decl


def step(text: str, needle: str, before: str, after: str, seq: str, nth: int = 0) -> dict:
    return {
        "kind": "Lean.Parser.Tactic.x",
        "seq": f"Lean.Parser.Tactic.{seq}",
        **span(text, needle, nth),
        "state_before": before,
        "state_after": after,
    }


# ------------------------------------------------------------------ a `module` file of Lean core

MODULE_SRC = """module

prelude
public import Init.Data.Nat.Basic

public section

theorem Nat.my_add_zero (n : Nat) : n + 0 = n := by
  rw [Nat.add_zero]
"""
MODULE_THM = MODULE_SRC[at(MODULE_SRC, "theorem") :].rstrip("\n")
G = "n : Nat\n⊢ n + 0 = n"


def module_trace(def_ranges: bool) -> dict[str, Any]:
    cmd, decl = theorem(MODULE_SRC, "Nat.my_add_zero", MODULE_THM)
    premise: dict[str, Any] = {
        "name": "Nat.add_zero",
        "module": "Init.Core",
        **span(MODULE_SRC, "Nat.add_zero"),
    }
    if def_ranges:  # what the server import level gives (Init.Core: `theorem Nat.add_zero`)
        premise["def_start"] = {"line": 1290, "column": 18}
        premise["def_end"] = {"line": 1290, "column": 30}
    return trace(
        MODULE_SRC,
        "Init.MyAddZero",
        imports=["Init.Data.Nat.Basic"],
        module_files={
            "Init.Core": "/toolchain/lib/lean/Init/Core.olean",
            "Init.Data.Nat.Basic": "/toolchain/lib/lean/Init/Data/Nat/Basic.olean",
        },
        commands=[cmd],
        declarations=[decl],
        tactics=[step(MODULE_SRC, "rw [Nat.add_zero]", G, "no goals", "tacticSeq1Indented")],
        premises=[premise],
    )


def load(data: dict[str, Any], text: str, path: str, root: Path) -> TracedFile:
    return TracedFile.from_json(data, text, path, ProjectLayout(root).resolve)


def test_module_file_premises_keep_their_provenance(tmp_path: Path):
    path = f"{CORE_DIR}/Init/MyAddZero.lean"
    tf = load(module_trace(def_ranges=True), MODULE_SRC, path, tmp_path)
    [thm] = tf.theorems("u", "c")
    [tac] = thm.traced_tactics
    assert tac.annotated_tactic == "rw [<a>Nat.add_zero</a>]"
    [ann] = tac.annotations
    assert ann.def_path == f"{CORE_DIR}/Init/Core.lean"
    assert ann.def_pos.to_list() == [1290, 19] and ann.def_end_pos.to_list() == [1290, 31]
    assert tf.premise_file().imports == [f"{CORE_DIR}/Init/Data/Nat/Basic.lean"]
    # What the extractor wrote for `module` files before it imported at the server level:
    # no definition ranges, so every mark was dropped.
    old = load(module_trace(def_ranges=False), MODULE_SRC, path, tmp_path)
    assert old.theorems("u", "c")[0].traced_tactics[0].annotations == []


# ------------------------------------------------------------------ LeanDojo's step rule

STEPS_SRC = """theorem two_goals (a b : Nat) (h : a = b) : a = b ∧ b = a := by
  constructor
  all_goals
    simp [h]
  rw [h, Nat.add_comm]
"""
STEPS_THM = STEPS_SRC.rstrip("\n")
S0 = "a b : Nat\nh : a = b\n⊢ a = b ∧ b = a"
S1 = "case left\na b : Nat\nh : a = b\n⊢ a = b\n\ncase right\na b : Nat\nh : a = b\n⊢ b = a"
S_RIGHT = "case right\na b : Nat\nh : a = b\n⊢ b = a"


def steps_trace() -> dict[str, Any]:
    cmd, decl = theorem(STEPS_SRC, "two_goals", STEPS_THM)
    seq = "tacticSeq1Indented"
    return trace(
        STEPS_SRC,
        "Steps",
        commands=[cmd],
        declarations=[decl],
        tactics=[
            step(STEPS_SRC, "constructor", S0, S1, seq),
            step(STEPS_SRC, "all_goals\n    simp [h]", S1, "no goals", seq),
            # `simp [h]` ran once per goal: two infos for one range, in pre-order.
            step(STEPS_SRC, "simp [h]", S1.split("\n\n")[0], "no goals", seq),
            step(STEPS_SRC, "simp [h]", S_RIGHT, "no goals", seq),
            # `rw [h, Nat.add_comm]` and the steps of its rules (children of `rewriteSeq`).
            step(STEPS_SRC, "rw [h, Nat.add_comm]", S0, "no goals", seq),
            step(STEPS_SRC, "h,", S0, S1, "rewriteSeq"),
            step(STEPS_SRC, "Nat.add_comm", S1, "no goals", "rewriteSeq"),
        ],
    )


def test_repeated_step_records_the_last_run_like_leandojo(tmp_path: Path):
    tf = load(steps_trace(), STEPS_SRC, "Steps.lean", tmp_path)
    simp = [t for t in tf.tactics if tf.tactic_text(t) == "simp [h]"]
    assert len(simp) == 2  # both runs are in the trace
    [thm] = tf.theorems("u", "c")
    [simp_record] = [t for t in thm.traced_tactics if t.tactic == "simp [h]"]
    assert simp_record.state_before == S_RIGHT


def test_rewrite_rule_steps_are_kept_in_the_trace_but_not_records(tmp_path: Path):
    tf = load(steps_trace(), STEPS_SRC, "Steps.lean", tmp_path)
    assert sum(t.is_rewrite_rule for t in tf.tactics) == 2
    [thm] = tf.theorems("u", "c")
    assert [t.tactic for t in thm.traced_tactics] == [
        "constructor",
        "all_goals\n  simp [h]",
        "simp [h]",
        "rw [h, Nat.add_comm]",
    ]


def test_a_step_whose_goals_could_not_be_printed_is_that_steps_failure(tmp_path: Path):
    data = steps_trace()
    broken = data["tactics"][0]
    del broken["state_before"], broken["state_after"]
    broken["error"] = "cannot print the goals: unknown metavariable"
    data["premises"] = [{"name": "h", **span(STEPS_SRC, "h", 3), "error": "unknown constant"}]
    data["errors"] = [{"what": "declaration", "name": "two_goals.aux", "text": "no ranges"}]
    tf = load(data, STEPS_SRC, "Steps.lean", tmp_path)
    [thm] = tf.theorems("u", "c")
    assert [t.tactic for t in thm.traced_tactics][0] == "all_goals\n  simp [h]"
    assert [(e["what"], e["text"]) for e in tf.item_errors] == [
        ("tactic", "cannot print the goals: unknown metavariable"),
        ("premise", "unknown constant"),
        ("declaration", "no ranges"),
    ]


def test_end_of_input_command_of_schema_1_is_not_a_command(tmp_path: Path):
    data = steps_trace()
    data["schema_version"] = 1
    end = pos(STEPS_SRC, len(STEPS_SRC))
    data["commands"].append(
        {"kind": "Lean.Parser.Command.eoi", "start": end, "end": end, "value_starts": []}
    )
    tf = load(data, STEPS_SRC, "Steps.lean", tmp_path)
    assert [c.kind for c in tf.commands] == ["Lean.Parser.Command.declaration"]


@pytest.mark.parametrize("quote", ["'", "`"])
def test_bare_sorry_warning_marks_the_theorem(tmp_path: Path, quote: str):
    text = "theorem t : 1 = 1 := by\n  exact (by simpa using trivial)\n"
    data = trace(text, "T")
    data["commands"], decl = theorem(text, "t", text.rstrip("\n"))
    data["commands"] = [data["commands"]]
    data["declarations"] = [decl]
    data["messages"] = [
        {
            "severity": "warning",
            "start": pos(text, at(text, "t :")),
            "text": f"declaration uses {quote}sorry{quote}",
        }
    ]
    assert [d.name for d in load(data, text, "T.lean", tmp_path).sorry_declarations()] == ["t"]


def test_schema_versions_read(tmp_path: Path):
    data = steps_trace()
    assert SCHEMA_VERSION == 2
    for version in (1, 2):
        data["schema_version"] = version
        load(data, STEPS_SRC, "Steps.lean", tmp_path)
    newer = copy.deepcopy(data)
    newer["schema_version"] = 3
    with pytest.raises(TraceFormatError, match="schema version 3"):
        load(newer, STEPS_SRC, "Steps.lean", tmp_path)
    data["lean_options"] = ["autoImplicit", "bool", "false"]
    assert load(data, STEPS_SRC, "Steps.lean", tmp_path).lean_options == [
        "autoImplicit",
        "bool",
        "false",
    ]


# ------------------------------------------------------------------ the script itself


def script() -> str:
    return EXTRACTOR.read_text(encoding="utf-8")


def code() -> str:
    """The script without comments."""
    text = re.sub(r"/-.*?-/", "", script(), flags=re.S)
    return re.sub(r"--[^\n]*", "", text)


def test_extractor_sets_options_with_calls_that_exist_on_lean_4_28():
    # `Options` is a structure since lean4#12001 (v4.28) without `setNat`/`setString`.
    assert not re.search(r"\.set(Nat|String|Int|Name)\b", code())
    assert "opts.set name.toName n" in code()


def test_extractor_imports_module_files_at_the_server_level():
    body = code()
    assert "headerOpts := opts.set `Elab.inServer true" in body
    assert "process_header% header headerOpts messages inputCtx mod" in body


def test_extractor_passes_main_module_where_process_header_takes_it():
    body = code()
    assert "hasBinder `mainModule ci.type" in body
    assert "(mainModule := $mod)" in body


def test_extractor_follows_leandojos_step_rule():
    body = code()
    for kind in ("tacticSeq1Indented", "tacticSeqBracketed", "rewriteSeq"):
        assert f"``Lean.Parser.Tactic.{kind}" in body
    assert "stepKeys" not in body and "done.contains" not in body  # no first-per-range filter
    assert "Parser.isTerminalCommand cmd then continue" in body
    assert "m.data.toString" in body


def test_extractor_schema_version_is_the_readers():
    assert re.search(r"def schemaVersion : Nat := (\d+)", script()).group(1) == str(SCHEMA_VERSION)


def test_extractor_reads_the_package_options_triples():
    body = code()
    for kind in ("bool", "nat", "string"):
        assert f'name :: "{kind}" :: v :: rest' in body
