"""Tests for ``lean_dojo_v2.data.sorry`` on real Lean 4 files.

Real data (the copy bundled in ``tests/data/real``; where the complete ``../shared/data`` is
beside the checkout, the ``fullest_data`` fixture of ``tests/conftest.py`` reads every file there):

* PutnamBench statements: every file is ``theorem putnam_... := sorry``, some
  with an ``abbrev ..._solution := sorry`` whose answer sits in a comment.
* miniF2F proofs by Kimina-Prover: Lean-checked, so no ``sorry`` at all.
* miniCTX contexts (Mathlib, SciLean, PFR): namespaces, ``sorry_proof``,
  commented-out ``sorry`` and one real ``instance ... := sorry``.

Lexer corners that no real file exercises (nested comments, strings, char
literals, guillemets) are covered by small targeted strings at the end.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from lean_dojo_v2.data.lean_lexer import find_top_level_assign, index_of, proof_span
from lean_dojo_v2.data.sorry import (
    Declaration,
    file_has_sorry,
    find_declarations,
    find_sorry_tokens,
    sorry_declarations,
    strip_comments,
)

# Independent oracle for PutnamBench answers: the one-line solution abbrev.
SOLUTION_RE = re.compile(r"^(?:noncomputable )?abbrev (\S+)_solution\b[^\n]*:= sorry", re.MULTILINE)
# Independent oracle for theorem/lemma commands at column 1.
THEOREM_LINE_RE = re.compile(
    r"^(?:@\[[^\]\n]*\]\s*)?(?:(?:private|protected|noncomputable|nonrec)\s+)*(theorem|lemma)\s",
    re.MULTILINE,
)
# ``sorry`` as a whole word (for files where no comment/string mentions it).
SORRY_WORD_RE = re.compile(r"(?<![\w.'])sorry(?![\w'!?])")


def _read_dir(*dirs: Path) -> dict[str, str]:
    files = sorted(p for d in dirs for p in d.glob("*.lean"))
    return {p.stem: p.read_text(encoding="utf-8") for p in files}


@pytest.fixture(scope="module")
def putnam(fullest_data) -> dict[str, str]:
    return _read_dir(fullest_data("prover_benchmarks/putnambench_lean4/src"))


@pytest.fixture(scope="module")
def minif2f(fullest_data) -> dict[str, str]:
    root = fullest_data("minif2f_proofs/kimina_prover_preview")
    return _read_dir(root / "src", root / "src_added_2025-07-10")


@pytest.fixture(scope="module")
def minictx(fullest_data) -> dict[str, list[dict]]:
    root = fullest_data("minictx/data/minictx")
    return {
        name: [json.loads(line) for line in (root / f"{name}.jsonl").open(encoding="utf-8")]
        for name in ("mathlib", "scilean", "pfr_cross")
    }


def _text_at(source: str, pos: tuple[int, int], length: int) -> str:
    line, col = pos
    return source.split("\n")[line - 1][col - 1 : col - 1 + length]


def _by_name(decls: list[Declaration], name: str) -> Declaration:
    matches = [d for d in decls if d.name == name]
    assert len(matches) == 1, (name, decls)
    return matches[0]


# --------------------------------------------------------------- PutnamBench


def test_putnam_every_file_has_sorry_theorem_named_as_stem(putnam: dict[str, str]) -> None:
    assert len(putnam) >= 88  # 88 bundled; 672 in ../shared/data
    for stem, source in putnam.items():
        assert file_has_sorry(source), stem
        theorem = _by_name(sorry_declarations(source), stem)
        assert theorem.kind == "theorem"
        assert theorem.has_sorry and len(theorem.sorry_positions) == 1


def test_putnam_solution_abbrevs_match_regex(putnam: dict[str, str]) -> None:
    expected = {stem for stem, source in putnam.items() if SOLUTION_RE.search(source)}
    found = {
        stem
        for stem, source in putnam.items()
        if any(
            d.kind == "abbrev" and d.name == f"{stem}_solution" for d in sorry_declarations(source)
        )
    }
    assert len(expected) >= 49  # 49 bundled; 346 in ../shared/data
    assert found == expected
    # Every file mentioning ``_solution`` is one of them.
    assert expected == {stem for stem, source in putnam.items() if "_solution" in source}


def test_putnam_sorry_positions_point_at_sorry(putnam: dict[str, str]) -> None:
    for stem, source in putnam.items():
        positions = find_sorry_tokens(source)
        # No comment in PutnamBench mentions "sorry", so a word count is exact.
        assert len(positions) == len(SORRY_WORD_RE.findall(source)), stem
        assert len(positions) == 1 + bool(SOLUTION_RE.search(source)), stem
        for pos in positions:
            assert _text_at(source, pos, 5) == "sorry", (stem, pos)


def test_putnam_declaration_ends_at_final_sorry(putnam: dict[str, str]) -> None:
    # ``end`` is inclusive and excludes the answer comment after the abbrev.
    for stem, source in putnam.items():
        for decl in sorry_declarations(source):
            line, col = decl.sorry_positions[-1]
            assert decl.end == (line, col + 4), (stem, decl)


def test_putnam_theorem_starts_at_doc_comment(putnam: dict[str, str]) -> None:
    for stem, source in putnam.items():
        theorem = _by_name(find_declarations(source), stem)
        assert _text_at(source, theorem.start, 3) in ("/--", "the"), stem
        assert theorem.start[1] == 1
    source = putnam["putnam_1962_a2"]
    theorem = _by_name(find_declarations(source), "putnam_1962_a2")
    assert _text_at(source, theorem.start, 3) == "/--"


def test_putnam_strip_comments_removes_answers(putnam: dict[str, str]) -> None:
    source = putnam["putnam_2023_a5"]
    stripped = strip_comments(source)
    answer = "Real.sqrt (9^1010 - 1) * Complex.I/4"
    assert answer in source and answer not in stripped
    assert "For a nonnegative integer" in source and "nonnegative" not in stripped  # doc comment
    assert "abbrev putnam_2023_a5_solution : Set ℂ := sorry" in stripped
    assert "theorem putnam_2023_a5" in stripped


def test_putnam_strip_comments_keeps_layout(putnam: dict[str, str]) -> None:
    for stem, source in putnam.items():
        stripped = strip_comments(source)
        raw_lines, new_lines = source.split("\n"), stripped.split("\n")
        assert [len(x) for x in raw_lines] == [len(x) for x in new_lines], stem
        for raw, new in zip(raw_lines, new_lines, strict=True):
            if raw.startswith("--"):  # e.g. the answer line after ``abbrev``
                assert new.strip() == "", (stem, raw)
            elif raw.startswith(("theorem ", "abbrev ", "open ", "import ")):
                assert new == raw, stem
        assert find_sorry_tokens(stripped) == find_sorry_tokens(source)


def test_putnam_helper_definitions(putnam: dict[str, str]) -> None:
    decls = find_declarations(putnam["putnam_1997_b1"])
    assert [(d.kind, d.name) for d in decls] == [
        ("abbrev", "putnam_1997_b1_solution"),
        ("def", "dist_to_int"),
        ("theorem", "putnam_1997_b1"),
    ]
    helper = decls[1]
    assert not helper.has_sorry and helper.start == (7, 1)  # at ``noncomputable``
    # Pattern-matching lines ``| [] => ...`` at column 1 stay inside the def.
    decls = find_declarations(putnam["putnam_2023_a5"])
    assert [(d.kind, d.name, d.has_sorry) for d in decls] == [
        ("def", "num_ones", False),
        ("abbrev", "putnam_2023_a5_solution", True),
        ("theorem", "putnam_2023_a5", True),
    ]
    assert decls[0].start == (5, 1) and decls[0].end[0] == 7
    kinds = [(d.kind, d.name) for d in find_declarations(putnam["putnam_2025_a3"])]
    assert ("inductive", "HasWinningStrategy") in kinds and len(kinds) == 8


def test_putnam_set_option_is_not_part_of_theorem(putnam: dict[str, str]) -> None:
    source = putnam["putnam_1989_a6"]
    (theorem,) = find_declarations(source)
    assert theorem.name == "putnam_1989_a6"
    assert _text_at(source, theorem.start, 3) == "/--"
    assert theorem.start[0] > 7  # ``set_option synthInstance.maxSize 127`` is line 7


def test_putnam_is_fast(putnam: dict[str, str]) -> None:
    begin = time.perf_counter()
    for source in putnam.values():
        find_declarations(source)
    assert time.perf_counter() - begin < 5.0


# ------------------------------------------------------------------- miniF2F


def test_minif2f_proofs_have_no_sorry(minif2f: dict[str, str]) -> None:
    assert len(minif2f) >= 63  # 63 bundled; 225 in ../shared/data
    for stem, source in minif2f.items():
        assert find_sorry_tokens(source) == [], stem
        assert not file_has_sorry(source)
        assert sorry_declarations(source) == []


def test_minif2f_main_theorem_is_found(minif2f: dict[str, str]) -> None:
    for stem, source in minif2f.items():
        decls = find_declarations(source)
        assert decls[-1].name == stem and decls[-1].kind == "theorem", stem
        theorems = [d for d in decls if d.kind in ("theorem", "lemma")]
        assert len(theorems) == len(THEOREM_LINE_RE.findall(source)), stem


def test_minif2f_end_excludes_trailing_comment(minif2f: dict[str, str]) -> None:
    # mathd_numbertheory_85/185 end with ``norm_num -- explanation``.
    for stem, source in minif2f.items():
        last = find_declarations(source)[-1]
        lines = source.rstrip().split("\n")
        assert last.end[0] == len(lines), stem
        rest = lines[-1][last.end[1] :].strip()
        assert rest == "" or rest.startswith("--"), (stem, rest)
    assert find_declarations(minif2f["mathd_numbertheory_85"])[-1].end == (10, 10)


def test_minif2f_open_in_prefix_and_column_one_continuation(minif2f: dict[str, str]) -> None:
    # ``open Finset in`` on its own line belongs to the next theorem.
    decls = find_declarations(minif2f["imo_1969_p2"])
    assert len(decls) == 8
    first, second = decls[0], decls[1]
    assert (first.name, first.start) == ("lemma_8naaj5", (3, 1))
    assert (second.name, second.start) == ("lemma_6rt6by", (52, 1))
    assert first.end[0] < 52
    # ``m = 13 ∧ n = 4 ∧ k = 10 := by`` at column 1 does not end the theorem.
    decls = find_declarations(minif2f["aime_1995_p7"])
    assert [d.name for d in decls] == [
        "lemma_erggbu",
        "aime_1995_p7_helper_2",
        "lemma_yu43vy",
        "aime_1995_p7",
    ]
    assert decls[0].kind == "lemma"
    assert decls[1].start == (63, 1) and decls[1].end[0] > 100


def test_minif2f_preimage_prime_is_not_a_char_literal(minif2f: dict[str, str]) -> None:
    source = minif2f["aime_1983_p3"]
    assert "⁻¹' {0}" in source
    assert strip_comments(source).count("\n") == source.count("\n")
    assert find_declarations(source)[-1].name == "aime_1983_p3"


# ------------------------------------------------------------------- miniCTX


def test_minictx_theorem_names_with_namespaces(minictx: dict[str, list[dict]]) -> None:
    # The context ends right before the theorem; append its statement + sorry.
    for corpus, records in minictx.items():
        for record in records:
            source = record["srcContext"] + record["theoremStatement"] + " := sorry\n"
            last = sorry_declarations(source)[-1]
            name = record["theoremName"]
            if corpus != "mathlib":  # Mathlib records give the short name
                assert last.name == name or name is None, (corpus, name, last)
            elif name is not None:
                assert last.name == name or last.name.endswith("." + name), (name, last)
            assert last.end[0] == source.rstrip().count("\n") + 1


def test_minictx_namespace_prefix_from_statement(minictx: dict[str, list[dict]]) -> None:
    record = next(
        r for r in minictx["scilean"] if r["theoremName"] == "SciLean.Rand.reparameterize"
    )
    assert record["theoremStatement"].startswith("theorem reparameterize ")
    source = record["srcContext"] + record["theoremStatement"] + " := sorry\n"
    assert find_declarations(source)[-1].name == "SciLean.Rand.reparameterize"


def test_minictx_instance_priority_name(minictx: dict[str, list[dict]]) -> None:
    record = next(
        r
        for r in minictx["mathlib"]
        if (r["theoremStatement"] or "").startswith("instance (priority := 100)")
    )
    last = find_declarations(record["srcContext"] + record["theoremStatement"] + " := sorry")[-1]
    assert last.kind == "instance"
    assert last.name is not None and last.name.endswith("OpensMeasurableSpace.separatesPoints")


def test_minictx_theorem_counts(minictx: dict[str, list[dict]]) -> None:
    for corpus, records in minictx.items():
        for record in records:
            source = record["srcContext"]
            found = [d for d in find_declarations(source) if d.kind in ("theorem", "lemma")]
            assert len(found) == len(THEOREM_LINE_RE.findall(source)), corpus


def test_scilean_sorry_proof_and_commented_sorry(minictx: dict[str, list[dict]]) -> None:
    contexts = [r["srcContext"] for r in minictx["scilean"]]
    assert any("sorry_proof" in c for c in contexts)
    commented = [c for c in contexts if re.search(r"^--.*\(sorry :", c, re.MULTILINE)]
    assert commented
    for source in contexts:
        # Oracle: whole-word ``sorry`` not preceded by ``--`` on its line.
        expected = [
            (n, m.start() + 1)
            for n, line in enumerate(source.split("\n"), 1)
            for m in SORRY_WORD_RE.finditer(line)
            if "--" not in line[: m.start()]
        ]
        assert find_sorry_tokens(source) == expected
    # The one real ``sorry``: an anonymous instance in SciLean.
    source = next(c for c in contexts if "instance : UniformSpace (X ⊸[K] Y) := sorry" in c)
    (instance,) = [d for d in sorry_declarations(source) if d.kind == "instance"]
    assert instance.name is None
    assert _text_at(source, instance.sorry_positions[0], 5) == "sorry"


# ---------------------------------------------------- targeted lexer corners


@pytest.mark.parametrize(
    "source",
    [
        "/- /- -/ sorry -/",
        "/- outer /- inner\n sorry -/ still comment sorry -/",
        "-- sorry",
        "/-- doc mentioning sorry -/",
        "/-! module doc: sorry -/",
        '"sorry"',
        '"escaped \\" sorry"',
        'r#"raw " sorry"#',
        "sorry_lemma",
        "sorryAx",
        "foo.sorry",
        ".sorry",
        "`sorry",
        "``sorry",
        "«sorry»",  # a quoted identifier, not the ``sorry`` term
        "h'sorry",
        "sorry'",
        "sorry!",
        "sorry?",
        "/- unterminated sorry",
        '"unterminated sorry',
    ],
)
def test_no_sorry_token(source: str) -> None:
    assert find_sorry_tokens(source) == []
    assert not file_has_sorry(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("sorry", [(1, 1)]),
        ("exact h' sorry", [(1, 10)]),
        ("exact f' (g' sorry)", [(1, 14)]),
        ("'a' sorry", [(1, 5)]),
        ("'\\'' sorry '\\n' sorry", [(1, 6), (1, 17)]),
        ("f ⁻¹' sorry", [(1, 7)]),
        ("/- /- -/ -/ sorry", [(1, 13)]),
        ('"--" sorry', [(1, 6)]),
        ('"\\\\" sorry', [(1, 6)]),
        ("theorem h₀ : α := sorry", [(1, 19)]),
        ("  · sorry\n  . sorry", [(1, 5), (2, 5)]),
        ("(sorry)", [(1, 2)]),
        ("⟨sorry, sorry⟩", [(1, 2), (1, 9)]),
    ],
)
def test_sorry_token_positions(source: str, expected: list[tuple[int, int]]) -> None:
    assert find_sorry_tokens(source) == expected
    for pos in expected:
        assert _text_at(source, pos, 5) == "sorry"


def test_strip_comments_preserves_positions() -> None:
    source = "a /- x /- y\n -/ z -/ b -- c\n/-- d -/ e"
    stripped = strip_comments(source)
    assert stripped == "a" + " " * 10 + "\n" + " " * 9 + "b" + " " * 5 + "\n" + " " * 9 + "e"
    assert strip_comments('"-- kept" x') == '"-- kept" x'


def test_sorry_in_have_by_block() -> None:
    source = (
        "theorem t (p : Prop) (hp : p) : p ∧ p := by\n"
        "  have h' : p := by\n"
        "    sorry\n"
        "  exact ⟨h', hp⟩\n"
        "\n"
        "theorem u : True := trivial\n"
    )
    decls = find_declarations(source)
    assert [(d.name, d.has_sorry) for d in decls] == [("t", True), ("u", False)]
    assert decls[0].sorry_positions == [(3, 5)]
    assert decls[0].start == (1, 1) and decls[0].end == (4, 16)
    assert sorry_declarations(source) == [decls[0]]


def test_declaration_headers_and_scopes() -> None:
    source = (
        "namespace A\n"
        "namespace B.C\n"
        "theorem x : True := sorry\n"
        "end B.C\n"
        "@[simp]\n"
        "private lemma y : True := trivial\n"
        "set_option maxHeartbeats 400000 in\n"
        "theorem z : True := trivial\n"
        "end A\n"
        "theorem _root_.r : True := trivial\n"
        "open Nat in theorem w : True := trivial\n"
        "instance : Inhabited Nat := ⟨0⟩\n"
        "example : True := sorry\n"
        "noncomputable section\n"
        "def d := 1\n"
        "end\n"
        "/- theorem commented : False := sorry -/\n"
        "class inductive Foo | a\n"
    )
    decls = find_declarations(source)
    assert [(d.kind, d.name, d.start) for d in decls] == [
        ("theorem", "A.B.C.x", (3, 1)),
        ("lemma", "A.y", (5, 1)),
        ("theorem", "A.z", (7, 1)),
        ("theorem", "r", (10, 1)),
        ("theorem", "w", (11, 1)),
        ("instance", None, (12, 1)),
        ("example", None, (13, 1)),
        ("def", "d", (15, 1)),
        ("class inductive", "Foo", (18, 1)),
    ]
    assert [d.name for d in sorry_declarations(source)] == ["A.B.C.x", None]


@pytest.mark.parametrize("text", ["", "x", "-- only a comment", "/- block -/", "\n\n"])
def test_text_without_commands_has_no_declarations(text):
    assert find_declarations(text) == []
    assert not file_has_sorry(text)


# ------------------------------------------- the shared lexer: statements and proof spans
# ``find_top_level_assign`` / ``proof_span`` (``data.lean_lexer``) serve statement extraction and
# proof write-back; the declarations found above give where each declaration starts.


def test_putnam_statement_ends_right_before_the_proof_assign(putnam: dict[str, str]) -> None:
    # Oracle: every ``sorry`` declaration of PutnamBench ends ``:= sorry`` / ``:= by sorry``, so
    # its proof's ``:=`` is the last one before its ``sorry`` (statements have ``let … :=``).
    lets = 0
    for stem, source in putnam.items():
        for decl in sorry_declarations(source):
            start = index_of(source, *decl.start)
            sorry_at = index_of(source, *decl.sorry_positions[-1])
            assign = source.rindex(":=", 0, sorry_at)
            assert find_top_level_assign(source, start) == assign, (stem, decl.name)
            begin, end = proof_span(source, start)
            assert end == sorry_at + 5 and source[begin:sorry_at].strip() in ("", "by"), stem
            lets += "let " in source[start:assign]
    assert lets >= 1  # putnam_2025_b5 (and 14 more in ../shared/data)


def test_minif2f_proof_span_is_the_declaration_tail(minif2f: dict[str, str]) -> None:
    # Kimina-Prover proofs are ``... := by`` + tactics (with ``have … := by`` inside): the proof
    # runs from ``by`` to the declaration's last code token (comments after it excluded).
    count = 0
    for stem, source in minif2f.items():
        for decl in find_declarations(source):
            if decl.kind not in ("theorem", "lemma"):
                continue
            start = index_of(source, *decl.start)
            assign = find_top_level_assign(source, start)
            begin, end = proof_span(source, start)
            assert source[assign : begin + 2] in (":= by", ":=\n  by"), (stem, decl.name)
            assert source[assign:begin].strip() == ":=", (stem, decl.name)
            assert end == index_of(source, *decl.end) + 1, (stem, decl.name)
            count += 1
    assert count >= len(minif2f)


def test_minictx_statement_ends_where_the_record_statement_ends(
    minictx: dict[str, list[dict]],
) -> None:
    # Oracle: miniCTX gives the statement alone; we append ``:= sorry``. Statements have binder
    # defaults ``(hf : … := by fun_prop)``, ``do`` blocks with ``let x ← …`` and ``instance
    # (priority := 100)``.
    for corpus, records in minictx.items():
        for record in records:
            head = record["srcContext"] + (record["theoremStatement"] or "")
            source = head + " := sorry\n"
            start = index_of(source, *find_declarations(source)[-1].start)
            assert find_top_level_assign(source, start) == len(head) + 1, (
                corpus,
                record["theoremName"],
            )
            assert proof_span(source, start) == (len(head) + 4, len(head) + 9)
