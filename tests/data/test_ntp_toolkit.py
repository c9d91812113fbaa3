"""Reading ntp-toolkit output (``lean_dojo_v2.data.ntp_toolkit``) on the fixture converted from real
Lean data (``tests/data/ntp_toolkit``, see its SOURCE) and on broken copies of it."""

from __future__ import annotations

import json
import logging
import pickle
import shutil
from pathlib import Path

import pytest

from lean_dojo_v2.data import Corpus
from lean_dojo_v2.data.ntp_toolkit import (
    NtpToolkitFormatError,
    NtpToolkitLayoutError,
    declaration_text,
    hammer_filter_reason,
    parse_recommendation,
    read_ntp_toolkit,
    split_modules,
)
from lean_dojo_v2.errors import DataFormatError, LeanDojoError

FIXTURE = Path(__file__).resolve().parent / "ntp_toolkit" / "mini"
DEBUG_FILE = "TrainingDataWithPremises/Batteries.Data.BinomialHeap.Basic.jsonl"


@pytest.fixture(scope="module")
def data():
    return read_ntp_toolkit(FIXTURE)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "ntp"
    shutil.copytree(FIXTURE, dst)
    return dst


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines()


def test_fixture_reads_into_corpus_with_one_file_per_module(data) -> None:
    assert isinstance(data.corpus, Corpus)
    assert data.revision == "29dcec074de168ac2bf835a77ef68bbe069194c5"
    modules = {p.name[: -len(".jsonl")] for p in (FIXTURE / "Declarations").iterdir()}
    assert set(data.modules) == modules
    assert data.report.modules == len(modules)
    # one premise per declaration row, less the blacklisted and LeanHammer-filtered ones
    rows = sum(
        1
        for p in (FIXTURE / "Declarations").iterdir()
        for line in _lines(p)
        if line.startswith("{")
    )
    assert data.report.declarations == rows
    assert len(data.corpus) == (
        rows
        - data.report.blacklisted_declarations
        - sum(data.report.filtered_declarations.values())
    )
    # imports come from Imports/ (transitive), restricted to modules of the corpus
    imports = [
        json.loads(x)["name"] for x in _lines(FIXTURE / "Imports/Mathlib.Order.Filter.Ring.jsonl")
    ]
    assert imports and set(imports) <= set(data.modules)
    assert data.corpus.imports_of("Mathlib.Order.Filter.Ring") >= set(imports)


def test_premise_text_is_signature_when_present_else_name(data) -> None:
    rows = [json.loads(x) for p in sorted((FIXTURE / "Declarations").iterdir()) for x in _lines(p)]
    rows = [r for r in rows if r["name"] not in data.blacklist]
    signed = [r for r in rows if "signature" in r]
    bare = [r for r in rows if "signature" not in r and "kind" not in r]
    assert signed and bare
    for r in signed:
        premise = data.corpus.get_premise(r["name"])
        assert premise.code == r["signature"] and premise.kind == r["kind"]
    for r in bare:  # LeanDojo-converted rows: no statement known, the name stands in
        premise = data.corpus.get_premise(r["name"])
        assert premise.code == r["name"] and premise.kind == "unknown"


def test_declaration_positions_become_premise_starts(data) -> None:
    row = json.loads(_lines(FIXTURE / "Declarations/Mathlib.Order.Filter.Ring.jsonl")[0])
    premise = data.corpus.get_premise(row["name"])
    assert (premise.start.line_nb, premise.start.column_nb) == (row["line"], row["column"])


def test_modules_without_positions_are_ordered_by_row(data) -> None:
    module = "SciLean.Core.Rand.Rand"
    assert module in data.report.modules_without_positions
    names = [json.loads(x)["name"] for x in _lines(FIXTURE / "Declarations" / f"{module}.jsonl")]
    premises = data.corpus.get_file(module).premises
    assert [p.full_name for p in premises] == [n for n in names if n not in data.blacklist]
    assert [p.start.line_nb for p in premises] == sorted(p.start.line_nb for p in premises)


