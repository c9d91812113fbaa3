"""Write-back: a found proof replaces the theorem's ``sorry`` in a working copy; the diff applies
with ``git apply`` and reproduces the written file exactly; every other byte is unchanged; the
user's checkout is never modified (unless asked, in place).

The Lean text is real: PutnamBench problem files (``theorem ... := sorry``, several sorries per
file) from the bundled ``tests/data/real/prover_benchmarks`` copy.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lean_dojo_v2.data.model import Pos, Theorem
from lean_dojo_v2.data.sorry import find_sorry_tokens
from lean_dojo_v2.errors import OutputExistsError
from lean_dojo_v2.prover.writeback import (
    ProofEdit,
    SorryNotFoundError,
    WriteBackError,
    insert_proof,
    insert_proofs,
    locate_sorry,
    tree_digest,
    unified_diff,
    write_back,
)

PUTNAM = ("prover_benchmarks", "putnambench_lean4", "src")
# Real files: one theorem and one `abbrev ..._solution := sorry` each (1997_b1 also has a
# helper def; 1962_a2 has a multi-line statement and a doc comment with non-ASCII text).
FILES = ("putnam_1997_b1.lean", "putnam_1962_a2.lean", "putnam_2025_a1.lean")
PROOF = "intro n hn\nsimp only [hF]\ninduction n with\n  | zero => rfl\n  | succ k ih => omega"


@pytest.fixture
def putnam_dir(shared_data: Path) -> Path:
    return shared_data.joinpath(*PUTNAM)


def _theorem(rel: str, full_name: str, source: str) -> Theorem:
    """A theorem record for ``full_name`` in ``source`` (its start: the declaration keyword,
    as LeanDojo records it)."""
    for n, line in enumerate(source.split("\n"), 1):
        words = line.split()
        if len(words) >= 2 and words[0] in ("theorem", "abbrev", "lemma") and words[1] == full_name:
            return Theorem(
                "https://example.org/putnam", "0" * 40, rel, full_name, Pos(n, 1), Pos(n, 1)
            )
    raise AssertionError(f"{full_name} not in {rel}")


def _crlf_variant(text: str) -> str:
    """``text`` with CRLF line ends, a comment with a tab and non-ASCII text after its import
    line, and no final newline (the bytes of every other line are the real file's)."""
    text = text.replace("import Mathlib\n", "import Mathlib\n-- \tä tab\n", 1)
    return text.replace("\n", "\r\n").rstrip("\r\n")


def _git(args: list[str], cwd: Path) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def user_repo(tmp_path: Path, putnam_dir: Path) -> Path:
    """A git repository holding three real PutnamBench files (byte for byte), one CRLF copy
    with a tab in a comment and no final newline, committed."""
    repo = tmp_path / "user_repo"
    (repo / "Putnam").mkdir(parents=True)
    for name in FILES:
        shutil.copyfile(putnam_dir / name, repo / "Putnam" / name)
    text = (putnam_dir / "putnam_2025_a1.lean").read_bytes().decode("utf-8")
    crlf = _crlf_variant(text)
    (repo / "Putnam" / "Crlf.lean").write_bytes(crlf.encode("utf-8"))
    _git(["init", "-q", "-b", "main"], repo)
    _git(["add", "."], repo)
    _git(["commit", "-q", "-m", "problems"], repo)
    return repo


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _edits(repo: Path) -> list[ProofEdit]:
    a = _read(repo / "Putnam" / FILES[0])
    c = _read(repo / "Putnam" / "Crlf.lean")
    return [
        ProofEdit.of(_theorem("Putnam/" + FILES[0], "putnam_1997_b1", a), PROOF),
        ProofEdit.of(
            _theorem("Putnam/" + FILES[0], "putnam_1997_b1_solution", a), "exact fun n => n"
        ),
        ProofEdit.of(
            _theorem("Putnam/Crlf.lean", "putnam_2025_a1", c.replace("\r\n", "\n")),
            "norm_num\nexact ⟨1, rfl⟩",
        ),
    ]


# -- the text edit -------------------------------------------------------------------------------


def test_insert_proof_replaces_only_the_sorry_and_keeps_every_other_byte(putnam_dir: Path) -> None:
    for name in FILES:
        source = _read(putnam_dir / name)
        full_name = name.removesuffix(".lean")
        thm = _theorem(name, full_name, source)
        site = locate_sorry(source, full_name, thm.start)
        assert source[site.begin : site.end] == "sorry"
        out = insert_proof(source, full_name, thm.start, PROOF)
        block = "by\n  " + PROOF.replace("\n", "\n  ")
        assert out == source[: site.begin] + block + source[site.end :]
        # The theorem's sorry is gone; the solution abbrev's sorry is still there.
        assert len(find_sorry_tokens(out)) == len(find_sorry_tokens(source)) - 1


def test_insert_proofs_writes_several_theorems_of_one_file(putnam_dir: Path) -> None:
    source = _read(putnam_dir / "putnam_1997_b1.lean")
    t = _theorem("f", "putnam_1997_b1", source)
    s = _theorem("f", "putnam_1997_b1_solution", source)
    out = insert_proofs(
        source, [(t.full_name, t.start, "simp"), (s.full_name, s.start, "exact id")]
    )
    assert find_sorry_tokens(out) == []
    # Each in either order gives the same text.
    again = insert_proofs(
        source, [(s.full_name, s.start, "exact id"), (t.full_name, t.start, "simp")]
    )
    assert again == out
    assert "putnam_1997_b1_solution : ℕ → ℝ := by\n  exact id\n-- fun n => n\n" in out
    assert out.endswith(":=\nby\n  simp\n")


def test_crlf_tabs_non_ascii_and_missing_final_newline_are_kept(putnam_dir: Path) -> None:
    text = _read(putnam_dir / "putnam_2025_a1.lean")
    crlf = _crlf_variant(text)
    thm = _theorem("f", "putnam_2025_a1", crlf.replace("\r\n", "\n"))
    out = insert_proof(crlf, thm.full_name, thm.start, "norm_num\nexact ⟨1, rfl⟩")
    site = locate_sorry(crlf, thm.full_name, thm.start)
    assert out[: site.begin] == crlf[: site.begin]
    assert out[site.begin :] == "by\r\n  norm_num\r\n  exact ⟨1, rfl⟩" + crlf[site.end :]
    assert "\n" not in out.replace("\r\n", "")  # no bare LF was introduced
    assert "-- \tä tab\r\n" in out and not out.endswith("\n")


def test_proof_with_leading_by_and_crlf_is_normalised(putnam_dir: Path) -> None:
    source = _read(putnam_dir / "putnam_1997_b1.lean")
    thm = _theorem("f", "putnam_1997_b1", source)
    a = insert_proof(source, thm.full_name, thm.start, "by\r\n    intro n\r\n    simp")
    b = insert_proof(source, thm.full_name, thm.start, "intro n\nsimp")
    c = insert_proof(source, thm.full_name, thm.start, "by intro n\n   simp")
    assert a == b == c


def test_theorem_without_sorry_raises_sorry_not_found(putnam_dir: Path) -> None:
    source = _read(putnam_dir / "putnam_1997_b1.lean")
    thm = _theorem("f", "putnam_1997_b1", source)
    proved = insert_proof(source, thm.full_name, thm.start, "simp")
    with pytest.raises(SorryNotFoundError, match="proved already"):
        insert_proof(proved, thm.full_name, thm.start, "simp")
    with pytest.raises(SorryNotFoundError, match="no declaration named 'putnam_1997_b2'"):
        insert_proof(source, "putnam_1997_b2", thm.start, "simp")
    # `dist_to_int` has a proof (a term) and no sorry.
    with pytest.raises(SorryNotFoundError, match="has no sorry"):
        insert_proof(source, "dist_to_int", (7, 1), "simp")


def test_moved_theorem_is_found_by_name(putnam_dir: Path) -> None:
    source = _read(putnam_dir / "putnam_1997_b1.lean")
    thm = _theorem("f", "putnam_1997_b1", source)
    moved = "-- a new line\n-- and another\n" + source
    assert insert_proof(moved, thm.full_name, thm.start, "simp") == (
        "-- a new line\n-- and another\n" + insert_proof(source, thm.full_name, thm.start, "simp")
    )


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("A.lean", "a\r\nb", "a\r\nc")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
    assert unified_diff("A.lean", "x", "x") == ""


# -- the working copy ------------------------------------------------------------------------------


def test_write_back_diff_applies_with_git_apply_to_a_pristine_copy(
    user_repo: Path, tmp_path: Path
) -> None:
    before = tree_digest(user_repo)
    out = tmp_path / "work"
    result = write_back(user_repo, _edits(user_repo), out=out)
    assert tree_digest(user_repo) == before  # the user's checkout (and .git) is unchanged
    assert result.workdir == out.resolve() and not result.in_place
    assert result.files == ["Putnam/Crlf.lean", "Putnam/putnam_1997_b1.lean"]
    assert sorted(result.written) == ["putnam_1997_b1", "putnam_1997_b1_solution", "putnam_2025_a1"]
    pristine = tmp_path / "pristine"
    shutil.copytree(user_repo, pristine)
    (tmp_path / "p.diff").write_bytes(result.diff.encode("utf-8"))
    _git(["apply", "--whitespace=nowarn", str(tmp_path / "p.diff")], pristine)
    for rel in result.files:
        assert (pristine / rel).read_bytes() == (out / rel).read_bytes()
    # Files without edits are byte-identical in the working copy.
    for name in FILES[1:]:
        assert (out / "Putnam" / name).read_bytes() == (user_repo / "Putnam" / name).read_bytes()
    # The working copy is a clone at the user's HEAD with only these two files modified.
    status = _git(["status", "--porcelain", "--untracked-files=no"], out)
    assert sorted(line[3:] for line in status.splitlines()) == result.files
    assert _git(["rev-parse", "HEAD"], out) == _git(["rev-parse", "HEAD"], user_repo)


def test_write_back_with_branch_commits_in_the_working_copy(
    user_repo: Path, tmp_path: Path
) -> None:
    before = tree_digest(user_repo)
    out = tmp_path / "work"
    result = write_back(user_repo, _edits(user_repo)[:2], out=out, branch="proofs")
    assert tree_digest(user_repo) == before
    assert result.branch == "proofs" and result.commit
    assert _git(["rev-parse", "proofs"], out).strip() == result.commit
    assert _git(["status", "--porcelain", "--untracked-files=no"], out) == ""
    shown = _git(["show", "--format=%s", "--stat", "proofs"], out)
    assert "Proofs of 2 theorems" in shown and "Putnam/putnam_1997_b1.lean" in shown
    # The user's repository has no such branch.
    assert "proofs" not in _git(["branch", "--list"], user_repo)


def test_missing_sorry_is_a_typed_error_and_nothing_is_left_behind(
    user_repo: Path, tmp_path: Path
) -> None:
    before = tree_digest(user_repo)
    source = _read(user_repo / "Putnam" / FILES[0])
    bad = ProofEdit("Putnam/" + FILES[0], "dist_to_int", (7, 1), "simp")
    out = tmp_path / "work"
    with pytest.raises(SorryNotFoundError) as info:
        write_back(user_repo, [*_edits(user_repo), bad], out=out)
    assert info.value.full_name == "dist_to_int" and info.value.file_path == "Putnam/" + FILES[0]
    assert not out.exists() and list(tmp_path.glob(".work*")) == []
    assert tree_digest(user_repo) == before
    # With missing="skip" the others are written and the bad one reported.
    result = write_back(user_repo, [*_edits(user_repo), bad], out=out, missing="skip")
    assert "dist_to_int" in result.skipped and len(result.written) == 3
    assert _read(user_repo / "Putnam" / FILES[0]) == source


def test_write_back_refuses_a_foreign_or_overlapping_output(
    user_repo: Path, tmp_path: Path
) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError):
        write_back(user_repo, _edits(user_repo), out=foreign)
    with pytest.raises(OutputExistsError):
        write_back(user_repo, _edits(user_repo), out=user_repo / "sub")
    assert (foreign / "notes.txt").read_text() == "mine"
    # A working copy we wrote may be replaced.
    write_back(user_repo, _edits(user_repo), out=tmp_path / "w")
    write_back(user_repo, _edits(user_repo)[:1], out=tmp_path / "w")


