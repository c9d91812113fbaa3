"""Nothing is lost or silently skipped: incomplete datasets, duplicated theorems, unreadable input.

Uses the bundled real sample (``sample_dataset_path()``), copied into ``tmp_path`` before damage.
"""

from __future__ import annotations

import json
import pickle
import shutil

import pytest

from lean_dojo_v2.data import (
    DatasetDir,
    SplitSpec,
    load_theorems,
    read_dataset,
    read_theorems,
    sample_dataset_path,
    split_theorems,
    stats_of_path,
    write_dataset,
    write_split_dataset,
)
from lean_dojo_v2.data.corpus import theorem_files_missing_from_corpus
from lean_dojo_v2.data.dataset import missing_dataset_parts, require_complete_dataset
from lean_dojo_v2.errors import (
    DataFormatError,
    DatasetNotFoundError,
    DuplicateTheoremError,
    IncompleteDatasetError,
    LeanDojoError,
    OutputExistsError,
)


@pytest.fixture
def sample_copy(tmp_path):
    dst = tmp_path / "ds"
    shutil.copytree(sample_dataset_path(), dst)
    return dst


def test_missing_dataset_parts_names_absent_split_and_corpus(sample_copy):
    assert missing_dataset_parts(sample_copy) == []
    require_complete_dataset(sample_copy)
    (sample_copy / "random" / "val.json").unlink()
    (sample_copy / "corpus.jsonl").unlink()
    assert missing_dataset_parts(sample_copy) == ["random/val.json", "corpus.jsonl"]
    with pytest.raises(IncompleteDatasetError) as info:
        require_complete_dataset(sample_copy)
    err = info.value
    assert isinstance(err, LeanDojoError) and isinstance(err, FileNotFoundError)
    assert err.missing == ["random/val.json", "corpus.jsonl"]
    assert "random/val.json" in str(err) and "corpus.jsonl" in str(err) and "--partial" in str(err)
    require_complete_dataset(sample_copy, partial=True)
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_missing_dataset_parts_counts_a_directory_corpus_as_missing(sample_copy):
    (sample_copy / "corpus.jsonl").unlink()
    (sample_copy / "corpus.jsonl").mkdir()
    with pytest.raises(IncompleteDatasetError, match=r"corpus.jsonl \(not a file\)"):
        require_complete_dataset(sample_copy)
    with pytest.raises(DatasetNotFoundError):
        missing_dataset_parts(sample_copy / "nowhere")


def test_dataset_reader_refuses_dataset_missing_a_split_file(sample_copy):
    (sample_copy / "random" / "val.json").unlink()
    with pytest.raises(IncompleteDatasetError, match="random/val.json"):
        list(DatasetDir(sample_copy).all_theorems())
    with pytest.raises(IncompleteDatasetError, match="random/val.json"):
        read_dataset(sample_copy)
    partial = list(DatasetDir(sample_copy, partial=True).all_theorems())
    assert 0 < len(partial) < 100


def test_dataset_reader_refuses_dataset_missing_its_corpus(sample_copy):
    (sample_copy / "corpus.jsonl").unlink()
    with pytest.raises(IncompleteDatasetError, match="corpus.jsonl"):
        DatasetDir(sample_copy).load()
    assert DatasetDir(sample_copy, partial=True).load().corpus == []


def test_theorem_files_missing_from_corpus_lists_each_file_once():
    d = DatasetDir(sample_dataset_path())
    corpus = d.corpus()
    paths = [f.path for f in corpus.files]
    assert theorem_files_missing_from_corpus(["B.lean", "A.lean", "B.lean"], corpus) == [
        "A.lean",
        "B.lean",
    ]
    assert theorem_files_missing_from_corpus(["A.lean", paths[0]], [paths[0]]) == ["A.lean"]
    assert theorem_files_missing_from_corpus(["A.lean", paths[0]], corpus.files) == ["A.lean"]


# ------------------------------------------------------------------ the bundled sample is valid


def _raw_sample():
    """The sample's theorems and corpus as plain JSON (no library code)."""
    root = sample_dataset_path()
    theorems = [
        t
        for split in ("train", "val", "test")
        for t in json.loads((root / "random" / f"{split}.json").read_text("utf-8"))
    ]
    lines = (root / "corpus.jsonl").read_text("utf-8").splitlines()
    return theorems, [json.loads(line) for line in lines]


def test_sample_corpus_holds_every_theorem_file():
    theorems, corpus = _raw_sample()
    paths = [f["path"] for f in corpus]
    assert len(paths) == len(set(paths))
    assert {t["file_path"] for t in theorems} <= set(paths)
    # imports before importers, hence no cycle
    seen: set[str] = set()
    for f in corpus:
        assert set(f["imports"]) <= seen, f["path"]
        seen.add(f["path"])