def test_training_states_carry_state_text_and_declaration_premises(data) -> None:
    rows = [
        json.loads(x)
        for p in sorted((FIXTURE / "TrainingDataWithPremises").iterdir())
        for x in _lines(p)
        if x.startswith("{")
    ]
    assert len(data.states) == len(rows) == data.report.states
    first = next(s for s in data.states if s.module == "Batteries.Data.BinomialHeap.Basic")
    row = json.loads(_lines(FIXTURE / DEBUG_FILE)[2])
    assert first.state == row["state"] and first.decl_name == row["declName"]
    assert first.next_tactic == row["nextTactic"]
    decl = [parse_recommendation(e)[0] for e in row["declHammerRecommendation"]]
    assert list(first.decl_premises) == decl
    assert set(first.premises) == {n for n in decl if n not in data.blacklist}
    assert first.state_name == "Batteries.Data.BinomialHeap.Basic#0"
    assert first.source_line == 3  # two debug lines come first


def test_non_json_debug_lines_are_skipped_counted_and_named(caplog) -> None:
    assert _lines(FIXTURE / DEBUG_FILE)[0].startswith("Processing tactic ")
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.data.ntp_toolkit"):
        d = read_ntp_toolkit(FIXTURE)
    assert d.report.non_json_lines == 2
    assert d.report.non_json_examples == [f"{FIXTURE / DEBUG_FILE}:1", f"{FIXTURE / DEBUG_FILE}:2"]
    warning = [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()]
    assert len(warning) == 1 and DEBUG_FILE in warning[0] and "line 1, 2" in warning[0]
    # the states after the debug lines are all read
    assert (
        sum(s.module == "Batteries.Data.BinomialHeap.Basic" for s in d.states)
        == len(_lines(FIXTURE / DEBUG_FILE)) - 2
    )


def test_json_line_missing_declname_raises_error_naming_file_and_line(copy: Path) -> None:
    f = copy / DEBUG_FILE
    lines = _lines(f)
    row = json.loads(lines[3])
    del row["declName"]
    lines[3] = json.dumps(row, ensure_ascii=False)
    f.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(NtpToolkitFormatError) as err:
        read_ntp_toolkit(copy)
    assert err.value.line == 4 and err.value.field == "declName"
    assert str(f) in str(err.value) and "line 4" in str(err.value)
    assert isinstance(err.value, DataFormatError)


def test_declaration_line_missing_name_raises_error_naming_file_and_line(copy: Path) -> None:
    f = copy / "Declarations/Mathlib.Order.Filter.Ring.jsonl"
    lines = _lines(f)
    lines.append(json.dumps({"kind": "theorem", "line": 1, "column": 0}))
    f.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(NtpToolkitFormatError, match=rf"line {len(lines)}, field 'name'"):
        read_ntp_toolkit(copy)


def test_field_of_wrong_type_raises_error(copy: Path) -> None:
    f = copy / "Imports/Mathlib.Order.Filter.Ring.jsonl"
    f.write_text('{"name": 3, "isDirect": true}\n', "utf-8")
    with pytest.raises(NtpToolkitFormatError, match="line 1, field 'name': expected str, got int"):
        read_ntp_toolkit(copy)


def test_unparseable_recommendation_raises_error(copy: Path) -> None:
    f = copy / DEBUG_FILE
    lines = _lines(f)
    row = json.loads(lines[2])
    row["declHammerRecommendation"] = ["(Nat.add_comm, sideways)"]
    lines[2] = json.dumps(row, ensure_ascii=False)
    f.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(
        NtpToolkitFormatError, match=r"line 3, field 'declHammerRecommendation\[0\]'"
    ):
        read_ntp_toolkit(copy)


def test_parse_recommendation_forms() -> None:
    assert parse_recommendation("(Nat.add_comm, unmodified)") == ("Nat.add_comm", "unmodified")
    assert parse_recommendation("(Prod.mk.injEq, simpPreAndBackward)") == (
        "Prod.mk.injEq",
        "simpPreAndBackward",
    )
    assert parse_recommendation("Nat.add_comm") == ("Nat.add_comm", None)
    with pytest.raises(NtpToolkitFormatError):
        parse_recommendation(7)


def test_non_utf8_file_raises_error_naming_line(copy: Path) -> None:
    f = copy / "Imports/Mathlib.Order.Filter.Ring.jsonl"
    f.write_bytes(f.read_bytes() + b'{"name": "\xff"}\n')
    with pytest.raises(NtpToolkitFormatError, match="not UTF-8"):
        read_ntp_toolkit(copy)


