"""``lean-dojo-v2 db …`` handlers, driven through a parser built with ``add_db_parser``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lean_dojo_v2.data import DatasetDir, sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.database.cli import _repo_ref, add_db_parser
from lean_dojo_v2.errors import DataFormatError, LeanDojoError

from .conftest import SAMPLE_COMMIT, SAMPLE_URL, replicate

UPSTREAM = Path(__file__).parent / "data" / "upstream_dynamic_database.json"


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="lean-dojo-v2")
    sub = parser.add_subparsers(dest="command")
    add_db_parser(sub)
    args = parser.parse_args(["db", *argv])
    return args.func(args)


def out_json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def test_add_list_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db.sqlite")
    assert run("add", str(sample_dataset_path()), "--db", db) == 0
    assert "added https://github.com/leanprover-community/mathlib4" in capsys.readouterr().out
    assert run("add", str(sample_dataset_path()), "--db", db, "--json") == 0
    again = out_json(capsys)
    assert again["added"] is False and again["total_theorems"] == 100
    assert run("list", "--db", db) == 0
    text = capsys.readouterr().out
    assert SAMPLE_URL in text and SAMPLE_COMMIT[:12] in text
    assert run("list", "--db", db, "--json") == 0
    (row,) = out_json(capsys)
    assert row["commit"] == SAMPLE_COMMIT and row["total_theorems"] == 100
    assert run("stats", "--db", db, "--json") == 0
    stats = out_json(capsys)
    assert {"repositories", "theorems", "tactics", "premises", "sorry_unproved"} <= set(stats)
    assert (stats["repositories"], stats["theorems"], stats["tactics"]) == (1, 100, 158)
    assert (stats["premises"], stats["sorry_unproved"]) == (185, 0)
    assert run("stats", "--db", db) == 0
    assert "theorems" in capsys.readouterr().out


def test_default_db_is_under_raid_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lean_dojo_v2.config import reset_settings

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    reset_settings()
    try:
        assert run("add", str(sample_dataset_path())) == 0
        assert (tmp_path / "raid" / "dynamic_database.sqlite").is_file()
    finally:
        reset_settings()


def test_export_and_options(
    tmp_path: Path, records: list[dict], make_dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    run("add", str(sample_dataset_path()), "--db", db)
    other = make_dataset(replicate(records[:30], "https://x/other", "1" * 40, tag="o"))
    run("add", str(other), "--db", db)
    capsys.readouterr()
    out = tmp_path / "out"
    assert run("export", str(out), "--db", db, "--json") == 0
    result = out_json(capsys)
    assert result["total_theorems"] == 130
    assert len(list(DatasetDir(out).all_theorems())) == 130
    assert run("export", str(out), "--db", db, "--repo", f"{SAMPLE_URL}@{SAMPLE_COMMIT}") == 0
    assert "100 theorems" in capsys.readouterr().out
    assert (
        run(
            "export", str(out), "--db", db, "--repo", "https://x/other", "--val", "3", "--test", "3"
        )
        == 0
    )
    d = DatasetDir(out)
    assert len(d.theorems("random", "val")) == 3 and len(d.theorems("random", "test")) == 3
    with pytest.raises(LeanDojoError):
        run("export", str(out), "--db", db, "--repo", "https://x/none")


def test_import_export_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db.sqlite")
    assert run("import-json", str(UPSTREAM), "--db", db) == 0
    assert "imported 2 repositories" in capsys.readouterr().out
    assert run("import-json", str(UPSTREAM), "--db", db, "--json") == 0
    assert out_json(capsys) == []
    assert run("export-json", str(tmp_path / "x.json"), "--db", db) == 0
    assert (tmp_path / "x.json").read_bytes() == UPSTREAM.read_bytes()
    capsys.readouterr()
    assert run("curriculum", "--db", db, "--json") == 0
    cur = out_json(capsys)
    assert [r["url"] for r in cur["repositories"]] == [
        "https://github.com/example-b/lean-b",
        "https://github.com/example-a/lean-a",
    ]
    assert run("curriculum", "--db", db) == 0
    assert "Easy <=" in capsys.readouterr().out
    assert run("delete", "https://github.com/example-a/lean-a", "a" * 40, "--db", db) == 0
    with DynamicDatabase(db) as opened:
        assert [r.name for r in opened.repositories()] == ["example-b/lean-b"]


def test_bad_input_raises_lean_dojo_errors(
    tmp_path: Path, records: list[dict], make_dataset
) -> None:
    db = str(tmp_path / "db.sqlite")
    src = make_dataset(replicate(records, "https://x/bad", "1" * 40))
    data = json.loads((src / "random" / "train.json").read_text())
    data[2]["start"] = "nowhere"
    (src / "random" / "train.json").write_text(json.dumps(data))
    with pytest.raises(DataFormatError, match="record 2"):
        run("add", str(src), "--db", db)
    with pytest.raises(LeanDojoError):
        run("add", str(tmp_path / "missing"), "--db", db)
    with pytest.raises(LeanDojoError):
        run("import-json", str(tmp_path / "missing.json"), "--db", db)
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database" * 50)
    with pytest.raises(LeanDojoError):
        run("stats", "--db", str(junk))
    with pytest.raises(LeanDojoError):
        run("delete", "https://x/none", "0" * 40, "--db", db)
    with DynamicDatabase(db) as opened:
        assert opened.stats()["theorems"] == 0


def test_db_without_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert run() == 2
    assert "import-json" in capsys.readouterr().out


def test_repo_ref() -> None:
    assert _repo_ref("https://github.com/a/b@abc123") == ("https://github.com/a/b", "abc123")
    assert _repo_ref("https://github.com/a/b") == "https://github.com/a/b"
    assert _repo_ref("git@github.com:a/b") == "git@github.com:a/b"
    assert _repo_ref("git@github.com:a/b@ff00") == ("git@github.com:a/b", "ff00")
