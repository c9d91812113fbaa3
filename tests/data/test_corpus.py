"""The premise corpus: dependency order, transitive imports, accessible premises, provenance lookup.

Premise names, files and positions are real: they come from the tactic provenances (``def_path``,
``def_pos``, ``def_end_pos``) of LeanDojo Benchmark 4 records in ``shared/data/leandojo_b4``. The
import edges between those real files are made up for the tests (imports are structure, not Lean
text). The bundled sample's ``corpus.jsonl`` was built from the same provenances.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from lean_dojo_v2.data import Corpus, Pos, Premise, PremiseFile, Theorem, sample_dataset_path
from lean_dojo_v2.errors import CorpusError

PRELUDE = ".lake/packages/lean4/src/lean/Init/Prelude.lean"
CORE = ".lake/packages/lean4/src/lean/Init/Core.lean"
GROUP = "Mathlib/Algebra/Group/Defs.lean"
ASSOC = "Mathlib/Algebra/Associated.lean"
IDEAL = "Mathlib/RingTheory/Ideal/Basic.lean"
IMAGE = "Mathlib/Data/Set/Image.lean"

# Made-up imports between real files (a diamond: IDEAL reaches CORE directly and through GROUP),
# plus IMAGE, a side branch that nothing on the IDEAL chain imports.
IMPORTS = {
    PRELUDE: [],
    CORE: [PRELUDE],
    GROUP: [CORE],
    ASSOC: [GROUP],
    IDEAL: [ASSOC, CORE],
    IMAGE: [PRELUDE],
}


@pytest.fixture(scope="module")
def theorems(b4_records_path) -> list[Theorem]:
    """The 100 real records (``b4_records_path`` comes from tests/conftest.py: the bundled copy)."""
    records = json.loads(b4_records_path.read_text(encoding="utf-8"))
    return [Theorem.from_dict(r) for r in records]


@pytest.fixture(scope="module")
def provenances(theorems) -> list[dict]:
    """Every provenance of every tactic, as written in the records (``annotated_tactic[1]``)."""
    out = [
        p
        for t in theorems
        for tac in t.to_dict()["traced_tactics"]
        for p in tac["annotated_tactic"][1]
    ]
    assert len(out) > 150
    return out


@pytest.fixture(scope="module")
def real_premises(provenances) -> dict[str, list[Premise]]:
    """def_path -> the distinct premises defined there, from the provenances."""
    by_file: dict[str, dict[tuple[str, Pos], Premise]] = {}
    for p in provenances:
        start, end = Pos(*p["def_pos"]), Pos(*p["def_end_pos"])
        by_file.setdefault(p["def_path"], {})[(p["full_name"], start)] = Premise(
            p["def_path"], p["full_name"], "", start, end, "unknown"
        )
    for path in IMPORTS:
        assert len(by_file[path]) >= 4, path
    return {path: list(ps.values()) for path, ps in by_file.items()}


def make_files(real_premises, order) -> list[PremiseFile]:
    # Premises are listed latest first, so nothing relies on the corpus listing them by position.
    return [
        PremiseFile(
            path,
            list(IMPORTS[path]),
            sorted(real_premises[path], key=lambda p: p.start, reverse=True),
        )
        for path in order
    ]


@pytest.fixture()
def corpus(real_premises) -> Corpus:
    # importers before their imports: the opposite of dependency order
    return Corpus(make_files(real_premises, [IDEAL, IMAGE, ASSOC, GROUP, CORE, PRELUDE]))


@pytest.fixture(scope="module")
def sample_corpus() -> Corpus:
    return Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")


def keys(premises) -> list[tuple[str, str]]:
    return [(p.path, p.full_name) for p in premises]


def premises_of(real_premises, *paths) -> set[tuple[str, str]]:
    return {(p.path, p.full_name) for path in paths for p in real_premises[path]}


# --------------------------------------------------------------------------------- structure


def test_files_in_dependency_order(corpus):
    order = [f.path for f in corpus.files]
    assert sorted(order) == sorted(IMPORTS)
    seen: set[str] = set()
    for f in corpus.files:
        assert set(f.imports) <= seen, f"{f.path} comes before one of its imports"
        seen.add(f.path)
    # ties keep corpus order: after PRELUDE, IMAGE (listed 2nd) comes before CORE (listed 5th)
    assert order == [PRELUDE, IMAGE, CORE, GROUP, ASSOC, IDEAL]


def test_files_keeps_order_of_an_ordered_corpus(real_premises):
    order = [PRELUDE, CORE, IMAGE, GROUP, ASSOC, IDEAL]
    c = Corpus(make_files(real_premises, order))
    assert [f.path for f in c.files] == order


def test_len_contains_and_lookup(corpus, real_premises):
    assert len(corpus) == sum(len(real_premises[p]) for p in IMPORTS)
    assert IDEAL in corpus and "Mathlib/Nope.lean" not in corpus
    assert corpus.get_file(GROUP).path == GROUP
    assert Counter(keys(corpus.premises)) == Counter(premises_of(real_premises, *IMPORTS))
    p = corpus.get_premise("mul_assoc")
    assert p is not None and p.path == GROUP and p.start == Pos(289, 9)
    assert corpus.get_premise("not_a_premise") is None


def test_imports_of_is_transitive(corpus):
    assert corpus.imports_of(PRELUDE) == frozenset()
    assert corpus.imports_of(CORE) == {PRELUDE}
    assert corpus.imports_of(GROUP) == {CORE, PRELUDE}
    assert corpus.imports_of(ASSOC) == {GROUP, CORE, PRELUDE}
    assert corpus.imports_of(IDEAL) == {ASSOC, GROUP, CORE, PRELUDE}
    assert corpus.imports_of(IMAGE) == {PRELUDE}
    assert corpus.imports_of(IDEAL) == corpus.imports_of(IDEAL)  # cached answer is the same


# ---------------------------------------------------------------------------------- accessible


def test_accessible_includes_imports_and_only_earlier_own_premises(corpus, real_premises):
    # Ideal (41, 8), Ideal.span (115, 5), Ideal.span_singleton_eq_bot (199, 9), ... in IDEAL
    got = corpus.accessible_premises(IDEAL, Pos(199, 9))
    assert len(got) == len(set(keys(got)))  # no premise twice, despite the diamond
    imported = premises_of(real_premises, ASSOC, GROUP, CORE, PRELUDE)
    own = set(keys(got)) - imported
    assert imported <= set(keys(got))
    # a premise starting exactly at pos is not before it
    assert own == {(IDEAL, "Ideal"), (IDEAL, "Ideal.span")}
    assert not premises_of(real_premises, IMAGE) & set(keys(got))
    for p in got:
        assert p.path != IDEAL or p.start < Pos(199, 9)


def test_accessible_own_premises_by_position(corpus, real_premises):
    own = sorted(real_premises[IDEAL], key=lambda p: p.start)
    imported = premises_of(real_premises, ASSOC, GROUP, CORE, PRELUDE)

    def own_names(pos):
        return [
            name for path, name in keys(corpus.accessible_premises(IDEAL, pos)) if path == IDEAL
        ]

    assert own_names(Pos(1, 1)) == []
    assert own_names(Pos(41, 8)) == []
    assert own_names(Pos(41, 9)) == ["Ideal"]  # inside Ideal's name: it has started
    assert own_names(Pos(115, 7)) == ["Ideal", "Ideal.span"]
    assert own_names(Pos(100_000, 1)) == [p.full_name for p in own]
    assert own_names(None) == [p.full_name for p in own]
    for pos in (Pos(1, 1), None):
        assert imported <= set(keys(corpus.accessible_premises(IDEAL, pos)))


def test_accessible_excludes_files_not_imported(corpus, real_premises):
    # CORE is imported by GROUP, ASSOC and IDEAL, but imports none of them
    got = set(keys(corpus.accessible_premises(CORE)))
    assert got == premises_of(real_premises, CORE, PRELUDE)
    got = set(keys(corpus.accessible_premises(IMAGE, None)))
    assert got == premises_of(real_premises, IMAGE, PRELUDE)
    assert set(keys(corpus.accessible_premises(PRELUDE, Pos(300, 1)))) == {(PRELUDE, "rfl")}


def test_accessible_on_the_sample_corpus(sample_corpus, real_premises):
    # Init/Prelude.lean imports nothing: a file sees only its own earlier premises
    got = sample_corpus.accessible_premises(PRELUDE, Pos(587, 3))
    assert keys(got) == [(PRELUDE, "rfl"), (PRELUDE, "Eq.symm"), (PRELUDE, "Eq.trans")]
    assert set(keys(sample_corpus.accessible_premises(PRELUDE))) == premises_of(
        real_premises, PRELUDE
    )


# ------------------------------------------------------------------------------------- locate


def test_sample_corpus_matches_the_records(sample_corpus, real_premises):
    lines = (sample_dataset_path() / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    # the sample is written in dependency order: reading it back keeps the file's own order
    assert [f.path for f in sample_corpus.files] == [json.loads(line)["path"] for line in lines]
    # every premise file, plus the theorem files that define no recorded premise (no premises)
    with_premises = {f.path for f in sample_corpus.files if f.premises}
    assert with_premises == set(real_premises)
    assert len(sample_corpus) == sum(len(ps) for ps in real_premises.values())


def test_locate_every_real_provenance(sample_corpus, provenances):
    for p in provenances:
        found = sample_corpus.locate_premise(p["def_path"], Pos(*p["def_pos"]))
        assert found is not None, p
        assert (found.path, found.full_name) == (p["def_path"], p["full_name"])
        assert found.start.to_list() == p["def_pos"] and found.end.to_list() == p["def_end_pos"]


def test_locate_strictly_inside_a_premise(sample_corpus, corpus, provenances):
    checked = 0
    for p in provenances:
        (line, col), (end_line, end_col) = p["def_pos"], p["def_end_pos"]
        if line != end_line or end_col - col < 2:
            continue
        for c in (corpus, sample_corpus):
            if p["def_path"] not in c:
                continue
            for inside in range(col + 1, end_col):
                found = c.locate_premise(p["def_path"], Pos(line, inside))
                assert found is not None and found.full_name == p["full_name"], (p, inside)
                checked += 1
    assert checked > 500


def test_locate_unknown_file_or_position(sample_corpus, corpus):
    for c in (sample_corpus, corpus):
        assert c.locate_premise("Mathlib/Nope.lean", Pos(294, 22)) is None
        assert c.locate_premise(PRELUDE, Pos(1, 1)) is None  # before the first premise
        assert c.locate_premise(PRELUDE, Pos(294, 21)) is None  # just before rfl (294, 22)
        assert c.locate_premise(PRELUDE, Pos(300, 1)) is None  # between rfl and Eq.symm
        assert c.locate_premise(PRELUDE, Pos(323, 17)) is None  # after Eq.symm (323, 9)-(323, 16)
        assert c.locate_premise(PRELUDE, Pos(100_000, 1)) is None  # after the last premise
    # a real position in the wrong file
    assert corpus.locate_premise(CORE, Pos(294, 22)) is None


# ------------------------------------------------------------------------------------- errors


def test_unknown_import(real_premises):
    files = make_files(real_premises, [PRELUDE, CORE])
    files[1].imports.append("Mathlib/Algebra/Nope.lean")
    with pytest.raises(CorpusError, match="Nope"):
        Corpus(files)
    # a file that imports one that is left out of the corpus
    with pytest.raises(CorpusError):
        Corpus(make_files(real_premises, [CORE, GROUP]))


def test_import_cycle(real_premises):
    files = make_files(real_premises, [PRELUDE, CORE, GROUP])
    files[0].imports.append(GROUP)  # PRELUDE -> GROUP -> CORE -> PRELUDE
    with pytest.raises(CorpusError, match="cycle"):
        Corpus(files)
    files = make_files(real_premises, [PRELUDE])
    files[0].imports.append(PRELUDE)  # a file importing itself
    with pytest.raises(CorpusError):
        Corpus(files)


def test_duplicate_file(real_premises):
    files = make_files(real_premises, [PRELUDE, CORE])
    files.append(PremiseFile(CORE, [], []))
    with pytest.raises(CorpusError, match="twice"):
        Corpus(files)


def test_unknown_file_lookups(corpus):
    for call in (
        lambda: corpus.get_file("Mathlib/Nope.lean"),
        lambda: corpus.imports_of("Mathlib/Nope.lean"),
        lambda: corpus.accessible_premises("Mathlib/Nope.lean"),
        lambda: corpus.accessible_premises("Mathlib/Nope.lean", Pos(1, 1)),
    ):
        with pytest.raises(CorpusError):
            call()


def test_from_jsonl_round_trip(tmp_path, corpus):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(f.to_dict()) + "\n" for f in corpus.files))
    again = Corpus.from_jsonl(path)
    assert [f.path for f in again.files] == [f.path for f in corpus.files]
    assert again.imports_of(IDEAL) == corpus.imports_of(IDEAL)
    assert keys(again.accessible_premises(IDEAL, Pos(199, 9))) == keys(
        corpus.accessible_premises(IDEAL, Pos(199, 9))
    )