def test_blacklisted_premises_are_left_out_of_corpus_and_states(data) -> None:
    blacklist = json.loads((FIXTURE / "HammerBlacklist.jsonl").read_text("utf-8"))[
        "hammerBlacklist"
    ]
    assert data.blacklist == frozenset(blacklist)
    used = {n for s in data.states for n in s.decl_premises}
    hit = used & data.blacklist
    assert {"Iff.mp", "Eq.symm", "rfl"} <= hit  # the real data uses blacklisted lemmas
    assert all(data.corpus.get_premise(n) is None for n in hit)
    assert all(not (set(s.premises) & data.blacklist) for s in data.states)
    assert data.report.blacklisted_declarations == len(hit)
    assert data.report.blacklisted_premise_uses == sum(
        len(set(s.decl_premises) & data.blacklist) for s in data.states
    )
    # without the filter they are premises like any other
    raw = read_ntp_toolkit(FIXTURE, use_blacklist=False)
    assert all(raw.corpus.get_premise(n) is not None for n in hit)
    assert raw.report.blacklisted_premise_uses == 0
    assert any(set(s.premises) & hit for s in raw.states)


def test_premise_not_in_declarations_is_dropped_and_counted(copy: Path, caplog) -> None:
    state = read_ntp_toolkit(copy).states[0]
    gone = state.premises[0]
    premise_file = next(
        p for p in (copy / "Declarations").iterdir() if f'"name":"{gone}"' in p.read_text("utf-8")
    )
    kept = [x for x in _lines(premise_file) if f'"name":"{gone}"' not in x]
    premise_file.write_text("".join(x + "\n" for x in kept), "utf-8")
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.data.ntp_toolkit"):
        d = read_ntp_toolkit(copy)
    uses = sum(gone in s.decl_premises for s in d.states)
    assert uses > 0
    assert d.report.unknown_premise_uses == uses
    assert d.report.unknown_premise_examples[0].startswith(f"{gone} (")
    assert all(gone not in s.premises for s in d.states)
    assert gone in d.states[0].dropped and d.states[0].premises == state.premises[1:]
    assert any("not in Declarations" in r.getMessage() for r in caplog.records)


def test_state_position_is_its_declaration_so_it_cannot_retrieve_itself(data) -> None:
    for s in data.states_with_premises():
        if s.decl_name in data.filtered:  # LeanHammer's filters left its declaration out
            continue
        own = data.corpus.get_premise(s.decl_name)
        assert own is not None and own.path == s.module
        assert s.pos == own.start
        names = {p.full_name for p in data.corpus.accessible_premises(s.module, s.pos)}
        assert s.decl_name not in names
        assert set(s.premises) <= names  # every ground-truth premise is accessible


def test_state_position_from_src_up_to_tactic_when_declaration_unknown(copy: Path) -> None:
    f = copy / DEBUG_FILE
    lines = _lines(f)
    row = json.loads(lines[2])
    row["declName"] = "Not.a.declaration"
    row["srcUpToTactic"] = "import Batteries\n\ntheorem t : True := by\n  "
    lines[2] = json.dumps(row, ensure_ascii=False)
    f.write_text("\n".join(lines) + "\n", "utf-8")
    s = read_ntp_toolkit(copy).states[0]
    assert (s.pos.line_nb, s.pos.column_nb) == (4, 2)


def test_imports_of_modules_without_declarations_are_dropped_and_counted(data) -> None:
    lines = _lines(FIXTURE / "Imports/SciLean.Core.Rand.Rand.jsonl")
    names = [json.loads(x)["name"] for x in lines]
    outside = [n for n in names if n not in data.modules]
    assert outside  # SciLean modules the fixture has no declarations for
    assert data.corpus.get_file("SciLean.Core.Rand.Rand").imports == sorted(
        n for n in names if n in data.modules
    )
    assert data.report.imports_dropped >= len(outside)


def test_states_of_a_module_without_declarations_get_no_premises(copy: Path) -> None:
    (copy / "Declarations/Batteries.Data.BinomialHeap.Basic.jsonl").unlink()
    (copy / "Imports/Batteries.Data.BinomialHeap.Basic.jsonl").unlink()
    d = read_ntp_toolkit(copy)
    lost = [s for s in d.states if s.module == "Batteries.Data.BinomialHeap.Basic"]
    assert lost and all(not s.premises and s.pos is None for s in lost)
    assert d.report.states_outside_corpus == len(lost)


@pytest.mark.parametrize(
    "remove",
    ["Declarations", "Imports", "TrainingDataWithPremises", "HammerBlacklist.jsonl", "revision"],
)
def test_missing_part_raises_layout_error_naming_dir_and_part(copy: Path, remove: str) -> None:
    target = copy / remove
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(NtpToolkitLayoutError) as err:
        read_ntp_toolkit(copy)
    assert err.value.missing == [remove]
    assert str(copy) in str(err.value) and remove in str(err.value)
    assert isinstance(err.value, LeanDojoError) and isinstance(err.value, FileNotFoundError)


