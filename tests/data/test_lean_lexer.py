"""The one Lean scanner (``lean_dojo_v2.data.lean_lexer``) on the corners real files rarely show.

Real PutnamBench / miniF2F / miniCTX sources are scanned in ``test_sorry.py`` (sorry detection,
statements, proof spans); here each lexer rule gets a small string of its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lean_dojo_v2.data.lean_lexer import (
    declaration_context,
    find_top_level_assign,
    header_end,
    index_of,
    iter_commands,
    iter_tokens,
    proof_span,
    strip_leading_by,
    tactic_block,
    tactic_block_lines,
    tokenize,
)
from lean_dojo_v2.interaction.pantograph import proof_file

# What Lean 4 reads as no white space: a tab and a lone \r are errors, the rest are no separators.
NOT_LEAN_SPACE = ("\t", "\r", "\u00a0", "\u2003", "\u202f", "\u205f", "\u3000", "\ufeff")


def _kinds(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source)]


def _statement(source: str, start: int = 0) -> str:
    cut = find_top_level_assign(source, start)
    assert cut >= 0, source
    return source[start:cut].rstrip()


# ------------------------------------------------------------------------------------ tokens


@pytest.mark.parametrize(
    "literal",
    ["'('", "')'", "'⟨'", "'⟩'", "'\"'", "'\\''", "'\\n'", "'\\\\'", "'\\x41'", "'\\u{3b1}'"],
)
def test_char_literals_are_one_token(literal: str) -> None:
    assert _kinds(f"f {literal} x") == [("ident", "f"), ("char", literal), ("ident", "x")]


def test_primes_in_names_are_not_char_literals() -> None:
    tokens = _kinds("h' f ⁻¹' s ⁻¹' t")
    assert ("ident", "h'") in tokens and ("ident", "t") in tokens
    assert all(kind != "char" for kind, _ in tokens)


def test_nested_block_comments_and_doc_comments() -> None:
    source = "a /- x /- := -/ := -/ b /-- doc ( -/ c /-! mod -/ -- line := \nd"
    assert [k for k, _ in _kinds(source)] == [
        "ident",
        "block",
        "ident",
        "doc",
        "ident",
        "moddoc",
        "line",
        "ident",
    ]


@pytest.mark.parametrize(
    "string",
    ['"a := b"', '"esc \\" ( := "', '"\\\\"', 'r"raw \\ ("', 'r#"raw " := ("#', 'r##"a "# b"##'],
)
def test_strings_and_raw_strings_are_one_token(string: str) -> None:
    assert _kinds(f"x {string} y") == [("ident", "x"), ("string", string), ("ident", "y")]


def test_guillemet_identifiers_and_name_literals() -> None:
    assert _kinds("«a := (b» `foo.«x y» Nat.succ") == [
        ("ident", "«a := (b»"),
        ("namelit", "`foo.«x y»"),
        ("ident", "Nat.succ"),
    ]


def test_brackets_and_assign_are_single_tokens() -> None:
    # A run of symbols never swallows a bracket or ``:=`` (``}:=``, ``:=⟨``).
    assert [t for _, t in _kinds("{x}:=⟨a⟩ ⦃y⦄ ⟦z⟧ @[simp]")] == [
        "{", "x", "}", ":=", "⟨", "a", "⟩", "⦃", "y", "⦄", "⟦", "z", "⟧", "@[", "simp", "]",
    ]  # fmt: skip


def test_iter_tokens_is_lazy_and_starts_anywhere() -> None:
    source = "a := b /- c -/ d"
    it = iter_tokens(source, source.index("b"))
    assert next(it).text == "b" and next(it).kind == "block"
    assert tokenize(source, 2) == tokenize(source)[1:]


# ----------------------------------------------------------------- find_top_level_assign


@pytest.mark.parametrize("char", ["'('", "')'", "'⟨'", "'⟩'", "'\"'", "'['", "'{'"])
def test_top_level_assign_after_char_literal(char: str) -> None:
    source = f"theorem t : {char} = {char} := by rfl"
    assert _statement(source) == f"theorem t : {char} = {char}"


def test_top_level_assign_skips_binder_default_values() -> None:
    source = "theorem t (a : Char := ')') (b : Nat := 0) : a = a := rfl"
    assert _statement(source) == "theorem t (a : Char := ')') (b : Nat := 0) : a = a"
    source = "theorem t (hf : IsAffineMap ℝ f := by fun_prop) {s : S := { a := 1 }} : P := h"
    assert _statement(source).endswith(": P")


def test_top_level_assign_skips_comments_strings_and_nested_comments() -> None:
    source = 'theorem t /- /- := -/ := -/ -- :=\n (s : String := ":=") : s = r#":="# := rfl'
    assert _statement(source).endswith('s = r#":="#')


def test_top_level_assign_skips_let_and_have_in_the_statement() -> None:
    source = "theorem t : let (a, b) := f 1; have h : a = a := rfl; a = b := by simp"
    assert _statement(source).endswith("a = b")
    # ``let x ← e`` (``do`` notation) binds without ``:=``.
    source = "theorem t : (do let x ← m; let y := x; pure y) = m := by simp"
    assert _statement(source).endswith("= m")
    source = "theorem t : x = Id.run do\n    let x ← m\n    pure x := by simp"
    assert _statement(source).endswith("pure x")


def test_top_level_assign_after_header() -> None:
    source = (
        "/-- a doc (with ( and := -/\n@[simp, aesop (rule_sets := [x])]\n"
        "open Foo in\nprivate theorem t : P := h"
    )
    assert _statement(source).endswith("private theorem t : P")
    source = "instance (priority := 100) foo : C := ⟨⟩"
    assert _statement(source) == "instance (priority := 100) foo : C"


def test_top_level_assign_stops_at_the_next_command() -> None:
    # No ``:=`` of its own: never the next declaration's.
    for source in (
        "instance : Inhabited Nat where\n  default := 0\ntheorem u : True := trivial",
        "def f : Nat → Nat\n  | 0 => 1\n  | n + 1 => n\n\ntheorem u : True := trivial",
        "structure S where\n  x : Nat := 0\n",
        "theorem t : P",
        "",
    ):
        assert find_top_level_assign(source) == -1, source
        assert proof_span(source) is None
    source = "def f : Nat → Nat\n  | 0 => 1\n  | n + 1 => n\n\ntheorem u : True := trivial"
    assert _statement(source, source.index("theorem")) == "theorem u : True"


def test_top_level_assign_from_a_start_index() -> None:
    source = "theorem a : A := x\n\ntheorem b (c : Char := '(') : B := y\n"
    assert _statement(source, source.index("theorem b")) == "theorem b (c : Char := '(') : B"


# ------------------------------------------------------------------------------ proof_span


def test_proof_span_replaces_sorry() -> None:
    source = "/-- d -/\ntheorem t (c : Char := ':') : c = c := by\n  sorry -- todo\n\ntheorem u : Q := h\n"
    begin, end = proof_span(source)
    assert source[begin:end] == "by\n  sorry"
    written = source[:begin] + "by\n  rfl" + source[end:]
    assert written == source.replace("by\n  sorry", "by\n  rfl")
    begin, end = proof_span(source, source.index("theorem u"))
    assert source[begin:end] == "h"


def test_proof_span_stops_before_where_and_termination_by() -> None:
    source = "def f (n : Nat) : Nat := g n\nwhere\n  g (k : Nat) : Nat := k\n"
    begin, end = proof_span(source)
    assert source[begin:end] == "g n"
    source = "def f : Nat → Nat := fun n => f n\ntermination_by n => n\ndecreasing_by sorry\n"
    begin, end = proof_span(source)
    assert source[begin:end] == "fun n => f n"


# ------------------------------------------------------------------------------ small helpers


def test_strip_leading_by() -> None:
    assert strip_leading_by("  by\n  simp") == "\n  simp"
    assert strip_leading_by("by\r\n  simp") == "\r\n  simp"
    assert strip_leading_by("by") == ""
    for text in ("by_cases h : p", "byContra", "simp", "", "  "):
        assert strip_leading_by(text) is None
    for space in NOT_LEAN_SPACE:
        assert strip_leading_by(f"{space}by simp") is None, repr(space)
        assert strip_leading_by(f"by{space}simp") is None, repr(space)


def test_tactic_block_removes_only_leans_white_space() -> None:
    # spaces shared by every line, spaces around a leading `by`, \r\n: nothing to Lean
    assert tactic_block_lines(" \r\n  by  simp  \r\n    ring\r\n") == ["simp", "ring"]
    assert tactic_block_lines("    intro x\n      simp\n\n  \n    ring") == [
        "intro x",
        "  simp",
        "",
        "",
        "ring",
    ]
    # a tab shared by every line is an error to Lean: it reaches Lean, nothing is dedented
    tabbed = "\tintro x\n\tsimp"
    assert tactic_block(tabbed) == "by\n  \tintro x\n  \tsimp"
    assert "\n  \tintro x\n  \tsimp\n" in proof_file("theorem t (x : Nat) : x = x", tabbed)
    for space in NOT_LEAN_SPACE:
        shared = f"{space}intro x\n{space}simp"
        assert tactic_block_lines(shared) == [f"{space}intro x", f"{space}simp"], repr(space)
        assert tactic_block_lines(f"{space}by simp") == [f"{space}by simp"], repr(space)
        assert tactic_block_lines(f"by{space}simp") == [f"by{space}simp"], repr(space)
        assert tactic_block_lines(f"by simp{space}") == [f"simp{space}"], repr(space)
        # a line of such a character and spaces is no blank line (a space after it: \r\n is one)
        block = tactic_block(f"by\n  simp\n{space} \n  ring")
        assert block == f"by\n    simp\n  {space} \n    ring", repr(space)


def test_index_of_clamps_columns_and_refuses_lines() -> None:
    source = "ab\ncd\n"
    assert index_of(source, 1, 1) == 0 and index_of(source, 2, 2) == 4
    assert index_of(source, 1, 99) == 2 and index_of(source, 3, 1) == 6
    with pytest.raises(ValueError, match="outside"):
        index_of(source, 4, 1)


# ------------------------------------------------------------------ declaration_context

CONTEXT_SOURCE = """/- Copyright -/
import Mathlib.Data.Real.Basic
import Mathlib.Tactic

