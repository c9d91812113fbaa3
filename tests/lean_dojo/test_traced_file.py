"""Parsing the extractor's output into theorems, annotated tactics and corpus entries."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fixture_project import FixtureProject, expected_def_path, module_of

from lean_dojo_v2.data import Pos, Theorem
from lean_dojo_v2.lean_dojo.errors import TraceFormatError
from lean_dojo_v2.lean_dojo.layout import ProjectLayout
from lean_dojo_v2.lean_dojo.traced_file import (
    SourceText,
    TracedFile,
    dedent_continuation,
    remove_comments,
)


def load(project: FixtureProject, module: str, data: dict[str, Any] | None = None) -> TracedFile:
    path = project.files[module]
    source = (project.root / path).read_text(encoding="utf-8")
    layout = ProjectLayout(project.root)
    return TracedFile.from_json(data or project.traces[module], source, path, layout.resolve)


def test_theorems_carry_the_real_states_and_tactics(project: FixtureProject, shared_data: Path):
    derived = {
        d["full_name"]: d
        for d in json.loads(
            (shared_data / "minictx/derived/minif2f_test_traced_tactics.json").read_text("utf-8")
        )
    }
    seen = 0
    for module in ("Fixture.Algebra", "Fixture.NumberTheory", "Fixture.Other"):
        for thm in load(project, module).theorems("https://x/fixture", project.commit):
            expected = derived[thm.full_name]["traced_tactics"]
            assert [t.tactic for t in thm.traced_tactics] == [t["tactic"] for t in expected]
            assert [(t.state_before, t.state_after) for t in thm.traced_tactics] == [
                (t["state_before"], t["state_after"]) for t in expected
            ]
            assert thm.file_path == project.files[module]
            assert thm.url == "https://x/fixture" and thm.commit == project.commit
            statement = project.proofs[thm.full_name].statement
            assert thm.theorem_statement == "theorem " + statement.removesuffix(":= by").strip()
            # Round trip through the dataset format.
            assert Theorem.from_dict(json.loads(json.dumps(thm.to_dict()))) == thm
            seen += 1
    assert seen == len(project.proofs) >= 50


def test_positions_are_leandojo_positions(project: FixtureProject):
    tf = load(project, "Fixture.Algebra")
    text = tf.source.text
    lines = text.split("\n")
    for thm in tf.theorems("u", "c"):
        # start is 1-based line and column of `theorem`; end is just after the proof.
        assert lines[thm.start.line_nb - 1][thm.start.column_nb - 1 :].startswith("theorem ")
        last = thm.traced_tactics[-1].tactic.split("\n")[-1]
        end_line = lines[thm.end.line_nb - 1]
        assert end_line[: thm.end.column_nb - 1].endswith(last)


def test_premises_are_marked_with_their_provenance(project: FixtureProject, shared_data: Path):
    records = json.loads(
        (shared_data / "leandojo_b4/random_test_records_1_100.json").read_text("utf-8")
    )
    provs = {
        p["full_name"]: p
        for r in records
        for t in r["traced_tactics"]
        for p in t["annotated_tactic"][1]
    }
    marked = []
    for module in ("Fixture.Algebra", "Fixture.NumberTheory", "Fixture.Other"):
        for thm in load(project, module).theorems("u", "c"):
            for tac in thm.traced_tactics:
                for a in tac.annotations:
                    real = provs[a.full_name]
                    assert a.def_path == expected_def_path(real["def_path"])
                    assert a.def_pos.to_list() == real["def_pos"]
                    assert a.def_end_pos.to_list() == real["def_end_pos"]
                    assert f"<a>{a.full_name.rsplit('.', 1)[-1]}</a>" in tac.annotated_tactic
                    marked.append(a.full_name)
                if "\n" not in tac.tactic:  # the marks are the only difference
                    assert tac.plain_annotated_tactic == tac.tactic
    assert {"congr_arg", "rfl"} <= set(marked)
    # A declared name is never a premise of its own proof.
    assert not any(name in project.proofs for name in marked)


def test_sorry_and_term_mode(project: FixtureProject):
    tf = load(project, "Fixture.Putnam")
    [thm] = tf.theorems("u", "c")
    assert thm.full_name == "putnam_1962_a5"
    assert thm.traced_tactics == [] and thm.theorem_statement is None and thm.has_statement_field
    assert [d.name for d in tf.sorry_declarations()] == [
        "putnam_1962_a5_solution",
        "putnam_1962_a5",
    ]
    # Without Lean's warning the sorry token in the source still counts.
    data = copy.deepcopy(project.traces["Fixture.Putnam"])
    data["messages"] = []
    assert len(load(project, "Fixture.Putnam", data).sorry_declarations()) == 2
    assert load(project, "Fixture.Algebra").sorry_declarations() == []


def test_corpus_entry(project: FixtureProject):
    pf = load(project, "Fixture.Putnam").premise_file()
    assert pf.path == "Fixture/Putnam.lean"
    assert pf.imports == [".lake/packages/mathlib/Mathlib.lean"]
    abbrev, theorem = pf.premises
    assert abbrev.full_name == "putnam_1962_a5_solution"
    assert abbrev.code == "abbrev putnam_1962_a5_solution : ℕ → ℕ := sorry"
    assert abbrev.kind == "commanddeclaration"
    assert (abbrev.start, abbrev.end) == (Pos(3, 1), Pos(3, 48))
    # Theorems stop before the proof; the doc comment is not code.
    assert theorem.code.startswith("theorem putnam_1962_a5\n: ∀ n ≥ 2")
    assert not theorem.code.endswith(":=") and "sorry" not in theorem.code
    assert "Evaluate" not in theorem.code
    nt = load(project, "Fixture.NumberTheory").premise_file()
    assert nt.imports == [".lake/packages/mathlib/Mathlib.lean", "Fixture/Algebra.lean"]
    assert load(project, "Fixture.NumberTheory").premise_file(
        lambda p: not p.startswith(".lake")
    ).imports == ["Fixture/Algebra.lean"]


def _to_byte_offsets(data: Any, source: SourceText) -> Any:
    """The same trace with positions as UTF-8 byte offsets, alternating the two encodings older
    tracers used (a number, ``{"byteIdx": n}``)."""
    flip = [False]

    def conv(value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"line", "column"}:
            index = source.index((value["line"], value["column"]))
            offset = len(source.text[:index].encode("utf-8"))
            flip[0] = not flip[0]
            return offset if flip[0] else {"byteIdx": offset}
        if isinstance(value, dict):
            return {k: (v if k == "module_files" else conv(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [conv(v) for v in value]
        return value

    out = conv(data)
    # Definition sites are in other files: keep them as line/column.
    for p, orig in zip(out["premises"], data["premises"], strict=True):
        for k in ("def_start", "def_end"):
            if k in orig:
                p[k] = orig[k]
    return out


def test_byte_offset_positions_give_the_same_result(project: FixtureProject):
    tf = load(project, "Fixture.Algebra")
    data = _to_byte_offsets(project.traces["Fixture.Algebra"], tf.source)
    assert isinstance(data["tactics"][0]["start"], (int, dict))
    other = load(project, "Fixture.Algebra", data)
    assert other.theorems("u", "c") == tf.theorems("u", "c")
    assert other.premise_file() == tf.premise_file()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="something"), "schema"),
        (lambda d: d.update(schema_version=99), "schema_version"),
        (lambda d: d["tactics"][3].pop("state_before"), r"tactics\[3\]\.state_before: missing"),
        (
            lambda d: d["tactics"][0].update(state_after=7),
            r"tactics\[0\]\.state_after: expected str",
        ),
        (lambda d: d["declarations"][1].update(start={"line": 0, "column": 0}), "bad position"),
        (lambda d: d["premises"][0].update(end="(1, 2)"), r"premises\[0\]\.end"),
        (lambda d: d["tactics"][0].update(end={"line": 10_000, "column": 0}), "does not fit"),
        (lambda d: d.update(commands={}), "commands: expected a list"),
        (lambda d: d.update(imports=[1]), r"imports\[0\]"),
    ],
)
def test_schema_errors_name_the_field(project: FixtureProject, change: Any, message: str):
    data = copy.deepcopy(project.traces["Fixture.Algebra"])
    change(data)
    with pytest.raises(TraceFormatError, match=message) as info:
        load(project, "Fixture.Algebra", data)
    assert "Fixture/Algebra.lean" in str(info.value)


def test_not_an_object():
    with pytest.raises(TraceFormatError, match="expected a JSON object"):
        TracedFile.from_json([], "", "A.lean")


# ------------------------------------------------------------------ LeanDojo Benchmark 4, exactly


def _b4_case(record: dict[str, Any], tac: dict[str, Any], root: Path, prefix: Path):
    """A one-theorem file holding a real B4 tactic, placed at the column LeanDojo dedented it by,
    with the premise uses where B4's marks are; and the trace the extractor would write."""
    marked, provenances = tac["annotated_tactic"]
    raw = re.sub(r"</?a>", "", marked)
    column = 2
    if "\n" in raw:
        a, b = raw.split("\n")[1], tac["tactic"].split("\n")[1]
        column = (len(a) - len(a.lstrip(" "))) - (len(b) - len(b.lstrip(" ")))
    head = "theorem t : True := by\n" + " " * column
    source = head + raw + "\n"
    src = SourceText(source)
    start = len(head)

    def pos(i: int) -> dict[str, int]:
        line, col = src.position(i)
        return {"line": line, "column": col}

    premises, module_files = [], {}
    plain_at = 0
    for m, p in zip(re.finditer(r"<a>(.*?)</a>", marked), provenances, strict=True):
        s = m.start() - 7 * (len(premises))  # each earlier mark added "<a></a>"
        plain_at = s
        module = module_of(p["def_path"])
        rel = module.replace(".", "/") + ".olean"
        if p["def_path"].startswith(".lake/packages/lean4/"):
            module_files[module] = str(prefix / "lib/lean" / rel)
        elif p["def_path"].startswith(".lake/packages/"):
            pkg = Path(p["def_path"]).parts[2]
            module_files[module] = str(root / ".lake/packages" / pkg / ".lake/build/lib/lean" / rel)
        else:
            module_files[module] = str(root / ".lake/build/lib/lean" / rel)
        premises.append(
            {
                "name": p["full_name"],
                "module": module,
                "start": pos(start + plain_at),
                "end": pos(start + plain_at + len(m.group(1))),
                "def_start": {"line": p["def_pos"][0], "column": p["def_pos"][1] - 1},
                "def_end": {"line": p["def_end_pos"][0], "column": p["def_end_pos"][1] - 1},
            }
        )
    end = start + len(raw)
    data = {
        "schema": "lean_dojo_v2.trace",
        "schema_version": 1,
        "module": "T",
        "imports": [],
        "module_files": module_files,
        "commands": [
            {
                "kind": "Lean.Parser.Command.declaration",
                "start": pos(0),
                "end": pos(end),
                "value_starts": [pos(source.index(":= by"))],
            }
        ],
        "declarations": [
            {
                "name": "t",
                "kind": "theorem",
                "start": pos(0),
                "end": pos(end),
                "name_start": pos(8),
                "name_end": pos(9),
            }
        ],
        "tactics": [
            {
                "start": pos(start),
                "end": pos(end),
                "state_before": tac["state_before"],
                "state_after": tac["state_after"],
            }
        ],
        "premises": premises,
        "messages": [],
    }
    return source, data


