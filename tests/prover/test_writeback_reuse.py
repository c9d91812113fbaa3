"""A write-back working copy is reused only while it holds nothing lean-dojo-v2 did not write.

Two agents (or two ``prove --write-back`` runs) with the same ``RAID_DIR`` write to the same
default working copy, ``RAID_DIR/writeback/<repo name>``. Between the two the user may have
committed there, added a file, edited one: the second write-back must not replace that. It writes
a new working copy beside it instead (and says so); an ``out`` named by the caller is refused
(``OutputExistsError``) unless ``force``. A working copy nobody touched is reused as before.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from lean_dojo_v2.data.model import Pos, Theorem
from lean_dojo_v2.errors import OutputExistsError
from lean_dojo_v2.prover.writeback import ProofEdit, check_write_back, write_back

PUTNAM = ("prover_benchmarks", "putnambench_lean4", "src", "putnam_1997_b1.lean")


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
def raid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from lean_dojo_v2.config import reset_settings

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    reset_settings()
    yield tmp_path / "raid"
    reset_settings()


@pytest.fixture
def repo(tmp_path: Path, shared_data: Path) -> Path:
    """A git repository holding one real PutnamBench file (a theorem and an ``abbrev`` with
    ``sorry``), committed."""
    repo = tmp_path / "myrepo"
    repo.mkdir()
    shutil.copyfile(shared_data.joinpath(*PUTNAM), repo / "Putnam.lean")
    _git(["init", "-q", "-b", "main"], repo)
    _git(["add", "."], repo)
    _git(["commit", "-q", "-m", "problems"], repo)
    return repo


def _edit(repo: Path, name: str = "putnam_1997_b1", proof: str = "simp") -> ProofEdit:
    source = (repo / "Putnam.lean").read_text("utf-8")
    for n, line in enumerate(source.split("\n"), 1):
        words = line.split()
        if len(words) >= 2 and words[0] in ("theorem", "abbrev") and words[1] == name:
            thm = Theorem(
                "https://example.org/p", "0" * 40, "Putnam.lean", name, Pos(n, 1), Pos(n, 1)
            )
            return ProofEdit.of(thm, proof)
    raise AssertionError(name)


def _user_commits_and_adds_a_file(work: Path) -> str:
    (work / "Notes.lean").write_text("-- my notes\n")
    _git(["add", "Notes.lean"], work)
    _git(["commit", "-q", "-m", "my notes"], work)
    (work / "scratch.txt").write_text("not committed either\n")
    return _git(["rev-parse", "HEAD"], work).strip()


def test_a_second_write_back_keeps_the_users_commit_and_file_and_writes_beside_it(
    raid, repo, caplog
):
    first = write_back(repo, [_edit(repo)], branch="agent-1")
    first.report()  # what an agent does: the diff file is saved in the working copy
    default = raid / "writeback" / "myrepo"
    assert first.workdir == default.resolve()
    mine = _user_commits_and_adds_a_file(default)

    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.prover.writeback"):
        second = write_back(repo, [_edit(repo, "putnam_1997_b1_solution")], branch="agent-2")
    # The user's work is where it was ...
    assert _git(["rev-parse", "HEAD"], default).strip() == mine
    assert (default / "Notes.lean").is_file() and (default / "scratch.txt").is_file()
    assert _git(["rev-parse", "agent-1~1"], default).strip() == first.commit  # under the user's
    # ... and the second write-back went to a new working copy, and said so.
    assert second.workdir == (raid / "writeback" / "myrepo-2").resolve()
    assert _git(["rev-parse", "agent-2"], second.workdir).strip() == second.commit
    assert str(default) in caplog.text and "myrepo-2" in caplog.text


def test_a_working_copy_named_by_the_caller_with_user_changes_is_refused(repo, tmp_path):
    out = tmp_path / "work"
    write_back(repo, [_edit(repo)], out=out)
    (out / "Putnam.lean").write_text((out / "Putnam.lean").read_text() + "\n-- my edit\n")
    with pytest.raises(OutputExistsError, match="--force") as info:
        check_write_back(repo, out=out)
    assert "Putnam.lean" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(OutputExistsError):
        write_back(repo, [_edit(repo, "putnam_1997_b1_solution")], out=out)
    assert (out / "Putnam.lean").read_text().endswith("-- my edit\n")
    # force: the caller says the changes may go.
    write_back(repo, [_edit(repo, "putnam_1997_b1_solution")], out=out, force=True)
    assert "-- my edit" not in (out / "Putnam.lean").read_text()


@pytest.mark.parametrize("change", ["commit", "branch", "stage", "untracked", "edit", "delete"])
def test_any_change_since_we_wrote_it_keeps_a_working_copy(repo, tmp_path, change):
    out = tmp_path / "work"
    write_back(repo, [_edit(repo)], out=out, branch="proofs")
    if change == "commit":
        _user_commits_and_adds_a_file(out)
    elif change == "branch":
        _git(["branch", "mine"], out)
    elif change == "stage":
        (out / "New.lean").write_text("-- new\n")
        _git(["add", "New.lean"], out)
    elif change == "untracked":
        (out / "sub").mkdir()
        (out / "sub" / "x.txt").write_text("x")
    elif change == "edit":
        (out / "Putnam.lean").write_text("-- replaced\n")
    else:
        (out / "Putnam.lean").unlink()
    with pytest.raises(OutputExistsError, match="since lean-dojo-v2 wrote it"):
        write_back(repo, [_edit(repo, "putnam_1997_b1_solution")], out=out)


def test_an_untouched_working_copy_is_reused(raid, repo):
    first = write_back(repo, [_edit(repo)], branch="a")
    first.report()
    _git(["status"], first.workdir)  # reading it (git refreshes its index) changes nothing
    second = write_back(repo, [_edit(repo, "putnam_1997_b1_solution")], branch="b")
    assert second.workdir == first.workdir
    assert "a" not in _git(["branch", "--list"], second.workdir).split()


def test_a_plain_copy_with_a_user_file_is_kept(tmp_path, shared_data, raid):
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copyfile(shared_data.joinpath(*PUTNAM), plain / "Putnam.lean")
    first = write_back(plain, [_edit(plain)])
    (first.workdir / "mine.txt").write_text("mine")
    second = write_back(plain, [_edit(plain, "putnam_1997_b1_solution")])
    assert (first.workdir / "mine.txt").read_text() == "mine"
    assert second.workdir == (raid / "writeback" / "plain-2").resolve()


# -- a working copy on another filesystem --------------------------------------------------------

# What git 2.x prints when ``git clone --local`` cannot hard-link the objects across devices.
_EXDEV = "fatal: failed to create link '{}/.git/objects/pack/x.pack': Invalid cross-device link\n"


def test_a_hard_link_clone_refused_by_the_filesystem_falls_back_to_a_copy(
    repo, tmp_path, monkeypatch, caplog
):
    """The hard-link clone fails as git fails across devices (its exact message, exit 128, the
    half-made clone left behind); the fallback clone is real git, copying the objects."""
    from lean_dojo_v2.system import commands

    real = commands.run_command
    clones = []

    def run_command(argv, *args, **kwargs):
        if argv[:2] == ["git", "clone"]:
            clones.append(list(argv))
            if "--no-hardlinks" not in argv:
                # git's own failure: the clone's object folder begun, the message, exit 128.
                dst = Path(argv[-1])
                (dst / ".git" / "objects").mkdir(parents=True, exist_ok=True)
                fail = ["sh", "-c", 'printf "%s" "$0" >&2; exit 128', _EXDEV.format(dst)]
                return real(fail, *args, **kwargs)
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(commands, "run_command", run_command)
    out = tmp_path / "work"
    with caplog.at_level(logging.INFO, logger="lean_dojo_v2.prover.writeback"):
        result = write_back(repo, [_edit(repo)], out=out, branch="proofs")
    assert [("--no-hardlinks" in c) for c in clones] == [False, True]
    assert _git(["rev-parse", "proofs~1"], out).strip() == _git(["rev-parse", "HEAD"], repo).strip()
    assert "+  simp" in result.diff and "cross-device" in caplog.text
    # Nothing of the copy is shared with the repository: no object file has a second link.
    objects = [p for p in (out / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects and all(p.stat().st_nlink == 1 for p in objects)


def test_a_working_copy_on_another_device_is_made(repo, tmp_path):
    """Real devices: the repository under the test's temporary directory, the working copy on
    /dev/shm (a tmpfs) when that is another device here, where ``git clone --local`` fails with
    "Invalid cross-device link". Where /dev/shm is missing or the same device, the working copy
    goes under the temporary directory and this is a plain write-back."""
    import os
    import uuid

    shm = Path("/dev/shm")
    other = shm.is_dir() and os.access(shm, os.W_OK) and shm.stat().st_dev != tmp_path.stat().st_dev
    out = (shm if other else tmp_path) / f"ldv2-test-{uuid.uuid4().hex}" / "work"
    try:
        result = write_back(repo, [_edit(repo)], out=out, branch="proofs")
        assert result.workdir == out.resolve() and result.commit
        assert _git(["rev-parse", "proofs"], out).strip() == result.commit
        assert "+  simp" in result.diff
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


# -- two agents with one RAID_DIR ------------------------------------------------------------------


def test_a_second_agents_prove_keeps_the_users_work_in_the_first_agents_working_copy(
    raid, tmp_path, caplog
):
    """Two agents (each with its own database) prove the same ``sorry`` theorems of one
    checkout with the same ``RAID_DIR``: the first writes the default working copy, the user
    commits and adds a file there, and the second's write-back goes beside it."""
    from lean_dojo_v2.agent import BaseAgent
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems
    from lean_dojo_v2.prover import SearchConfig
    from prover.pipeline_oracle import OracleGenerator

    sample = sample_dataset_path()

    class OracleAgent(BaseAgent):
        def _get_build_deps(self) -> bool:
            return False

        def _setup_prover(self) -> None:
            self.prover = OracleGenerator(str(sample))

    # The sample's first two tactic-proved theorems as `sorry`, at their recorded lines.
    theorems = [t for t in load_theorems(sample) if t.traced_tactics][:2]
    checkout = tmp_path / "checkout"
    for t in theorems:
        path = checkout / t.file_path
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = path.read_text().split("\n") if path.exists() else []
        lines += [""] * (t.start.line_nb + 1 - len(lines))
        lines[t.start.line_nb - 1] = f"theorem {t.full_name.rsplit('.', 1)[-1]} : True := sorry"
        path.write_text("\n".join(lines))
    _git(["init", "-q", "-b", "main"], checkout)
    _git(["add", "."], checkout)
    _git(["commit", "-q", "-m", "sorries"], checkout)

    def prove(n: int) -> dict:
        agent = OracleAgent(
            database_path=tmp_path / f"agent{n}.sqlite",
            search_config=SearchConfig(num_samples=4, max_expansions=30, timeout=60),
            quiet=True,
            progress=False,
        )
        agent.setup_traced_dataset(sample, source_dir=checkout)
        report = agent.prove(branch=f"agent-{n}")
        agent.close()
        assert report.target == "sorry" and report.proved == len(theorems)
        (info,) = report.write_back.values()
        assert "error" not in info, info
        return info

    first = prove(1)
    default = raid / "writeback" / "checkout"
    assert Path(first["workdir"]) == default.resolve()
    mine = _user_commits_and_adds_a_file(default)
    caplog.clear()
    with caplog.at_level("WARNING", logger="lean_dojo_v2.prover.writeback"):
        second = prove(2)
    assert Path(second["workdir"]) == (raid / "writeback" / "checkout-2").resolve()
    # Said once, before the search (the write-back goes where that check chose).
    said = [r for r in caplog.records if "not replacing the working copy" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert _git(["rev-parse", "HEAD"], default).strip() == mine
    assert (default / "Notes.lean").is_file() and (default / "scratch.txt").is_file()
    assert _git(["rev-parse", "agent-2"], second["workdir"]).strip() == second["commit"]
