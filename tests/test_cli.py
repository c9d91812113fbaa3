"""The ``lean-dojo-v2`` command: stats checked against counts computed here, split, help, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import read_dataset, sample_dataset_path


def _independent_counts(records: list[dict]) -> dict[str, int]:
    """Counts straight from the JSON, without the library's model classes."""
    tactics = [t for r in records for t in r["traced_tactics"]]
    provenances = [p for t in tactics for p in t["annotated_tactic"][1]]
    return {
        "theorems": len(records),
        "tactic_proofs": sum(1 for r in records if r["traced_tactics"]),
        "tactics": len(tactics),
        "premise_uses": len(provenances),
        "distinct_premises": len({p["full_name"] for p in provenances}),
        "sorry_theorems": sum(
            1 for r in records if any(t["tactic"].strip() == "sorry" for t in r["traced_tactics"])
        ),
    }


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_of_split_file_match_independent_counts(capsys, b4_records_path):
    code, out, _ = _run(capsys, "data", "stats", str(b4_records_path), "--json")
    assert code == 0
    records = json.loads(b4_records_path.read_text())
    expected = _independent_counts(records)
    assert json.loads(out) == expected
    # The source's own statement of the counts (SOURCE.txt).
    assert (expected["theorems"], expected["tactic_proofs"], expected["tactics"]) == (100, 51, 158)


def test_stats_of_dataset_dir_count_each_theorem_once(capsys, tmp_path, b4_records_path):
    records = json.loads(b4_records_path.read_text())
    # Two derived sorry theorems: real records whose first tactic is replaced by `sorry`.
    for i, rec in enumerate([r for r in records if r["traced_tactics"]][:2]):
        rec = json.loads(json.dumps(rec))
        rec["full_name"] += f"_sorry{i}"
        rec["traced_tactics"][0]["tactic"] = "sorry"
        rec["traced_tactics"][0]["annotated_tactic"] = ["sorry", []]
        records.append(rec)
    src = tmp_path / "all.json"
    src.write_text(json.dumps(records))
    code, out, _ = _run(
        capsys,
        "data",
        "split",
        str(src),
        str(tmp_path / "ds"),
        "--val",
        "5",
        "--test",
        "5",
        "--json",
    )
    assert code == 0
    sizes = json.loads(out)
    assert sizes["random"] == {"train": 90, "val": 5, "test": 7}
    code, out, _ = _run(capsys, "data", "stats", str(tmp_path / "ds"), "--json")
    stats = json.loads(out)
    assert stats == _independent_counts(records)
    assert stats["sorry_theorems"] == 2
    code, out, _ = _run(
        capsys, "data", "stats", str(tmp_path / "ds"), "--strategy", "novel_premises", "--json"
    )
    assert json.loads(out) == stats
    ds = read_dataset(tmp_path / "ds")
    assert not any(t.has_sorry for t in ds.splits["random"]["train"])


def test_split_keeps_corpus_and_metadata_of_a_directory(capsys, tmp_path):
    code, _, _ = _run(
        capsys,
        "data",
        "split",
        str(sample_dataset_path()),
        str(tmp_path / "re"),
        "--val",
        "0.1",
        "--test",
        "0.1",
    )
    assert code == 0
    src, dst = read_dataset(sample_dataset_path()), read_dataset(tmp_path / "re")
    assert dst.metadata == src.metadata
    assert sorted(f.path for f in dst.corpus) == sorted(f.path for f in src.corpus)
    assert len(dst.theorems()) == 100


def test_human_readable_stats(capsys, b4_records_path):
    code, out, _ = _run(capsys, "data", "stats", str(b4_records_path))
    assert code == 0 and "tactic_proofs" in out and "158" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["data", "stats", "/no/such/path"], "no such file"),
        (["data", "split", "/no/such/path", "/tmp/x"], "no split file or dataset directory"),
    ],
)
def test_errors_are_messages_not_tracebacks(capsys, argv, message):
    code, _, err = _run(capsys, *argv)
    assert code == 1 and message in err and "Traceback" not in err


def test_bad_split_sizes(capsys, b4_records_path, tmp_path):
    code, _, err = _run(
        capsys, "data", "split", str(b4_records_path), str(tmp_path / "o"), "--val", "abc"
    )
    assert code == 1 and "not a ratio or a count" in err
    code, _, err = _run(
        capsys,
        "data",
        "split",
        str(b4_records_path),
        str(tmp_path / "o"),
        "--val",
        "60",
        "--test",
        "60",
    )
    assert code == 1 and "only 100" in err
    assert not (tmp_path / "o").exists()


def test_malformed_input_names_record(capsys, tmp_path, b4_records_path):
    records = json.loads(b4_records_path.read_text())
    records[7]["start"] = "somewhere"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    code, _, err = _run(capsys, "data", "stats", str(bad))
    assert code == 1 and "record 7" in err and "'start'" in err and str(bad) in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["quickstart"],
        ["data"],
        ["data", "stats"],
        ["data", "split"],
        ["db"],
        ["db", "add"],
        ["db", "list"],
        ["db", "stats"],
        ["db", "export"],
        ["db", "import-json"],
    ],
)
def test_every_command_has_help(argv):
    proc = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2", *argv, "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "usage: lean-dojo-v2" in proc.stdout


def test_quickstart_reports_the_bundled_sample(capsys):
    code, out, _ = _run(capsys, "quickstart", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["theorems"] == 100 and data["tactics"] == 158


def test_split_with_previous_keeps_placed_theorems(capsys, tmp_path, b4_records_path):
    records = json.loads(b4_records_path.read_text())
    half = tmp_path / "half.json"
    half.write_text(json.dumps(records[:50]))
    assert (
        _run(
            capsys,
            "data",
            "split",
            str(half),
            str(tmp_path / "v1"),
            "--val",
            "0.1",
            "--test",
            "0.1",
        )[0]
        == 0
    )
    code, _, _ = _run(
        capsys,
        "data",
        "split",
        str(b4_records_path),
        str(tmp_path / "v2"),
        "--val",
        "0.1",
        "--test",
        "0.1",
        "--previous",
        str(tmp_path / "v1"),
    )
    assert code == 0
    v1, v2 = read_dataset(tmp_path / "v1"), read_dataset(tmp_path / "v2")
    for strategy in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            old = {t.full_name for t in v1.splits[strategy][split]}
            new = {t.full_name for t in v2.splits[strategy][split]}
            assert old <= new, (strategy, split)
