"""``export_merged_data``: exact round trip, dedup by newest version, splits, merged corpus."""

from __future__ import annotations

import json
from pathlib import Path

from lean_dojo_v2.data import (
    Corpus,
    DatasetDir,
    Pos,
    Premise,
    PremiseFile,
    SplitSpec,
    sample_dataset_path,
)
from lean_dojo_v2.database import DynamicDatabase

from .conftest import SAMPLE_URL, record_key, replicate

SPLITS = ("train", "val", "test")


def _all_records(path: Path, strategy: str = "random") -> list[dict]:
    return [t.to_dict() for t in DatasetDir(path).all_theorems(strategy)]


def test_round_trip_sample(db: DynamicDatabase, records: list[dict], tmp_path: Path) -> None:
    db.add_repository(sample_dataset_path())
    out = tmp_path / "out"
    result = db.export_merged_data(None, out)
    assert result["total_theorems"] == 100
    for strategy in ("random", "novel_premises"):
        got = _all_records(out, strategy)
        assert len(got) == 100
        assert sorted(got, key=record_key) == sorted(records, key=record_key)
    # Byte-level: every exported record is the input record's JSON text.
    texts = {json.dumps(r) for r in records}
    raw = (out / "random" / "train.json").read_text()
    assert raw.startswith("[") and all(json.dumps(r) in texts for r in json.loads(raw))
    src = sample_dataset_path()
    assert (out / "corpus.jsonl").read_bytes() == (src / "corpus.jsonl").read_bytes()
    assert (out / "traced_files.jsonl").read_bytes() == (src / "traced_files.jsonl").read_bytes()
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["from_repo"]["commit"] == "29dcec074de168ac2bf835a77ef68bbe069194c5"
    assert meta["total_theorems"] == 100 and meta["num_premises"] == 185
    assert meta["num_files_traced"] == 95 and meta["num_premise_files"] == 160
    assert meta["repositories"][0]["url"] == "https://github.com/leanprover-community/mathlib4"


def _premise_names(t) -> set[str]:
    return {a.full_name for tac in t.traced_tactics for a in tac.annotations}