def test_not_a_directory_raises_layout_error(tmp_path: Path) -> None:
    with pytest.raises(NtpToolkitLayoutError, match="missing Declarations"):
        read_ntp_toolkit(tmp_path / "nowhere")


def test_next_tactic_premise_source(data) -> None:
    d = read_ntp_toolkit(FIXTURE, premise_source="next_tactic")
    for s in d.states:
        assert set(s.premises) == {
            n for n in s.next_tactic_premises if n not in d.blacklist and n != s.decl_name
        }
    assert sum(map(len, (s.premises for s in d.states))) < sum(
        map(len, (s.premises for s in data.states))
    )


def test_errors_survive_pickling(copy: Path) -> None:
    err = NtpToolkitFormatError("missing required field", file="a.jsonl", line=3, field="name")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.line == 3
    layout = NtpToolkitLayoutError("dir", ["revision"])
    assert str(pickle.loads(pickle.dumps(layout))) == str(layout)


def test_split_modules_is_deterministic_disjoint_and_complete() -> None:
    modules = [f"M{i}" for i in range(40)]
    a = split_modules(modules, valid=0.1, test=0.1, seed=0)
    assert a == split_modules(list(reversed(modules)), valid=0.1, test=0.1, seed=0)
    assert (len(a.train), len(a.valid), len(a.test)) == (32, 4, 4)
    assert set(a.train) | set(a.valid) | set(a.test) == set(modules)
    assert not (
        set(a.train) & set(a.valid) or set(a.train) & set(a.test) or set(a.valid) & set(a.test)
    )
    assert split_modules(modules, seed=1) != a
    tiny = split_modules(["A", "B", "C"], valid=0.1, test=0.1)
    assert (len(tiny.train), len(tiny.valid), len(tiny.test)) == (1, 1, 1)
    with pytest.raises(ValueError):
        split_modules(modules, valid=0.6, test=0.5)


# --------------------------------------------------------------------------- LeanHammer's options


def test_hammer_filter_reason_follows_leanhammer_module_name_and_type_rules() -> None:
    assert (
        hammer_filter_reason("CancelDenoms.cancel_factors_lt", "Mathlib.Tactic.CancelDenoms.Core")
        == "module"
    )
    assert hammer_filter_reason("Aesop.BuiltinRules.not_intro", "Aesop.BuiltinRules") == "module"
    assert (
        hammer_filter_reason("Lean.Omega.LinearCombo.add_eval", "Init.Omega.LinearCombo") == "name"
    )
    assert hammer_filter_reason("Qq.Impl.x", "Mathlib.Foo") == "name"
    assert hammer_filter_reason("Foo.parser", "Mathlib.Foo", "Lean.ParserDescr") == "type"
    # components, not substrings: "Leaning" or "Tactics" are kept
    assert (
        hammer_filter_reason("Nat.add_comm", "Init.Data.Nat.Basic", "∀ (n m : ℕ), n + m = m + n")
        is None
    )
    assert hammer_filter_reason("Leaning.x", "Mathlib.Tactics2") is None


def test_default_filters_drop_tactic_module_declarations_and_no_filter_keeps_them(data) -> None:
    name = "CancelDenoms.cancel_factors_lt"  # real row of Mathlib.Tactic.CancelDenoms.Core
    assert data.corpus.get_premise(name) is None
    assert name in data.filtered
    assert data.report.filtered_declarations == {"module": 1}
    assert "Mathlib.Tactic.CancelDenoms.Core" in data.modules  # the module stays (empty)
    raw = read_ntp_toolkit(FIXTURE, use_blacklist=False, use_filters=False)
    assert raw.corpus.get_premise(name) is not None
    assert raw.report.filtered_declarations == {}
    assert len(raw.corpus) == len(data.corpus) + 1 + data.report.blacklisted_declarations