def test_in_place_edits_the_checkout_only_when_asked(user_repo: Path, tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    shutil.copytree(user_repo, pristine)
    result = write_back(user_repo, _edits(user_repo), in_place=True)
    assert result.in_place and result.workdir == user_repo.resolve()
    (tmp_path / "p.diff").write_bytes(result.diff.encode("utf-8"))
    _git(["apply", "--whitespace=nowarn", str(tmp_path / "p.diff")], pristine)
    assert tree_digest(pristine) == tree_digest(user_repo)
    with pytest.raises(WriteBackError, match="in-place"):
        write_back(user_repo, _edits(user_repo), in_place=True, branch="b")


def test_plain_directory_is_copied_and_branch_needs_git(tmp_path: Path, putnam_dir: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copyfile(putnam_dir / FILES[0], plain / FILES[0])
    (plain / ".lake" / "build").mkdir(parents=True)
    (plain / ".lake" / "build" / "x.olean").write_bytes(b"\0" * 10)
    before = tree_digest(plain)
    thm = _theorem(FILES[0], "putnam_1997_b1", _read(plain / FILES[0]))
    result = write_back(plain, [(thm, "simp")], out=tmp_path / "w")
    assert tree_digest(plain) == before
    assert not (tmp_path / "w" / ".lake").exists()
    assert "+  simp\n" in result.diff
    with pytest.raises(WriteBackError, match="not the root of a git repository"):
        write_back(plain, [(thm, "simp")], out=tmp_path / "w2", branch="b")
    with pytest.raises(WriteBackError, match="no repository directory"):
        write_back(tmp_path / "nope", [(thm, "simp")], out=tmp_path / "w3")
    with pytest.raises(WriteBackError, match="not in the working copy"):
        write_back(plain, [ProofEdit("Missing.lean", "x", None, "simp")], out=tmp_path / "w4")