def test_export_splits_partition_and_hold_their_promises(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    """Expectations derived from the records and the documented rules, not from the splitter."""
    db.add_repository(sample_dataset_path())
    out = tmp_path / "out"
    result = db.export_merged_data(None, out, spec=SplitSpec(10, 10))
    d = DatasetDir(out)
    expected = sorted(records, key=record_key)
    for strategy in ("random", "novel_premises"):
        by_split = {s: [t.to_dict() for t in d.theorems(strategy, s)] for s in SPLITS}
        # Counts are exact, the splits partition the records, each record written as stored.
        assert {s: len(v) for s, v in by_split.items()} == {"train": 80, "val": 10, "test": 10}
        assert result["splits"][strategy] == {"train": 80, "val": 10, "test": 10}
        assert sorted(sum(by_split.values(), []), key=record_key) == expected
    # novel_premises: every val/test proof uses a premise that no training proof uses.
    train_premises = set().union(*map(_premise_names, d.theorems("novel_premises", "train")))
    for split in ("val", "test"):
        for t in d.theorems("novel_premises", split):
            assert _premise_names(t) - train_premises, (split, t.full_name)
    # random is hash-stable: with more theorems in the database (another repository) every
    # sample theorem stays in its split.
    first = {record_key(t.to_dict()): s for s in SPLITS for t in d.theorems("random", s)}
    db.add_repository(make_dataset(replicate(records, "https://x/more", "2" * 40, tag="m")))
    out2 = tmp_path / "out2"
    db.export_merged_data(None, out2, spec=SplitSpec(0.1, 0.1))
    db.export_merged_data([SAMPLE_URL], out, spec=SplitSpec(0.1, 0.1))
    alone = {
        record_key(t.to_dict()): s for s in SPLITS for t in DatasetDir(out).theorems("random", s)
    }
    merged = {
        record_key(t.to_dict()): s for s in SPLITS for t in DatasetDir(out2).theorems("random", s)
    }
    assert len(alone) == 100 and len(merged) == 200 and set(first) == set(alone)
    assert {k: merged[k] for k in alone} == alone


def test_round_trip_keeps_statement_extra_keys_and_own_url(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    recs = replicate(records[:20], "https://x/r", "1" * 40)
    with_stmt = dict(recs[0])
    with_stmt = {k: with_stmt[k] for k in ("url", "commit", "file_path", "full_name")} | {
        "theorem_statement": 'theorem foo : 𝔽 = 𝔽 ∧ "q"',
        **{k: recs[0][k] for k in ("start", "end", "traced_tactics")},
    }
    recs[0] = with_stmt
    recs[1] = {
        **{k: recs[1][k] for k in ("url", "commit", "file_path", "full_name")},
        "theorem_statement": None,
        **{k: recs[1][k] for k in ("start", "end", "traced_tactics")},
    }
    recs[2] = dict(recs[2], extra_key={"nested": [1, 2.5, "é", None, True]}, another=7)
    recs[3] = dict(recs[3], url="https://x/dependency", commit="9" * 40)  # a dependency theorem
    if recs[4]["traced_tactics"]:
        t0 = dict(recs[4]["traced_tactics"][0], state_before="x : 𝕜\n⊢ 🎉 goal")
        recs[4]["traced_tactics"] = [t0] + recs[4]["traced_tactics"][1:]
    db.add_repository(make_dataset(recs))
    out = tmp_path / "out"
    db.export_merged_data(None, out)
    got = sorted(_all_records(out), key=record_key)
    assert got == sorted(recs, key=record_key)
    # key order too (to_dict writes theorem_statement after full_name, extra keys last)
    by_name = {d["full_name"]: d for d in got}
    assert list(by_name[recs[0]["full_name"]]) == list(recs[0])
    assert list(by_name[recs[2]["full_name"]]) == list(recs[2])
    assert "theorem_statement" in by_name[recs[1]["full_name"]]
    assert "theorem_statement" not in by_name[recs[5]["full_name"]]


def test_dedup_newest_version_wins(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    old = replicate(records, "https://x/old", "1" * 40)
    new = replicate(records[:60], "https://x/new", "2" * 40)
    other = replicate(records[:10], "https://x/other", "3" * 40, tag="o")
    a = db.add_repository(
        make_dataset(
            old,
            metadata={
                "from_repo": {"url": "https://x/old", "commit": "1" * 40},
                "date_processed": "2024-01-01T00:00:00",
            },
        )
    )
    b = db.add_repository(
        make_dataset(
            new,
            metadata={
                "from_repo": {"url": "https://x/new", "commit": "2" * 40},
                "date_processed": "2024-06-01T00:00:00",
            },
        )
    )
    c = db.add_repository(make_dataset(other))
    out = tmp_path / "out"
    # The order given does not matter for who wins.
    result = db.export_merged_data([b, a, c], out)
    got = _all_records(out)
    assert len(got) == 110 and result["total_theorems"] == 110
    urls = {}
    for d in got:
        urls.setdefault(d["url"], 0)
        urls[d["url"]] += 1
    assert urls == {"https://x/new": 60, "https://x/old": 40, "https://x/other": 10}
    names_new = {r["full_name"] for r in new}
    assert all(d["url"] == "https://x/new" for d in got if d["full_name"] in names_new)
    # Two exports of the same data are identical.
    db.export_merged_data([a, b, c], tmp_path / "out2")
    for f in ("random/train.json", "novel_premises/test.json", "corpus.jsonl"):
        assert (out / f).read_bytes() == (tmp_path / "out2" / f).read_bytes()


def _pf(path: str, imports: list[str], names: list[str]) -> PremiseFile:
    return PremiseFile(
        path,
        imports,
        [
            Premise(path, n, f"def {n} := 1", Pos(i + 1, 1), Pos(i + 1, 9), "def")
            for i, n in enumerate(names)
        ],
    )


def test_corpus_merged_by_path_in_dependency_order(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    corpus_a = [_pf("X.lean", [], ["x1"]), _pf("Y.lean", ["X.lean"], ["y_old"])]
    corpus_b = [
        _pf("Z.lean", [], ["z1"]),
        _pf("X.lean", [], ["x1"]),
        _pf("Y.lean", ["Z.lean", "X.lean"], ["y_new", "y2"]),
        _pf("W.lean", ["Y.lean"], ["w"]),
    ]
    a = db.add_repository(
        make_dataset(
            replicate(records[:5], "https://x/a", "1" * 40),
            corpus=corpus_a,
            metadata={
                "from_repo": {"url": "https://x/a", "commit": "1" * 40},
                "date_processed": "2024-01-01T00:00:00",
            },
        )
    )
    b = db.add_repository(
        make_dataset(
            replicate(records[:5], "https://x/b", "1" * 40, tag="b"),
            corpus=corpus_b,
            metadata={
                "from_repo": {"url": "https://x/b", "commit": "1" * 40},
                "date_processed": "2025-01-01T00:00:00",
            },
        )
    )
    out = tmp_path / "out"
    result = db.export_merged_data([a, b], out)
    lines = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    paths = [d["path"] for d in lines]
    assert sorted(paths) == ["W.lean", "X.lean", "Y.lean", "Z.lean"]
    for i, d in enumerate(lines):
        assert set(d["imports"]) <= set(paths[:i]), d
    y = next(d for d in lines if d["path"] == "Y.lean")
    assert [p["full_name"] for p in y["premises"]] == ["y_new", "y2"]
    assert result["num_premise_files"] == 4 and result["num_premises"] == 5
    Corpus.from_jsonl(out / "corpus.jsonl")  # the foundation's loader accepts it


def test_sorry_theorems_never_train_and_found_proofs(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    proved = [r for r in recs if r["traced_tactics"]][:6]
    for r in proved:
        first = dict(r["traced_tactics"][0], tactic="sorry", annotated_tactic=["sorry", []])
        r["traced_tactics"] = [first]
    db.add_repository(make_dataset(recs))
    assert db.count_theorems(status="sorry_unproved") == 6
    stored = list(db.stored_theorems(status="sorry_unproved"))
    db.record_proof(stored[0], ["intro x", "simp"], backend="replay", verified=True)
    out = tmp_path / "out"
    db.export_merged_data(None, out)
    d = DatasetDir(out)
    for strategy in ("random", "novel_premises"):
        train = {t.full_name for t in d.theorems(strategy, "train")}
        assert not train & {r["full_name"] for r in proved}
        test = {t.full_name for t in d.theorems(strategy, "test")}
        assert {r["full_name"] for r in proved} <= test
    # The original records come back by default...
    assert sorted(_all_records(out), key=record_key) == sorted(recs, key=record_key)
    # ...and with use_found_proofs the proved one carries its proof and may be trained on.
    out2 = tmp_path / "out2"
    db.export_merged_data(None, out2, use_found_proofs=True)
    again = {t.full_name: t for t in DatasetDir(out2).all_theorems()}
    thm = again[stored[0].theorem.full_name]
    assert [t.tactic for t in thm.traced_tactics] == ["intro x", "simp"]
    assert not thm.has_sorry


def test_export_drop_sorry_and_counts(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    recs = replicate(records, "https://x/r", "1" * 40)
    with_tactics = [r for r in recs if r["traced_tactics"]]
    with_tactics[0]["traced_tactics"] = [
        dict(with_tactics[0]["traced_tactics"][0], tactic="exact sorry")
    ]
    db.add_repository(make_dataset(recs))
    result = db.export_merged_data(None, tmp_path / "out", spec=SplitSpec(0.05, 0.05, sorry="drop"))
    assert result["num_sorry_theorems_unproved"] == 1
    assert sum(result["splits"]["random"].values()) == 99


def _v1_reader(meta: dict) -> dict:
    """What readers of LeanDojo v1 benchmarks take from ``metadata.json``, read the way v1's own
    writer (``export_metadata`` of the benchmark script) lays it out: the dataset's name, when it
    was made, the repository and commit it was traced from, and the LeanDojo version."""
    import datetime

    return {
        "name": meta["dataset_name"],
        "created": datetime.datetime.fromisoformat(meta["creation_time"]),
        "url": meta["from_repo"]["url"],
        "commit": meta["from_repo"]["commit"],
        "leandojo_version": meta["leandojo_version"],
    }


def test_export_metadata_has_what_leandojo_v1_writes_and_its_readers_read(
    db: DynamicDatabase, tmp_path: Path, shared_data: Path
) -> None:
    import lean_dojo_v2

    real = json.loads((shared_data / "leandojo_b4" / "metadata.json").read_text())
    db.add_repository(sample_dataset_path())
    out = tmp_path / "out"
    db.export_merged_data(None, out)
    meta = json.loads((out / "metadata.json").read_text())
    # every key of the real benchmark's metadata.json, with values of the same JSON types
    for key, value in real.items():
        assert key in meta, key
        assert type(meta[key]) is type(value), key
    assert set(meta["from_repo"]) == set(real["from_repo"])
    got = _v1_reader(meta)
    assert got["url"] == "https://github.com/leanprover-community/mathlib4"
    assert got["commit"] == real["from_repo"]["commit"]
    # the source dataset's version, kept through the database (this library's: without one)
    assert got["leandojo_version"] == real["leandojo_version"] != lean_dojo_v2.__version__
    assert _v1_reader(real)["leandojo_version"] == "2.0.0"  # the reader reads the real file too


def test_the_source_datasets_leandojo_version_survives_add_and_export_twice(
    tmp_path: Path, capsys
) -> None:
    """The bundled sample says ``leandojo_version: 2.0.0``: ``db add`` then ``db export`` writes
    it back (not this library's version), and so does a second round from the export."""
    from .test_cli import run

    source = json.loads((sample_dataset_path() / "metadata.json").read_text())
    assert source["leandojo_version"] == "2.0.0"
    dataset = sample_dataset_path()
    for k in range(2):
        db, out = str(tmp_path / f"db{k}.sqlite"), tmp_path / f"out{k}"
        assert run("add", str(dataset), "--db", db) == 0
        assert run("export", str(out), "--db", db) == 0
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["leandojo_version"] == "2.0.0", k
        assert meta["repositories"][0]["lean_dojo_version"] == "2.0.0"
        dataset = out
    capsys.readouterr()


def test_a_repository_stored_without_a_version_or_mixed_versions_export_the_librarys(
    db: DynamicDatabase, records: list[dict], make_dataset, tmp_path: Path
) -> None:
    """A database written before the version was kept (the column empty) still exports, with
    this library's version; so do repositories whose sources said different versions."""
    import sqlite3

    from lean_dojo_v2.version import __version__

    sample = db.add_repository(sample_dataset_path())
    other = replicate(records[:10], "https://x/other", "3" * 40, tag="o")
    meta = {"from_repo": {"url": "https://x/other", "commit": "3" * 40}}
    newer = db.add_repository(make_dataset(other, metadata={**meta, "leandojo_version": "4.0.0"}))
    db.export_merged_data([sample, newer], tmp_path / "mixed")
    mixed = json.loads((tmp_path / "mixed" / "metadata.json").read_text())
    assert mixed["leandojo_version"] == __version__
    assert [r["lean_dojo_version"] for r in mixed["repositories"]] == ["2.0.0", "4.0.0"]
    db.close()
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:  # as an older database holds it
        conn.execute("UPDATE repositories SET lean_dojo_version = NULL")
    with DynamicDatabase(tmp_path / "db.sqlite") as old:
        old.export_merged_data([sample], tmp_path / "old")
    assert json.loads((tmp_path / "old" / "metadata.json").read_text())["leandojo_version"] == (
        __version__
    )