def test_filtered_premise_uses_are_dropped_from_states_and_counted(copy: Path) -> None:
    # move a real premise's declaration row into a Tactic module: the filter now drops it
    d0 = read_ntp_toolkit(copy)
    state = next(s for s in d0.states_with_premises() if s.module.startswith("Mathlib."))
    gone = state.premises[0]
    src = next(
        p for p in (copy / "Declarations").iterdir() if f'"name":"{gone}"' in p.read_text("utf-8")
    )
    rows = _lines(src)
    row = next(x for x in rows if f'"name":"{gone}"' in x)
    src.write_text("".join(x + "\n" for x in rows if x != row), "utf-8")
    moved = json.loads(row)
    moved["module"] = "Mathlib.Tactic.CancelDenoms.Core"
    tactic = copy / "Declarations/Mathlib.Tactic.CancelDenoms.Core.jsonl"
    tactic.write_text(tactic.read_text("utf-8") + json.dumps(moved, ensure_ascii=False) + "\n")
    d = read_ntp_toolkit(copy)
    uses = sum(gone in s.decl_premises for s in d.states)
    assert d.report.filtered_premise_uses == uses > 0
    assert d.report.unknown_premise_uses == 0
    assert all(gone not in s.premises for s in d.states)


def test_type_filter_uses_the_declaration_type(copy: Path) -> None:
    f = copy / "Declarations/Mathlib.Order.Basic.jsonl"
    rows = _lines(f)
    row = json.loads(rows[0])
    row["type"] = "Lean.ParserDescr"
    rows[0] = json.dumps(row, ensure_ascii=False)
    f.write_text("\n".join(rows) + "\n", "utf-8")
    d = read_ntp_toolkit(copy)
    assert d.report.filtered_declarations.get("type") == 1
    assert d.corpus.get_premise(row["name"]) is None


def test_mathlib_only_reads_only_mathlib_modules_and_counts_the_rest(data) -> None:
    d = read_ntp_toolkit(FIXTURE, mathlib_only=True)
    assert d.modules and all(m.startswith("Mathlib.") for m in d.modules)
    assert all(s.module.startswith("Mathlib.") for s in d.states)
    assert all(p.path.startswith("Mathlib.") for f in d.corpus.files for p in f.premises)
    others = [s for s in data.states if not s.module.startswith("Mathlib.")]
    assert others and d.report.non_mathlib_states == len(others)
    assert d.report.non_mathlib_declarations > 0
    # Mathlib proofs use Init/Batteries lemmas: those uses are dropped and counted, not unknown
    init_uses = sum(
        1
        for s in data.states
        if s.module.startswith("Mathlib.")
        for n in s.premises
        if not data.corpus.get_premise(n).path.startswith("Mathlib.")
    )
    assert init_uses > 0 and d.report.non_mathlib_premise_uses >= init_uses
    assert d.report.unknown_premise_uses == 0
    assert all(d.corpus.get_premise(n) is not None for s in d.states for n in s.premises)


def test_nameless_premise_text_leaves_out_the_name(copy: Path) -> None:
    # SciLean rows of the fixture carry Lean-printed signatures
    keep = "SciLean.Core.Rand.Rand"
    for part in ("Declarations", "Imports", "TrainingDataWithPremises"):
        for f in (copy / part).iterdir():
            if f.name != f"{keep}.jsonl":
                f.unlink()
    named = read_ntp_toolkit(copy)
    nameless = read_ntp_toolkit(copy, nameless=True)
    assert nameless.nameless and len(named.corpus) == len(nameless.corpus) > 0
    for p in named.corpus.files[0].premises:
        q = nameless.corpus.get_premise(p.full_name)
        assert p.full_name in p.code
        assert p.full_name not in q.code and q.code  # the name is gone, the statement stays
    mapped = nameless.corpus.get_premise("SciLean.Rand.map")
    assert mapped.code == (
        "def {X : Type} {Y : Type} (r : SciLean.Rand X) (f : X → Y) : SciLean.Rand Y"
    )


def test_nameless_from_kind_args_type_as_leanhammer() -> None:
    row = {
        "name": "Nat.add_comm",
        "kind": "theorem",
        "args": ["(n m : ℕ)"],
        "type": "n + m = m + n",
    }
    assert declaration_text(row) == "theorem Nat.add_comm (n m : ℕ) : n + m = m + n"
    assert declaration_text(row, nameless=True) == "theorem (n m : ℕ) : n + m = m + n"


def test_nameless_without_type_or_signature_raises_error_naming_file_and_line() -> None:
    with pytest.raises(NtpToolkitFormatError) as err:
        read_ntp_toolkit(FIXTURE, nameless=True)
    msg = str(err.value)
    assert "Declarations/" in msg and "line 1" in msg and "nameless" in msg
