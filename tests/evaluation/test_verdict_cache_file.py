"""The verdict cache's file: one that cannot be a verdict cache is one line naming it before
anything is written; a file of the older schema is emptied, never answers; a damaged row is a
miss, logged once; proofs Lean reads differently never share a verdict."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest
from prover._oracle_server import one_line_error
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.evaluation.benchmarks import load_benchmark
from lean_dojo_v2.evaluation.recorded import RecordedProofs
from lean_dojo_v2.evaluation.verdict_cache import (
    SCHEMA_VERSION,
    VerdictCache,
    VerdictCacheError,
    check_verdict_cache,
)
from lean_dojo_v2.interaction import Verdict

from .proof_variants import other_proofs
from .test_cli_eval_prove import _eval, server  # noqa: F401 (a fixture)

PROBLEM = load_benchmark("minif2f-test").problem("mathd_algebra_478")
THEOREM = PROBLEM.to_theorem()
PROOF = RecordedProofs.bundled().for_statement(PROBLEM.header, PROBLEM.formal_statement)[0].proof
ACCEPTED = Verdict(True, "pantograph", "lean", axioms=("propext",))


def _cache_with_rows(path: Path, rows: int) -> Path:
    cache = VerdictCache(path)
    for i in range(rows):
        cache.put("lean:4.15.0", THEOREM, f"norm_num [h{i}]", ACCEPTED)
    cache.close()
    return path


def _sqlite(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def _truncated(path: Path) -> Path:
    _cache_with_rows(path, 300)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


BAD_FILES = {
    "random bytes": lambda p: (p.write_bytes(os.urandom(8192)), p)[1],
    "truncated": _truncated,
    "a directory": lambda p: (p.mkdir(), p)[1],
    "another program's tables": lambda p: _sqlite(p, "CREATE TABLE notes (x TEXT)"),
    "other columns": lambda p: _sqlite(p, "CREATE TABLE verdicts (k TEXT, v TEXT)"),
    "a newer schema": lambda p: _sqlite(
        p,
        "CREATE TABLE verdicts (key TEXT PRIMARY KEY, verifier TEXT NOT NULL, verdict TEXT NOT "
        "NULL)",
        f"PRAGMA user_version = {SCHEMA_VERSION + 1}",
    ),
    "/dev/null": lambda p: Path("/dev/null"),
    "under a file": lambda p: (p.write_text("x"), p / "verdicts.sqlite")[1],
}


@pytest.mark.parametrize("what", sorted(BAD_FILES))
def test_a_file_that_cannot_be_a_verdict_cache_is_one_line_before_anything_is_written(
    what: str,
    server: FakeOpenAI,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = BAD_FILES[what](tmp_path / "verdicts.sqlite")
    before = bad.read_bytes() if bad.is_file() and bad.stat().st_size else None
    out = tmp_path / "out"
    line = one_line_error(_eval(server, out, "--verdict-cache", str(bad)), capsys)
    assert f"verdict cache {bad}" in line, line
    assert "--verdict-cache" in line, line  # what to do
    assert not out.exists()
    if before is not None:
        assert bad.read_bytes() == before  # only read


def test_the_check_reads_only_and_accepts_new_empty_and_own_files(tmp_path: Path) -> None:
    check_verdict_cache(tmp_path / "new" / "verdicts.sqlite")  # made when first written
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty.sqlite").write_bytes(b"")
    check_verdict_cache(tmp_path / "empty.sqlite")
    check_verdict_cache(_cache_with_rows(tmp_path / "own.sqlite", 3))
    with pytest.raises(VerdictCacheError, match="is a directory"):
        VerdictCache(tmp_path)


def test_a_file_of_the_older_schema_is_emptied_and_never_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Schema 1 keyed a proof up to any Unicode white space: its "accepted" of one proof could
    answer for a variant Lean rejects. Its rows are dropped when the file is first opened."""
    path = _cache_with_rows(tmp_path / "v.sqlite", 2)
    _sqlite(path, "PRAGMA user_version = 0")  # as schema 1 left its files
    check_verdict_cache(path)  # an older file is usable: it is upgraded, not refused
    cache = VerdictCache(path)
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.evaluation.verdict_cache"):
        assert cache.get("lean:4.15.0", THEOREM, "norm_num [h0]") is None
    assert "dropped 2 verdicts of an older lean-dojo-v2" in caplog.text
    assert len(cache) == 0
    cache.put("lean:4.15.0", THEOREM, "norm_num", ACCEPTED)
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    assert VerdictCache(path).get("lean:4.15.0", THEOREM, "norm_num") is not None


@pytest.mark.parametrize(
    "row", ["not json", '{"ok": "yes"}', "[]", "null", "[" * 100_000 + "]" * 100_000]
)
def test_a_row_that_holds_no_verdict_is_a_miss_logged_once_and_replaced(
    row: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _cache_with_rows(tmp_path / "v.sqlite", 2)
    _sqlite(path, f"UPDATE verdicts SET verdict = '{row}'")
    cache = VerdictCache(path)  # the check reads no rows: a damaged one is found when asked
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.evaluation.verdict_cache"):
        assert cache.get("lean:4.15.0", THEOREM, "norm_num [h0]") is None
        assert cache.get("lean:4.15.0", THEOREM, "norm_num [h1]") is None
    assert caplog.text.count("a row holds no verdict") == 1
    assert (cache.hits, cache.misses) == (0, 2)
    assert cache.put("lean:4.15.0", THEOREM, "norm_num [h0]", ACCEPTED)
    kept = cache.get("lean:4.15.0", THEOREM, "norm_num [h0]")
    assert kept is not None and kept.ok and kept.cached


def test_a_proof_lean_reads_otherwise_never_takes_the_clean_proofs_verdict() -> None:
    cache = VerdictCache()
    cache.put("lean:4.15.0", THEOREM, PROOF, ACCEPTED)
    assert cache.get("lean:4.15.0", THEOREM, PROOF) is not None
    served = [
        what
        for what, variant in other_proofs(PROOF).items()
        if cache.get("lean:4.15.0", THEOREM, variant) is not None
    ]
    assert served == []
    # what Lean reads as the same proof still is one
    for same in (PROOF.replace("\n", "\r\n"), "by" + PROOF + "   \n\n", PROOF + "  -- done"):
        assert cache.get("lean:4.15.0", THEOREM, same) is not None, repr(same)