def test_reproduces_leandojo_benchmark_tactics_exactly(b4_records_path: Path, tmp_path: Path):
    """Every tactic of the real B4 records: the tactic text (dedented continuation lines), the
    marked text and the provenances come out exactly as LeanDojo wrote them."""
    records = json.loads(b4_records_path.read_text("utf-8"))
    root, prefix = tmp_path / "mathlib4", tmp_path / "toolchain"
    root.mkdir()
    layout = ProjectLayout(root, prefix)
    checked = with_marks = multi = 0
    for record in records:
        for tac in record["traced_tactics"]:
            if tac["state_before"] == tac["state_after"]:
                continue
            source, data = _b4_case(record, tac, root, prefix)
            tf = TracedFile.from_json(data, source, "T.lean", layout.resolve)
            [got] = tf.theorems(record["url"], record["commit"])[0].traced_tactics
            assert got.to_dict() == tac, tac["tactic"]
            checked += 1
            with_marks += bool(tac["annotated_tactic"][1])
            multi += "\n" in tac["tactic"]
    assert checked >= 150 and with_marks >= 80 and multi >= 15


# --------------------------------------------------------------------------------- helpers


def test_dedent_continuation():
    assert dedent_continuation("a\n    b\n  c\nd", 2) == "a\n  b\nc\nd"
    assert dedent_continuation("single", 4) == "single"


def test_remove_comments():
    text = "/-- doc -/\ntheorem x -- note\n  (h : p) : p"
    assert remove_comments(text) == "theorem x\n  (h : p) : p"


def test_source_positions_count_code_points():
    src = SourceText("a := 𝔽\nβ γ")
    assert src.index((2, 2)) == len("a := 𝔽\nβ ")
    assert src.position(src.index((2, 2))) == (2, 2)
    assert src.from_bytes(len("a := 𝔽\nβ ".encode())) == (2, 2)
    assert src.slice((1, 5), (1, 6)) == "𝔽"