/-! # Module doc -/

noncomputable section

open Set Filter
open scoped BigOperators

universe u

namespace Foo

variable {α : Type u} [Preorder α]

section Closed
variable (gone : α)
open Gone
local notation "⋆" => gone
end Closed

notation "♯" => Nat.succ
scoped notation "♭" => Nat.pred
local notation "♮" => Nat.zero
attribute [simp] Nat.succ_le
attribute [local simp] Nat.le_succ
attribute [-simp] Nat.lt_irrefl
set_option linter.unusedVariables false
set_option maxRecDepth 1000 in
theorem skipped : True := trivial
alias skipped' := skipped

mutual
theorem m1 : True := trivial
end

variable (x : α)
assert_not_exists Bar

/-- doc -/
@[simp]
open Classical in
set_option maxHeartbeats 400000 in
protected theorem target (h : x ≤ x) : x ≤ x := by
  exact h

end Foo
"""


def test_declaration_context_lists_the_context_commands_in_effect() -> None:
    source = CONTEXT_SOURCE
    start = source.index("theorem target")
    ctx = declaration_context(source, start)
    texts = [source[c.start : c.end] for c in ctx.context]
    assert texts == [
        "noncomputable section",
        "open Set Filter",
        "open scoped BigOperators",
        "universe u",
        "namespace Foo",
        "variable {α : Type u} [Preorder α]",
        'local notation "♮" => Nat.zero',
        "attribute [local simp] Nat.le_succ",
        "attribute [-simp] Nat.lt_irrefl",
        "set_option linter.unusedVariables false",
        "variable (x : α)",  # ``assert_not_exists`` in column 1 is not part of it
    ]
    command = ctx.command
    assert source[command.start :].startswith("/-- doc -/") and command.keyword == "theorem"
    assert command.keyword_start == start and command.modifiers == ("protected",)
    assert [source[a:b] for a, b in command.prefixes] == [
        "open Classical in",
        "set_option maxHeartbeats 400000 in",
    ]
    assert source[command.end - len("exact h") : command.end] == "exact h"
    assert ctx.mutual is None
    # any index of its header finds the same declaration
    assert declaration_context(source, source.index("/-- doc")).command == command


def test_declaration_context_in_a_mutual_block_and_outside_any_command() -> None:
    source = CONTEXT_SOURCE
    ctx = declaration_context(source, source.index("theorem m1"))
    begin, end = ctx.mutual
    assert source[begin:end] == "mutual\ntheorem m1 : True := trivial\nend"
    assert "mutual" not in [c.keyword for c in ctx.context]
    with pytest.raises(ValueError):
        declaration_context(source, len(source))


def test_declaration_context_end_of_a_dotted_namespace() -> None:
    source = "namespace A.B\nvariable (n : Nat)\nend A.B\nnamespace C\ntheorem t : n = n := rfl\n"
    texts = [
        source[c.start : c.end]
        for c in declaration_context(source, source.index("theorem")).context
    ]
    assert texts == ["namespace C"]
    # scopes that do not line up are replayed as written
    source = "namespace A.B\nend B\nvariable (n : Nat)\ntheorem t : n = n := rfl\n"
    texts = [
        source[c.start : c.end]
        for c in declaration_context(source, source.index("theorem")).context
    ]
    assert texts == ["namespace A.B", "end B", "variable (n : Nat)"]


def test_header_end_and_iter_commands() -> None:
    source = CONTEXT_SOURCE
    assert source[: header_end(source)].endswith("import Mathlib.Tactic")
    assert header_end("theorem t : True := trivial") == 0
    assert header_end("module\n\npublic import A\nimport all B\n\npublic section\n").__eq__(
        len("module\n\npublic import A\nimport all B")
    )
    keywords = [c.keyword for c in iter_commands(source)]
    assert keywords[:4] == ["import", "import", "/-! # Module doc -/", "section"]
    assert keywords.count("theorem") == 3 and "alias" not in keywords  # unknown: not a start


def _minictx_records(shared_data: Path) -> list[dict]:
    records = []
    for path in sorted((shared_data / "minictx" / "data" / "minictx").glob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            records.extend(json.loads(line) for line in f if line.strip())
    return records


CONTEXT_WORDS = re.compile(
    r"(noncomputable section|section|namespace|end|open|variable|universe|set_option|omit|include"
    r"|local \w+|attribute \[(local|-))(?![\w'])"
)


def test_declaration_context_on_real_minictx_files(shared_data: Path) -> None:
    records = _minictx_records(shared_data)
    assert len(records) == 13
    for record in records:
        source = record["srcContext"] + record["theoremStatement"] + " := by\n  sorry\n"
        start = len(record["srcContext"])
        ctx = declaration_context(source, start)
        assert ctx.command.keyword_start >= start and ctx.mutual is None
        assert source[ctx.command.start : ctx.command.end].endswith("sorry")
        opened = []
        for command in ctx.context:
            text = source[command.start : command.end]
            assert CONTEXT_WORDS.match(text), (record["theoremName"], text)
            assert source[command.start - 1] == "\n"  # a command in column 1
            if command.keyword == "namespace":
                opened.append(text.split()[1])
        # Where the record gives the full name, the namespaces still open are its prefix.
        name = record["theoremName"]
        declared = source[ctx.command.keyword_start :].split()[1]
        if name and record["file"].split("/")[0] != "mathlib4":
            assert ".".join([*opened, declared]) == name, (name, opened)
        # every line before the declaration that opens a scope left open is in the context
        body = source[header_end(source) : ctx.command.start]
        assert "import" not in re.findall(r"^\w+", body, re.MULTILINE)
