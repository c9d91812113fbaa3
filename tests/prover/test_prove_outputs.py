"""``prove``'s outputs never cost the proofs: every ``--write-back``
argument and ``--db`` is checked before the search; a write-back that still fails after the search
comes after the proofs are printed and recorded, saying what was and was not written; ``--db``
never creates a database, and the "not in the database" warning comes once, with the count.

Proofs are found end to end through a fake OpenAI-compatible server answering the recorded
tactics (``_oracle_server.py``) on ``ReplayEnv``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import load_theorems
from lean_dojo_v2.database import DynamicDatabase

from ._oracle_server import SAMPLE, oracle_answer, repo_with_sorries
from .fake_openai import FakeOpenAI


@pytest.fixture(scope="module")
def theorems() -> list:
    return [t for t in load_theorems(SAMPLE) if t.traced_tactics][:4]


@pytest.fixture
def repo(tmp_path: Path, theorems: list) -> Path:
    return repo_with_sorries(tmp_path / "repo", theorems)


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any search fails the test: what is refused must be refused before one starts."""

    def boom(*args, **kwargs):
        raise AssertionError("a search started")

    monkeypatch.setattr("lean_dojo_v2.prover.parallel.prove_theorems", boom)


def _argv(theorems: list, *extra: str) -> list[str]:
    names = [x for t in theorems for x in ("--theorem", t.full_name)]
    return ["prove", "--data", SAMPLE, "--split", "all", "--parallel", "inline", "--json"] + [
        "--num-samples",
        "3",
        "--max-expansions",
        "30",
        "--no-progress",
        *names,
        *extra,
    ]


def _run(argv: list[str], base_url: str | None = None) -> int:
    if base_url is None:  # refused before the generator is asked anything
        return main(argv + ["--generator", "openai", "--model", "m", "--base-url", "http://x/v1"])
    return main(argv + ["--generator", "openai", "--model", "oracle", "--base-url", base_url])


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    rc = _run(argv)
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err and out.strip() == ""
    lines = [line for line in err.splitlines() if line.startswith("lean-dojo-v2: error:")]
    assert len(lines) == 1
    return lines[0]


# -- write-back arguments: refused before the search ---------------------------------------------


def test_missing_repository_is_refused_before_the_search(
    tmp_path: Path, theorems: list, capsys, no_search
) -> None:
    line = _refused(_argv(theorems, "--write-back", str(tmp_path / "nope")), capsys)
    assert "no repository directory" in line


def test_branch_with_in_place_is_refused_before_the_search(
    repo: Path, theorems: list, capsys, no_search
) -> None:
    line = _refused(
        _argv(theorems, "--write-back", str(repo), "--in-place", "--branch", "b"), capsys
    )
    assert "--in-place" in line


def test_out_with_in_place_is_refused(repo: Path, tmp_path: Path, theorems, capsys, no_search):
    argv = _argv(theorems, "--write-back", str(repo), "--in-place", "--out", str(tmp_path / "w"))
    assert "pass one of them" in _refused(argv, capsys)


def test_foreign_out_is_refused_before_the_search(
    repo: Path, tmp_path: Path, theorems: list, capsys, no_search
) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine", "utf-8")
    line = _refused(_argv(theorems, "--write-back", str(repo), "--out", str(foreign)), capsys)
    assert "did not write" in line and "--force" in line
    assert (foreign / "notes.txt").read_text("utf-8") == "mine"


@pytest.mark.parametrize("inside", [".", "sub/work"])
def test_out_inside_the_repository_is_refused_before_the_search(
    inside: str, repo: Path, theorems: list, capsys, no_search
) -> None:
    out = repo / inside
    argv = _argv(theorems, "--write-back", str(repo), "--out", str(out), "--force")
    assert "overlaps the input" in _refused(argv, capsys)
    assert not (repo / "sub").exists()


def test_branch_needs_git_and_a_new_valid_name(
    tmp_path: Path, theorems: list, capsys, no_search
) -> None:
    plain = repo_with_sorries(tmp_path / "plain", theorems, git=False)
    argv = _argv(theorems, "--write-back", str(plain), "--out", str(tmp_path / "w"))
    assert "not the root of a git repository" in _refused(argv + ["--branch", "b"], capsys)
    repo = repo_with_sorries(tmp_path / "git", theorems)
    argv = _argv(theorems, "--write-back", str(repo), "--out", str(tmp_path / "w"))
    assert "not a valid git branch name" in _refused(argv + ["--branch", "a..b"], capsys)
    head = (repo / ".git" / "HEAD").read_text("utf-8").strip().rsplit("/", 1)[-1]
    assert "exists in" in _refused(argv + ["--branch", head], capsys)


def test_repository_without_the_theorems_files_is_refused(
    tmp_path: Path, theorems: list, capsys, no_search
) -> None:
    other = repo_with_sorries(tmp_path / "other", [])  # a git repository with no Lean file
    line = _refused(
        _argv(theorems, "--write-back", str(other), "--out", str(tmp_path / "w")), capsys
    )
    assert "none of the" in line and "traced from" in line


def test_unwritable_out_is_refused(
    repo: Path, tmp_path: Path, theorems, capsys, no_search, monkeypatch: pytest.MonkeyPatch
):
    # Root may write anywhere, so a chmod would prove nothing here: the permission answer is
    # faked for the one folder, and a file in the way of --out's parent is checked for real.
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **k: False if Path(p) == locked else real_access(p, mode, **k)
    )
    argv = _argv(theorems, "--write-back", str(repo), "--out", str(locked / "w"))
    assert "not a writable directory" in _refused(argv, capsys)

    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    argv = _argv(theorems, "--write-back", str(repo), "--out", str(a_file / "w"))
    assert "not a writable directory" in _refused(argv, capsys)


