"""A writer killed in the middle of ``add_repository`` leaves the whole repository or none of it;
readers during a write see a consistent database; bad input leaves the database unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.errors import DataFormatError

from .conftest import replicate

ROOT = Path(__file__).resolve().parents[2]

# Adds a repository whose theorems come from a generator that stops halfway (after several batches
# have been written inside the transaction), announces it, and waits to be killed.
PAUSING_WRITER = r"""
import json, sys, time
from pathlib import Path
from lean_dojo_v2.data import Repository, Theorem
from lean_dojo_v2.database import DynamicDatabase

db_path, records_path, marker, n = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
recs = json.loads(Path(records_path).read_text())

def theorems():
    for i in range(n):
        r = dict(recs[i % len(recs)], url="https://x/big", commit="b" * 40)
        r["full_name"] = f"{r['full_name']}_c{i // len(recs)}"
        if i == n // 2:
            marker.write_text("midway")
            time.sleep(120)
        yield Theorem.from_dict(r)

db = DynamicDatabase(db_path)
db.connection.execute("PRAGMA cache_size = 20")  # spill uncommitted pages to the WAL early
db.add_repository(Repository(url="https://x/big", commit="b" * 40, theorems=theorems()))
"""

PLAIN_WRITER = r"""
import sys
from lean_dojo_v2.database import DynamicDatabase
DynamicDatabase(sys.argv[1]).add_repository(sys.argv[2])
print("done", flush=True)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _integrity(path: Path) -> None:
    with DynamicDatabase(path) as db:
        assert db.connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.connection.execute("PRAGMA foreign_key_check").fetchall() == []


def test_sigkill_midway_leaves_nothing(tmp_path: Path, b4_records_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
        before = db.stats()
    marker = tmp_path / "midway"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            PAUSING_WRITER,
            str(path),
            str(b4_records_path),
            str(marker),
            "3000",
        ],
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "writer exited early"
            assert time.monotonic() < deadline, "writer never reached the middle"
            time.sleep(0.05)
        # The writer holds an open transaction; uncommitted pages have spilled into the WAL.
        wal = Path(str(path) + "-wal")
        assert wal.exists() and wal.stat().st_size > 100_000
        # A reader is not blocked and sees the state before the write.
        t0 = time.monotonic()
        with DynamicDatabase(path) as reader:
            assert reader.stats() == before
            assert reader.get_repository("https://x/big") is None
            assert reader.count_theorems() == before["theorems"]
        assert time.monotonic() - t0 < 5
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with DynamicDatabase(path) as db:
        assert db.stats() == before
        assert db.get_repository("https://x/big") is None
    _integrity(path)
    # The database is fully usable afterwards: the same repository can be added.
    recs = json.loads(b4_records_path.read_text())
    with DynamicDatabase(path) as db:
        from lean_dojo_v2.data import Repository, Theorem

        theorems = [Theorem.from_dict(r) for r in replicate(recs, "https://x/big", "b" * 40)]
        info = db.add_repository(
            Repository(url="https://x/big", commit="b" * 40, theorems=theorems)
        )
        assert info.total_theorems == 100


def test_sigkill_at_random_moments_is_all_or_nothing(
    tmp_path: Path, records: list[dict], make_dataset
) -> None:
    path = tmp_path / "db.sqlite"
    src = make_dataset(replicate(records, "https://x/big", "b" * 40, copies=30))
    with DynamicDatabase(path) as db:
        db.add_repository(sample_dataset_path())
        before = db.stats()
    full = None
    outcomes = []
    for delay in (0.3, 0.6, 0.9, 1.2, 30.0):
        proc = subprocess.Popen(
            [sys.executable, "-c", PLAIN_WRITER, str(path), str(src)],
            env=_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        # Meanwhile, read continuously: every snapshot is "before" or "after", never between.
        t_end = time.monotonic() + delay
        with DynamicDatabase(path) as reader:
            while time.monotonic() < t_end and proc.poll() is None:
                s = reader.stats()
                big = reader.get_repository("https://x/big")
                if big is None:
                    assert s["theorems"] == before["theorems"]
                else:
                    assert big.total_theorems == 3000
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        with DynamicDatabase(path) as db:
            s = db.stats()
            info = db.get_repository("https://x/big")
            if info is None:
                assert s == before
                outcomes.append("none")
            else:
                assert info.total_theorems == 3000 and s["theorems"] == before["theorems"] + 3000
                full = s
                outcomes.append("whole")
                break
        _integrity(path)
    assert outcomes[-1] == "whole" and full is not None  # the last run was allowed to finish


def _corrupt(path: Path, record: int, field: str) -> None:
    data = json.loads(path.read_text())
    del data[record][field]
    path.write_text(json.dumps(data))


def test_broken_split_file_is_rejected_and_db_unchanged(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    db.add_repository(sample_dataset_path())
    before = db.stats()
    src = make_dataset(replicate(records, "https://x/bad", "1" * 40))
    _corrupt(src / "random" / "val.json", 3, "end")
    with pytest.raises(DataFormatError) as info:
        db.add_repository(src)
    err = info.value
    assert err.file is not None and err.file.endswith("random/val.json")
    assert err.record == 3 and err.field == "end"
    assert "val.json" in str(err) and "record 3" in str(err)
    assert db.stats() == before and db.get_repository("https://x/bad") is None


def test_broken_tactic_and_corpus_lines_are_named(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    before = db.stats()
    src = make_dataset(replicate(records, "https://x/bad", "1" * 40))
    data = json.loads((src / "random" / "train.json").read_text())
    k = next(i for i, r in enumerate(data) if len(r["traced_tactics"]) > 1)
    del data[k]["traced_tactics"][1]["state_after"]
    (src / "random" / "train.json").write_text(json.dumps(data))
    with pytest.raises(DataFormatError) as info:
        db.add_repository(src)
    assert info.value.record == k and info.value.field == "traced_tactics[1].state_after"
    assert db.stats() == before

    src2 = make_dataset(replicate(records, "https://x/bad2", "1" * 40))
    lines = (src2 / "corpus.jsonl").read_text().splitlines()
    lines[4] = lines[4].replace('"premises"', '"premisez"')
    (src2 / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as info:
        db.add_repository(src2)
    assert info.value.file.endswith("corpus.jsonl") and info.value.record == 4
    assert db.stats() == before

    src3 = make_dataset(replicate(records, "https://x/bad3", "1" * 40))
    (src3 / "random" / "test.json").write_text('[{"url": ')
    with pytest.raises(DataFormatError, match="invalid JSON") as info:
        db.add_repository(src3)
    assert info.value.file.endswith("test.json")
    assert db.stats() == before


def test_duplicate_theorem_is_rejected(
    db: DynamicDatabase, records: list[dict], make_dataset
) -> None:
    recs = replicate(records, "https://x/dup", "1" * 40)
    recs.append(dict(recs[7]))
    src = make_dataset(recs)
    with pytest.raises(DataFormatError, match="duplicate theorem") as info:
        db.add_repository(src)
    assert info.value.record is not None and "first at file" in str(info.value)
    assert db.stats()["theorems"] == 0