def test_sample_every_recorded_premise_is_accessible_at_its_theorem():
    theorems, corpus = _raw_sample()
    imports = {f["path"]: f["imports"] for f in corpus}
    starts = {
        f["path"]: {(p["full_name"], tuple(p["start"])) for p in f["premises"]} for f in corpus
    }

    def reachable(path: str) -> set[str]:
        out, todo = set(), list(imports[path])
        while todo:
            p = todo.pop()
            if p not in out:
                out.add(p)
                todo.extend(imports[p])
        return out

    checked = 0
    for t in theorems:
        visible = reachable(t["file_path"])
        for tac in t["traced_tactics"]:
            for a in tac["annotated_tactic"][1]:
                where, pos = a["def_path"], tuple(a["def_pos"])
                assert (a["full_name"], pos) in starts[where], a
                if where == t["file_path"]:
                    assert pos < tuple(t["start"]), (t["full_name"], a["full_name"])
                else:
                    assert where in visible, (t["full_name"], a["full_name"], where)
                checked += 1
    assert checked == 262  # every premise use of the sample (its premise_uses count)


def test_sample_corpus_accessible_premises_work_for_every_theorem():
    d = DatasetDir(sample_dataset_path())
    corpus = d.corpus()
    for t in d.all_theorems():
        usable = {(p.path, p.full_name) for p in corpus.accessible_premises(t.file_path, t.start)}
        assert {(a.def_path, a.full_name) for a in t.annotations} <= usable
    paths = [t.file_path for t in d.all_theorems()]
    assert theorem_files_missing_from_corpus(paths, corpus) == []


# ------------------------------------------------------------------------ writing never loses


def test_write_dataset_refuses_foreign_directory_unless_forced(tmp_path):
    theorems = load_theorems(sample_dataset_path())
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    with pytest.raises(OutputExistsError, match="force"):
        write_split_dataset(out, theorems, SplitSpec(10, 10))
    with pytest.raises(OutputExistsError):
        write_dataset(out, {"random": {"train": theorems}})
    assert (out / "thesis.tex").read_text() == "x"
    write_split_dataset(out, theorems, SplitSpec(10, 10), force=True)
    assert not (out / "thesis.tex").exists()
    # a dataset this library wrote is replaced, as before
    write_split_dataset(out, theorems[:50], SplitSpec(5, 5))
    assert len(list(DatasetDir(out).all_theorems())) == 50


def test_write_dataset_never_overwrites_its_sources(sample_copy):
    theorems = load_theorems(sample_copy)
    before = (sample_copy / "corpus.jsonl").read_bytes()
    for target in (sample_copy, sample_copy / "random"):
        with pytest.raises(OutputExistsError, match="overlaps"):
            write_split_dataset(
                target, theorems, force=True, sources=[sample_copy / "random" / "train.json"]
            )
    assert (sample_copy / "corpus.jsonl").read_bytes() == before


# ------------------------------------------------------------------------ duplicated theorems


def test_read_theorems_rejects_duplicate_within_a_file(tmp_path):
    records = json.loads((sample_dataset_path() / "random" / "val.json").read_text())
    path = tmp_path / "x.json"
    path.write_text(json.dumps([*records, records[2]]))
    with pytest.raises(DuplicateTheoremError) as info:
        read_theorems(path)
    err = info.value
    assert isinstance(err, DataFormatError)
    assert err.file == str(path) and err.record == len(records)
    assert "record 2" in str(err) and records[2]["full_name"] in str(err)
    with pytest.raises(DuplicateTheoremError):
        load_theorems(path)


def test_same_theorem_in_val_and_test_is_a_duplicate(sample_copy):
    val = sample_copy / "novel_premises" / "val.json"
    test = sample_copy / "novel_premises" / "test.json"
    val_records = json.loads(val.read_text())
    test.write_text(json.dumps([*json.loads(test.read_text()), val_records[0]]))
    for read in (
        lambda: list(DatasetDir(sample_copy).all_theorems("novel_premises")),
        lambda: DatasetDir(sample_copy).load(),
        lambda: DatasetDir(sample_copy).strategy_splits("novel_premises"),
        lambda: load_theorems(sample_copy, "novel_premises"),
        lambda: stats_of_path(sample_copy, "novel_premises"),
    ):
        with pytest.raises(DuplicateTheoremError, match=str(val)):
            read()
    # each strategy holds every theorem once: random/ and novel_premises/ are not duplicates
    assert len(list(DatasetDir(sample_copy).all_theorems("random"))) == 100


def test_split_theorems_rejects_a_theorem_given_twice():
    theorems = load_theorems(sample_dataset_path())
    with pytest.raises(DuplicateTheoremError, match="also item 4"):
        split_theorems([*theorems, theorems[4]], SplitSpec(10, 10))


# ----------------------------------------------------------------------- unreadable input


def test_non_utf8_corpus_names_file_line_and_byte_offset(sample_copy):
    corpus = sample_copy / "corpus.jsonl"
    data = corpus.read_bytes()
    cut = data.index(b"\n") + 1
    corpus.write_bytes(data[:cut] + b'{"path": "caf\xe9"}\n' + data[cut:])
    with pytest.raises(DataFormatError) as info:
        list(DatasetDir(sample_copy).corpus_files())
    err = info.value
    assert err.file == str(corpus) and err.record == 1
    assert f"not UTF-8 text (invalid continuation byte at byte offset {cut + 13})" in str(err)


def test_corpus_that_is_a_directory_is_a_data_error(sample_copy):
    corpus = sample_copy / "corpus.jsonl"
    corpus.unlink()
    corpus.mkdir()
    with pytest.raises(DataFormatError, match="is a directory"):
        list(DatasetDir(sample_copy, partial=True).corpus_files())
    with pytest.raises(DataFormatError, match="is a directory"):
        read_theorems(sample_copy / "random")