# -- after the search: proofs first, then the write-back error ------------------------------------


def test_write_back_failing_after_the_search_keeps_the_proofs(
    repo: Path,
    tmp_path: Path,
    theorems: list,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The user puts files into --out while the search runs: write-back is refused then, but the
    proofs are printed (the JSON summary) and recorded first, and the error says nothing was
    written."""
    import lean_dojo_v2.prover.parallel as parallel

    out = tmp_path / "work"
    real = parallel.prove_theorems

    def then_user_writes(*args, **kwargs):
        results = real(*args, **kwargs)
        out.mkdir()
        (out / "mine.txt").write_text("mine", "utf-8")
        return results

    monkeypatch.setattr(parallel, "prove_theorems", then_user_writes)
    db_path = tmp_path / "db.sqlite"
    with DynamicDatabase(db_path) as db:
        db.add_repository(SAMPLE)
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
        argv = _argv(theorems, "--write-back", str(repo), "--out", str(out), "--db", str(db_path))
        rc = _run(argv, server.base_url)
    stdout, err = capsys.readouterr()
    assert rc == 1
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["proved"] >= 1 and len(summary["proofs"]) == summary["proved"]
    assert summary["db"]["recorded"] == summary["proved"]
    wb = summary["write_back"]
    assert wb["written"] == [] and sorted(wb["not_written"]) == sorted(summary["proofs"])
    assert "did not write" in wb["error"]
    lines = [line for line in err.splitlines() if line.startswith("lean-dojo-v2: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "write-back failed after the search" in lines[0]
    assert "nothing was written" in lines[0] and "recorded in the database" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_a_proved_theorem_whose_file_is_missing_is_reported_not_fatal(
    tmp_path: Path,
    theorems: list,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only some theorems' files are in the repository: a warning before the search; after it,
    the others are written and each missing one is listed with the reason."""
    files = sorted({t.file_path for t in theorems})
    assert len(files) >= 2, "the sample's first theorems should span several files"
    kept = [t for t in theorems if t.file_path != files[0]]
    repo = repo_with_sorries(tmp_path / "repo", kept)
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
        with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.prover.cli"):
            argv = _argv(theorems, "--write-back", str(repo), "--out", str(tmp_path / "w"))
            rc = _run(argv, server.base_url)
    stdout, _ = capsys.readouterr()
    assert rc == 0
    assert f"not in {repo.resolve()}" in caplog.text and files[0] in caplog.text
    summary = json.loads(stdout.strip().splitlines()[-1])
    wb = summary["write_back"]
    lost = {t.full_name for t in theorems if t.file_path == files[0]} & set(summary["proofs"])
    assert set(wb["skipped"]) == lost
    assert all("not in the working copy" in why for why in wb["skipped"].values())
    assert set(wb["written"]) == set(summary["proofs"]) - lost


# -- --db ---------------------------------------------------------------------------------------


def test_db_that_does_not_exist_is_refused_and_not_created(
    tmp_path: Path, theorems: list, capsys, no_search
) -> None:
    db_path = tmp_path / "new" / "db.sqlite"
    line = _refused(_argv(theorems, "--db", str(db_path)), capsys)
    assert "no database at" in line and "db add" in line
    assert not db_path.exists() and not db_path.parent.exists()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert "empty file" in _refused(_argv(theorems, "--db", str(empty)), capsys)
    assert empty.stat().st_size == 0


def test_not_in_db_warning_comes_once_with_the_count(
    tmp_path: Path,
    theorems: list,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db_path = tmp_path / "db.sqlite"
    DynamicDatabase(db_path).close()  # a database that holds none of the theorems
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
        with caplog.at_level(logging.WARNING):
            rc = _run(_argv(theorems, "--db", str(db_path)), server.base_url)
    stdout, _ = capsys.readouterr()
    assert rc == 0
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["proved"] >= 2  # several results, recorded one by one during the search
    warnings = [r.getMessage() for r in caplog.records if "not in the database" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{summary['proved']} proved theorem(s) are not in the database")
    assert sorted(summary["db"]["not_in_db"]) == sorted(summary["proofs"])


def test_a_default_working_copy_in_use_is_passed_over_once_and_said_once(
    repo: Path,
    tmp_path: Path,
    theorems: list,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two ``prove --write-back`` runs with one ``RAID_DIR``; the user commits in the first's
    working copy in between. The second writes beside it, says so once (before its search),
    and the first's working copy keeps the user's commit."""
    import subprocess

    from lean_dojo_v2.config import reset_settings

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    reset_settings()
    default = tmp_path / "raid" / "writeback" / repo.name
    try:
        with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
            assert _run(_argv(theorems, "--write-back", str(repo)), server.base_url) == 0
            first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
            assert Path(first["write_back"]["workdir"]) == default.resolve()
            (default / "Mine.lean").write_text("-- mine\n")
            git = ["git", "-c", "user.name=u", "-c", "user.email=u@x"]
            subprocess.run([*git, "add", "Mine.lean"], cwd=default, check=True)
            subprocess.run([*git, "commit", "-q", "-m", "mine"], cwd=default, check=True)
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.prover.writeback"):
                assert _run(_argv(theorems, "--write-back", str(repo)), server.base_url) == 0
    finally:
        reset_settings()
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert Path(second["write_back"]["workdir"]) == default.with_name(f"{repo.name}-2").resolve()
    assert (default / "Mine.lean").is_file()
    said = [r for r in caplog.records if "not replacing the working copy" in r.getMessage()]
    assert len(said) == 1
