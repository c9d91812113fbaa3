"""The LeanProgress JSONL: rows from real proofs, writer/reader round trip, errors naming file and
line, and ``python -m lean_dojo_v2.lean_progress.create_sample_dataset``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lean_dojo_v2.data import clean_state, load_theorems, read_theorems, sample_dataset_path
from lean_dojo_v2.errors import DataFormatError, DatasetNotFoundError, OutputExistsError
from lean_dojo_v2.lean_progress import (
    ProgressExample,
    create_sample_dataset,
    progress_examples,
    read_progress_jsonl,
    write_progress_jsonl,
)
from lean_dojo_v2.lean_progress.create_sample_dataset import main as create_main


@pytest.fixture(scope="module")
def real_theorems(shared_data):
    return read_theorems(shared_data / "leandojo_b4" / "random_test_records_1_100.json")


def test_one_row_per_traced_tactic_with_goal_prefix_tactic_label(real_theorems):
    rows = list(progress_examples(real_theorems))
    assert len(rows) == sum(t.num_tactics for t in real_theorems) == 158
    by_name = {t.full_name: t for t in real_theorems}
    # Polynomial.Monic.degree_mul_comm (labels derived in test_labels.py: [5, 3, 1, 1, 1]).
    mine = [r for r in rows if r.theorem == "Polynomial.Monic.degree_mul_comm"]
    t = by_name["Polynomial.Monic.degree_mul_comm"]
    assert [r.steps_remaining for r in mine] == [5, 3, 1, 1, 1]
    assert [r.tactic for r in mine] == [x.tactic for x in t.traced_tactics]
    assert [r.goal for r in mine] == [clean_state(x.state_before) for x in t.traced_tactics]
    assert mine[0].prefix == ""
    assert mine[2].prefix == "by_cases h : q = 0\nrw [degree_mul', hp.degree_mul]"
    assert all(r.file_path == t.file_path for r in mine)


def test_prefix_leaves_out_a_nested_sub_proof(real_theorems):
    # Set.wellFoundedOn_iff: [5] `simp` is the nested `by simp` of [0]'s `have`; the prefix of
    # [6] is [0]..[4] (the `have` text holds the nested proof), and [5]'s prefix is empty.
    rows = [r for r in progress_examples(real_theorems) if r.theorem == "Set.wellFoundedOn_iff"]
    assert rows[5].tactic == "simp" and rows[5].prefix == ""
    assert rows[6].prefix.split("\n")[-1] == "by_cases hst : (s ∩ t).Nonempty"
    assert "simp" not in rows[6].prefix.split("\n")


def test_term_mode_theorems_give_no_rows(real_theorems):
    term = [t for t in real_theorems if not t.traced_tactics]
    assert term and list(progress_examples(term)) == []


def test_jsonl_round_trip(tmp_path, real_theorems):
    rows = list(progress_examples(real_theorems))
    path = tmp_path / "p.jsonl"
    assert write_progress_jsonl(path, rows) == len(rows)
    back = read_progress_jsonl(path)
    assert back == rows
    first = json.loads(path.read_text("utf-8").splitlines()[0])
    assert list(first)[:4] == ["goal", "prefix", "tactic", "steps_remaining"]
    assert "⊢" in path.read_text("utf-8")  # UTF-8, not \u escapes


def test_reader_accepts_upstream_rows_without_prefix_or_theorem(tmp_path):
    path = tmp_path / "up.jsonl"
    path.write_text(
        '{"goal": "a", "tactic": "simp", "steps_remaining": 2}\n\n'
        '{"goal": "b", "prefix": null, "tactic": "rfl", "steps_remaining": 1.0, "note": 7}\n',
        "utf-8",
    )
    rows = read_progress_jsonl(path)
    assert rows[0] == ProgressExample("a", "", "simp", 2)
    assert rows[1].steps_remaining == 1 and rows[1].prefix == "" and rows[1].extra == {"note": 7}
    assert rows[1].group is None


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("{not json", ["line 2", "invalid JSON"]),
        ('{"goal": "a", "tactic": "t"}', ["line 2", "steps_remaining", "missing"]),
        ('{"goal": "a", "tactic": "t", "steps_remaining": -1}', ["line 2", ">= 0"]),
        ('{"goal": "a", "tactic": "t", "steps_remaining": "3"}', ["line 2", "whole number"]),
        ('{"goal": 5, "tactic": "t", "steps_remaining": 1}', ["line 2", "'goal'", "text"]),
        ('["goal"]', ["line 2", "JSON object"]),
    ],
)
def test_bad_jsonl_line_names_file_and_line(tmp_path, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"goal": "a", "tactic": "t", "steps_remaining": 1}\n' + line + "\n", "utf-8")
    with pytest.raises(DataFormatError) as info:
        read_progress_jsonl(path)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message


def test_missing_data_file_is_a_typed_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="create_sample_dataset"):
        read_progress_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(DataFormatError, match="directory"):
        read_progress_jsonl(tmp_path)


def test_writer_refuses_existing_file_unless_forced(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("keep me\n", "utf-8")
    rows = [ProgressExample("⊢ True", "", "trivial", 1)]
    with pytest.raises(OutputExistsError, match="--force"):
        write_progress_jsonl(path, rows)
    assert path.read_text("utf-8") == "keep me\n"
    write_progress_jsonl(path, rows, force=True)
    assert read_progress_jsonl(path) == rows


def test_create_sample_dataset_from_bundled_real_data(tmp_path):
    out = tmp_path / "sub" / "sample.jsonl"
    summary = create_sample_dataset(out)
    expected = list(progress_examples(load_theorems(sample_dataset_path())))
    assert summary["rows"] == len(expected) == 158
    assert summary["theorems"] == 51
    assert read_progress_jsonl(out) == expected


def test_create_sample_dataset_module_refuses_overwrite_unless_force(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lean_dojo_v2.lean_progress.create_sample_dataset",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Wrote 158 LeanProgress examples" in proc.stdout
    before = out.read_bytes()
    assert create_main(["--output", str(out)]) == 1
    assert "exists" in capsys.readouterr().err and out.read_bytes() == before
    out.write_text("changed\n", "utf-8")
    assert create_main(["--output", str(out), "--force"]) == 0
    assert out.read_bytes() == before


def test_create_sample_dataset_rejects_data_without_tactics(tmp_path, real_theorems, capsys):
    from lean_dojo_v2.data import write_theorems

    split = tmp_path / "term_only.json"
    write_theorems(split, [t for t in real_theorems if not t.traced_tactics])
    assert create_main(["--output", str(tmp_path / "o.jsonl"), "--data", str(split)]) == 1
    assert "no traced tactics" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
