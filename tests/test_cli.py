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
    stats.pop("corpus")  # what the corpus offers retrieval: tests/data/test_stats.py
    assert stats == _independent_counts(records)
    assert stats["sorry_theorems"] == 2
    code, out, _ = _run(
        capsys, "data", "stats", str(tmp_path / "ds"), "--strategy", "novel_premises", "--json"
    )
    assert {k: v for k, v in json.loads(out).items() if k != "corpus"} == stats
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


def test_data_stats_reports_the_bundled_sample(capsys):
    # What `quickstart` printed before it ran the whole loop (tests/test_quickstart.py).
    from lean_dojo_v2.data import sample_dataset_path

    code, out, _ = _run(capsys, "data", "stats", str(sample_dataset_path()), "--json")
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


# ------------------------------------------------------------- nothing is lost; one-line errors


@pytest.fixture
def sample_copy(tmp_path):
    import shutil

    dst = tmp_path / "ds"
    shutil.copytree(sample_dataset_path(), dst)
    return dst


def _one_line_error(code: int, err: str) -> str:
    assert code == 1 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("lean-dojo-v2: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_split_refuses_foreign_output_dir(capsys, tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("x")
    code, _, err = _run(capsys, "data", "split", str(sample_dataset_path()), str(precious))
    assert "--force" in _one_line_error(code, err)
    assert (precious / "thesis.tex").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious"]
    code, _, _ = _run(capsys, "data", "split", str(sample_dataset_path()), str(precious), "--force")
    assert code == 0 and not (precious / "thesis.tex").exists()
    assert len(read_dataset(precious).theorems()) == 100


def test_split_replaces_its_own_output(capsys, tmp_path):
    out = tmp_path / "out"
    assert _run(capsys, "data", "split", str(sample_dataset_path()), str(out))[0] == 0
    assert _run(capsys, "data", "split", str(sample_dataset_path()), str(out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_split_refuses_output_containing_its_input(capsys, sample_copy):
    before = {p: p.read_bytes() for p in sample_copy.rglob("*") if p.is_file()}
    src = sample_copy / "random" / "train.json"
    for extra in ([], ["--force"]):
        code, _, err = _run(capsys, "data", "split", str(src), str(sample_copy), *extra)
        assert "overlaps the input" in _one_line_error(code, err)
    code, _, err = _run(capsys, "data", "split", str(sample_copy), str(sample_copy / "inner"))
    _one_line_error(code, err)
    after = {p: p.read_bytes() for p in sample_copy.rglob("*") if p.is_file()}
    assert after == before


def test_split_to_a_file_or_dot_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    target = tmp_path / "notes.txt"
    target.write_text("keep")
    code, _, err = _run(capsys, "data", "split", str(sample_dataset_path()), str(target))
    assert "not a directory" in _one_line_error(code, err)
    assert target.read_text() == "keep"
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "data", "split", str(sample_dataset_path()), ".")
    assert "cannot be an output directory" in _one_line_error(code, err)
    assert target.read_text() == "keep"


def test_split_rejects_duplicated_theorem(capsys, tmp_path):
    records = json.loads((sample_dataset_path() / "random" / "train.json").read_text())
    src = tmp_path / "twice.json"
    src.write_text(json.dumps([*records, records[3]]))
    code, _, err = _run(capsys, "data", "split", str(src), str(tmp_path / "out"))
    line = _one_line_error(code, err)
    assert "record 3" in line and f"record {len(records)}" in line and str(src) in line
    assert records[3]["full_name"] in line
    assert not (tmp_path / "out").exists()


def test_stats_rejects_theorem_in_two_splits(capsys, sample_copy):
    train = sample_copy / "random" / "train.json"
    val = sample_copy / "random" / "val.json"
    records = json.loads(val.read_text())
    first = json.loads(train.read_text())[0]
    val.write_text(json.dumps([*records, first]))
    code, _, err = _run(capsys, "data", "stats", str(sample_copy), "--json")
    line = _one_line_error(code, err)
    assert str(train) in line and "record 0" in line
    assert str(val) in line and f"record {len(records)}" in line
    # The other strategy holds every theorem once too: that is not a duplicate.
    code, out, _ = _run(capsys, "data", "stats", str(sample_copy), "--strategy", "novel_premises")
    assert code == 0


def test_stats_refuses_dataset_missing_a_split_unless_partial(capsys, sample_copy):
    (sample_copy / "random" / "val.json").unlink()
    code, _, err = _run(capsys, "data", "stats", str(sample_copy), "--json")
    line = _one_line_error(code, err)
    assert "random/val.json" in line and "--partial" in line
    code, out, _ = _run(capsys, "data", "stats", str(sample_copy), "--json", "--partial")
    assert code == 0 and json.loads(out)["theorems"] == 90


def test_stats_refuses_dataset_missing_its_corpus(capsys, sample_copy):
    (sample_copy / "corpus.jsonl").unlink()
    code, _, err = _run(capsys, "data", "stats", str(sample_copy))
    assert "corpus.jsonl" in _one_line_error(code, err)
    code, _, err = _run(capsys, "data", "split", str(sample_copy), str(sample_copy.parent / "o"))
    assert "corpus.jsonl" in _one_line_error(code, err)


def test_stats_warns_about_theorem_files_missing_from_corpus(capsys, caplog, sample_copy):
    corpus = sample_copy / "corpus.jsonl"
    theorem_files = {
        t["file_path"] for t in json.loads((sample_copy / "random" / "test.json").read_text())
    }
    lines = corpus.read_text().splitlines()
    kept = [
        line
        for line in lines
        if json.loads(line)["path"] not in theorem_files or json.loads(line)["premises"]
    ]
    assert len(kept) < len(lines)
    corpus.write_text("".join(line + "\n" for line in kept))
    with caplog.at_level("WARNING", logger="lean_dojo_v2"):
        code, _, _ = _run(capsys, "data", "stats", str(sample_copy), "--json")
    assert code == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    # the other warning says the sample's corpus has no premise code (tests/data/test_stats.py)
    warned = [w for w in warned if "theorem file(s)" in w]
    assert len(warned) == 1 and f"{len(lines) - len(kept)} theorem file(s)" in warned[0]


def test_non_utf8_corpus_is_a_one_line_error(capsys, sample_copy):
    corpus = sample_copy / "corpus.jsonl"
    data = corpus.read_bytes()
    second = data.index(b"\n") + 1
    bad_line = b'{"path": "\xff"}\n'
    corpus.write_bytes(data[:second] + bad_line + data[second:])
    code, _, err = _run(capsys, "data", "stats", str(sample_copy))
    line = _one_line_error(code, err)
    assert str(corpus) in line and "not UTF-8" in line
    offset = second + bad_line.index(b"\xff")
    assert f"byte offset {offset}" in line


def test_non_utf8_split_file_is_a_one_line_error(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'[{"full_name": "\xc3("}]')
    code, _, err = _run(capsys, "data", "stats", str(bad))
    line = _one_line_error(code, err)
    assert str(bad) in line and "not UTF-8" in line and "byte offset 16" in line


def test_corpus_that_is_a_directory_is_a_one_line_error(capsys, sample_copy, tmp_path):
    corpus = sample_copy / "corpus.jsonl"
    corpus.unlink()
    corpus.mkdir()
    code, _, err = _run(capsys, "data", "stats", str(sample_copy))
    assert "corpus.jsonl (not a file)" in _one_line_error(code, err)
    code, _, err = _run(capsys, "data", "split", str(sample_copy), str(tmp_path / "o"), "--partial")
    line = _one_line_error(code, err)
    assert str(corpus) in line and "is a directory" in line


@pytest.mark.parametrize(
    "exc",
    [
        PermissionError(13, "Permission denied", "/x/db.sqlite"),
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        "sqlite",
    ],
)
def test_cli_last_line_of_defence_prints_one_line(capsys, monkeypatch, exc):
    import sqlite3

    from lean_dojo_v2.data import stats

    if exc == "sqlite":
        exc = sqlite3.DatabaseError("database disk image is malformed")

    def boom(*args, **kwargs):
        raise exc

    monkeypatch.setattr(stats, "dataset_report", boom)
    monkeypatch.delenv("LEAN_DOJO_V2_DEBUG", raising=False)
    code, _, err = _run(capsys, "data", "stats", "x")
    assert "--debug" in _one_line_error(code, err)
    with pytest.raises(type(exc)):
        main(["--debug", "data", "stats", "x"])
    monkeypatch.setenv("LEAN_DOJO_V2_DEBUG", "1")
    with pytest.raises(type(exc)):
        main(["data", "stats", "x"])


def _subparser(parser, *names):
    import argparse

    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def test_split_options_are_the_same_for_data_split_and_db_export():
    from lean_dojo_v2.cli import build_parser

    parser = build_parser()
    seen = []
    for names in (("data", "split"), ("db", "export")):
        actions = _subparser(parser, *names)._actions
        seen.append(
            [
                (a.option_strings, a.default, a.choices, a.metavar, a.help)
                for a in actions
                if a.dest in ("val", "test", "sorry")
            ]
        )
    assert len(seen[0]) == 3 and seen[0] == seen[1]


@pytest.mark.parametrize(
    ("argv", "prog", "says"),
    [
        (["generate", "x", "--strategy", "foo"], "lean-dojo-v2 generate", "invalid choice: 'foo'"),
        (["generate", "x", "-n", "abc"], "lean-dojo-v2 generate", "-n/--num-samples"),
        (["nosuch"], "lean-dojo-v2", "invalid choice: 'nosuch'"),
        (["generate"], "lean-dojo-v2 generate", "required: state"),
        (["train", "sft", "--set"], "lean-dojo-v2 train sft", "expected one argument"),
        (["data", "stats", "x", "--strategy", "y"], "lean-dojo-v2 data stats", "'y'"),
        (["db", "stats", "--bogus"], "lean-dojo-v2", "unrecognized arguments: --bogus"),
    ],
)
def test_argparse_errors_are_one_line_with_status_1(capsys, argv, prog, says):
    # argparse's own errors print the whole usage block and exit 2; every other error of the
    # command is one line with status 1, and so are these, pointing to --help.
    code, out, err = _run(capsys, *argv)
    assert code == 1 and out == "", (code, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "usage:" not in err, err
    assert lines[0].startswith(f"{prog}: error: ") and says in lines[0], err
    assert lines[0].endswith(f"see '{prog} --help'"), err


def test_every_subparser_has_the_one_line_errors():
    import argparse

    from lean_dojo_v2.cli import build_parser
    from lean_dojo_v2.config.cli import CommandParser

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from walk(child)

    parsers = list(walk(build_parser()))
    assert len(parsers) > 20
    assert all(isinstance(p, CommandParser) for p in parsers), [
        p.prog for p in parsers if not isinstance(p, CommandParser)
    ]


def test_help_and_version_still_exit_0(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "--help"])
    assert exit_.value.code in (0, None) and "--num-samples" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code in (0, None)


def test_usage_error_exits_1_from_the_installed_command():
    proc = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2.cli", "generate", "x", "--strategy", "foo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
