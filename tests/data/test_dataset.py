"""Dataset directory reader/writer: LeanDojo layout, byte compatibility, atomicity, bad input."""

from __future__ import annotations

import json
import os

import pytest

from lean_dojo_v2.data import (
    DatasetDir,
    SplitSpec,
    read_dataset,
    read_theorems,
    sample_dataset_path,
    write_dataset,
    write_split_dataset,
    write_theorems,
)
from lean_dojo_v2.data.model import Pos, Premise, PremiseFile
from lean_dojo_v2.errors import DataFormatError, DatasetNotFoundError


@pytest.fixture(scope="module")
def theorems(b4_records_path):
    return read_theorems(b4_records_path)


def _corpus_from_provenance(theorems):
    files: dict[str, dict] = {}
    for t in theorems:
        for a in t.annotations:
            files.setdefault(a.def_path, {})[(a.full_name, a.def_pos)] = Premise(
                a.def_path, a.full_name, "", a.def_pos, a.def_end_pos, "unknown"
            )
    paths = sorted(files)
    # A chain of imports (structure only) so dependency order is exercised: each file imports the
    # next one in sorted order, so the writer must reverse the sorted order.
    return [
        PremiseFile(p, [paths[i + 1]] if i + 1 < len(paths) else [], list(files[p].values()))
        for i, p in enumerate(paths)
    ]


def test_split_file_write_is_byte_identical(tmp_path, theorems, b4_records_path):
    out = tmp_path / "test.json"
    assert write_theorems(out, theorems) == 100
    assert out.read_bytes() == b4_records_path.read_bytes()
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    cur = os.umask(0)
    os.umask(cur)
    return cur


def test_write_then_read_gives_equal_objects(tmp_path, theorems):
    corpus = _corpus_from_provenance(theorems)
    traced = sorted({t.file_path for t in theorems})
    meta = {
        "dataset_name": "x",
        "from_repo": {"url": theorems[0].url, "commit": theorems[0].commit},
    }
    sizes = write_split_dataset(tmp_path / "ds", theorems, SplitSpec(10, 10), corpus, traced, meta)
    assert sizes["random"] == {"train": 80, "val": 10, "test": 10}
    ds = read_dataset(tmp_path / "ds")
    key = lambda t: t.key  # noqa: E731
    assert sorted(ds.theorems("random"), key=key) == sorted(theorems, key=key)
    assert sorted(ds.theorems("novel_premises"), key=key) == sorted(theorems, key=key)
    assert {f.path for f in ds.corpus} == {f.path for f in corpus}
    assert sorted(ds.corpus, key=lambda f: f.path) == sorted(corpus, key=lambda f: f.path)
    assert ds.traced_files == traced
    assert ds.metadata == meta
    # corpus.jsonl is in dependency order: every import appears on an earlier line.
    seen: set[str] = set()
    for line in (tmp_path / "ds" / "corpus.jsonl").read_text().splitlines():
        rec = json.loads(line)
        assert all(i in seen for i in rec["imports"])
        seen.add(rec["path"])
        assert line == json.dumps(rec)
    assert (tmp_path / "ds" / "traced_files.jsonl").read_text() == "".join(
        json.dumps({"traced_file_path": p}) + "\n" for p in traced
    )
    assert (tmp_path / "ds" / "metadata.json").read_text() == json.dumps(meta)
    for strategy in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            raw = (tmp_path / "ds" / strategy / f"{split}.json").read_text()
            assert raw == json.dumps(json.loads(raw)), "LeanDojo's json.dumps serialisation"


def test_rewrite_replaces_whole_directory(tmp_path, theorems):
    write_split_dataset(tmp_path / "ds", theorems, SplitSpec(10, 10))
    write_split_dataset(tmp_path / "ds", theorems[:50], SplitSpec(5, 5))
    assert len(list(DatasetDir(tmp_path / "ds").all_theorems())) == 50
    assert [p.name for p in tmp_path.iterdir()] == ["ds"], "no temp dirs left behind"


def test_failed_write_leaves_old_dataset_untouched(tmp_path, theorems):
    write_split_dataset(tmp_path / "ds", theorems, SplitSpec(10, 10))
    before = {p: p.read_bytes() for p in (tmp_path / "ds").rglob("*") if p.is_file()}

    def exploding():
        yield from theorems[:5]
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_dataset(tmp_path / "ds", {"random": {"train": exploding()}})
    after = {p: p.read_bytes() for p in (tmp_path / "ds").rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_failed_split_file_write_keeps_old_file(tmp_path, theorems):
    out = tmp_path / "train.json"
    write_theorems(out, theorems[:3])
    old = out.read_bytes()

    # The third item is not a theorem: serialising it fails half-way through the file.
    with pytest.raises(AttributeError):
        write_theorems(out, [*theorems[:2], object()])  # type: ignore[list-item]
    assert out.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["train.json"]


def test_malformed_record_error_names_file_record_and_field(tmp_path, b4_records_path):
    records = json.loads(b4_records_path.read_text())
    idx = next(i for i, r in enumerate(records) if r["traced_tactics"])
    del records[idx]["traced_tactics"][0]["state_before"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(DataFormatError) as info:
        read_theorems(bad)
    err = info.value
    assert err.file == str(bad) and err.record == idx
    assert err.field == "traced_tactics[0].state_before"
    assert str(bad) in str(err) and f"record {idx}" in str(err) and "state_before" in str(err)


def test_broken_json_and_wrong_shapes(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('[{"url": "a",')
    with pytest.raises(DataFormatError, match="invalid JSON at line 1"):
        read_theorems(p)
    p.write_text('{"url": "a"}')
    with pytest.raises(DataFormatError, match="JSON list"):
        read_theorems(p)
    p.write_bytes(b"\xff\xfe[]")
    with pytest.raises(DataFormatError, match="UTF-8"):
        read_theorems(p)
    with pytest.raises(DatasetNotFoundError):
        read_theorems(tmp_path / "missing.json")
    with pytest.raises(DatasetNotFoundError):
        DatasetDir(tmp_path)


def test_broken_corpus_line_names_line(tmp_path, theorems):
    write_split_dataset(
        tmp_path / "ds", theorems, SplitSpec(10, 10), _corpus_from_provenance(theorems)
    )
    corpus = tmp_path / "ds" / "corpus.jsonl"
    lines = corpus.read_text().splitlines()
    rec = json.loads(lines[2])
    rec["premises"][0]["start"] = [1]
    lines[2] = json.dumps(rec)
    corpus.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as info:
        list(DatasetDir(tmp_path / "ds").corpus_files())
    assert info.value.record == 2 and info.value.field == "premises[0].start"


def test_bundled_sample_is_real_and_complete(b4_records_path):
    path = sample_dataset_path()
    ds = read_dataset(path)
    originals = read_theorems(b4_records_path)
    key = lambda t: t.key  # noqa: E731
    assert sorted(ds.theorems("random"), key=key) == sorted(originals, key=key)
    assert (path / "PROVENANCE.md").read_text().count("CC BY 2.0") >= 1
    assert ds.metadata["from_repo"]["commit"].startswith("29dcec07")
    corpus = ds.get_corpus()
    for thm in originals:
        for a in thm.annotations:
            assert corpus.locate_premise(a.def_path, a.def_pos).full_name == a.full_name
    assert Pos(1, 1) < Pos(1, 2)
