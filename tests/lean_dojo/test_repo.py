"""LeanGitRepo on git repositories made by the tests: refs, files at a commit, mirrors, checkouts,
errors and the optional GitHub metadata. Everything is offline."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from processes import wait_until_dead  # noqa: E402  (tests/ is on sys.path via conftest)

from lean_dojo_v2.config import reset_settings
from lean_dojo_v2.errors import DataFormatError
from lean_dojo_v2.lean_dojo import repo as repo_module
from lean_dojo_v2.lean_dojo.errors import (
    CommitNotFoundError,
    NotALeanProjectError,
    RepoNotFoundError,
    TracingError,
)
from lean_dojo_v2.lean_dojo.repo import (
    DestinationExistsError,
    LeanGitRepo,
    RepoType,
    mirror_path,
)

OLD_MANIFEST = {
    "version": 4,
    "packagesDir": "lake-packages",
    "packages": [
        {
            "git": {
                "url": "https://github.com/leanprover/std4",
                "subDir?": None,
                "rev": "a" * 40,
                "opts": {},
                "name": "std",
                "inputRev?": "main",
                "inherited": False,
            }
        },
        {"path": {"name": "helper", "opts": {}, "inherited": False, "dir": "./helper"}},
    ],
}
NEW_MANIFEST = {
    "version": "1.1.0",
    "packagesDir": ".lake/packages",
    "packages": [
        {
            "url": "https://github.com/leanprover-community/mathlib4",
            "type": "git",
            "subDir": None,
            "scope": "leanprover-community",
            "rev": "b" * 40,
            "name": "mathlib",
            "manifestFile": "lake-manifest.json",
            "inputRev": "master",
            "inherited": False,
            "configFile": "lakefile.lean",
        },
        {
            "type": "path",
            "scope": "",
            "name": "helper",
            "manifestFile": "lake-manifest.json",
            "inherited": False,
            "dir": "./helper",
            "configFile": "lakefile.lean",
        },
    ],
    "name": "proj",
    "lakeDir": ".lake",
}


def git(cwd: Path, *args: str) -> str:
    # The user's and the system's git config (hooks, signing, default branch) stay out of it.
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit(path: Path, files: dict[str, str | None], message: str = "change") -> str:
    """Write (or, for None, delete) files and commit them; returns the new SHA."""
    for name, text in files.items():
        target = path / name
        if text is None:
            git(path, "rm", "-q", name)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            git(path, "add", name)
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A private cache, no GitHub token, and no user/system git config leaking into the tests."""
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_ACCESS_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    empty = tmp_path / "empty.gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    reset_settings()
    yield
    reset_settings()


@pytest.fixture(scope="module")
def _project_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A Lean project with two commits, tags (annotated and lightweight) and a branch; made once
    and copied for each test, which may change its copy."""
    path = init_repo(tmp_path_factory.mktemp("template") / "proj")
    c1 = commit(
        path,
        {
            "lean-toolchain": "leanprover/lean4:v4.9.0\n",
            "lakefile.lean": "import Lake\nopen Lake DSL\npackage proj\n",
            "lake-manifest.json": json.dumps(OLD_MANIFEST),
            "Proj/Basic.lean": "theorem one : 1 = 1 := rfl\n",
        },
        "first",
    )
    git(path, "tag", "-a", "v1", "-m", "release 1")
    git(path, "tag", "light")
    git(path, "branch", "feature")
    c2 = commit(
        path,
        {
            "lean-toolchain": "leanprover/lean4:v4.10.0\n",
            "lakefile.lean": None,
            "lakefile.toml": 'name = "proj"\n',
            "lake-manifest.json": json.dumps(NEW_MANIFEST),
        },
        "second",
    )
    return {"path": path, "c1": c1, "c2": c2}


@pytest.fixture
def proj(_project_template: dict[str, object], tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "proj"
    shutil.copytree(_project_template["path"], path, symlinks=True)
    return {**_project_template, "path": path}


# ------------------------------------------------------------------------------------------------
# Local repositories
# ------------------------------------------------------------------------------------------------


def test_local_refs_resolve_to_full_sha(proj):
    path, c1, c2 = proj["path"], proj["c1"], proj["c2"]
    for ref, expected in [
        (c1, c1),
        (c1[:8], c1),
        ("v1", c1),  # annotated tag: peeled to its commit
        ("light", c1),
        ("feature", c1),
        ("main", c2),
        (None, c2),
    ]:
        repo = LeanGitRepo(str(path), ref)
        assert repo.commit == expected, ref
    repo = LeanGitRepo(str(path))
    assert repo.repo_type is RepoType.LOCAL and repo.is_local
    assert repo.url == str(path) and repo.name == "proj"
    assert repo.cache_dirname == f"proj-{c2}"
    assert str(repo) == f"{path}@{c2}"
    assert LeanGitRepo.from_path(path) == repo
    assert LeanGitRepo(str(path), "main") == LeanGitRepo(str(path), c2[:10])


def test_relative_and_home_paths(proj, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert LeanGitRepo("proj").url == str(proj["path"])
    assert LeanGitRepo("./proj/").url == str(proj["path"])
    monkeypatch.setenv("HOME", str(tmp_path))
    assert LeanGitRepo("~/proj", "v1").commit == proj["c1"]


def test_files_at_a_commit(proj):
    path = proj["path"]
    old = LeanGitRepo(str(path), "v1")
    assert old.toolchain == "leanprover/lean4:v4.9.0"
    assert old.lean_version == "v4.9.0"
    assert old.uses_lakefile_lean() and not old.uses_lakefile_toml()
    assert old.get_config("Proj/Basic.lean") == "theorem one : 1 = 1 := rfl\n"
    assert old.get_config("lakefile.toml") is None
    assert old.get_config("Proj") is None  # a directory is not a file
    assert old.get_config("./Proj//Basic.lean") == old.get_config("Proj/Basic.lean")
    assert old.get_config("../proj/lean-toolchain") is None
    assert old.get_config("lake-manifest.json") == OLD_MANIFEST
    assert old.get_dependencies() == {
        "std": {
            "type": "git",
            "url": "https://github.com/leanprover/std4",
            "rev": "a" * 40,
            "inputRev": "main",
            "scope": "",
        },
        "helper": {"type": "path", "dir": "./helper", "scope": ""},
    }

    new = LeanGitRepo(str(path))
    assert new.toolchain == "leanprover/lean4:v4.10.0" and new.lean_version == "v4.10.0"
    assert new.uses_lakefile_toml() and not new.uses_lakefile_lean()
    assert new.get_dependencies() == {
        "mathlib": {
            "type": "git",
            "url": "https://github.com/leanprover-community/mathlib4",
            "rev": "b" * 40,
            "inputRev": "master",
            "scope": "leanprover-community",
        },
        "helper": {"type": "path", "dir": "./helper", "scope": ""},
    }
    # The working tree does not matter: only the commit is read.
    (path / "lean-toolchain").write_text("leanprover/lean4:v4.99.0\n")
    assert LeanGitRepo(str(path)).toolchain == "leanprover/lean4:v4.10.0"


def test_no_manifest_and_bad_json(tmp_path):
    path = init_repo(tmp_path / "p")
    commit(path, {"lean-toolchain": "leanprover/lean4:v4.9.0"})
    repo = LeanGitRepo(str(path))
    assert repo.get_dependencies() == {}
    commit(path, {"lake-manifest.json": "{not json"})
    with pytest.raises(DataFormatError, match="lake-manifest.json"):
        LeanGitRepo(str(path)).get_dependencies()


def test_uncommitted_changes_warn(proj, caplog):
    (proj["path"] / "Proj" / "New.lean").write_text("-- not committed\n")
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.lean_dojo.repo"):
        repo = LeanGitRepo(str(proj["path"]))
    assert repo.commit == proj["c2"]
    assert "uncommitted" in caplog.text and "committed state" in caplog.text


def test_clone_and_checkout_local(proj, tmp_path):
    repo = LeanGitRepo(str(proj["path"]), "v1")
    root = repo.clone_and_checkout(tmp_path / "out" / "proj")
    assert root == tmp_path / "out" / "proj"
    assert git(root, "rev-parse", "HEAD") == proj["c1"]
    assert git(root, "status", "--porcelain") == ""
    assert (root / "lakefile.lean").is_file() and not (root / "lakefile.toml").exists()
    assert (root / "lean-toolchain").read_text() == "leanprover/lean4:v4.9.0\n"
    # Detached: no branch is checked out.
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"

    empty = tmp_path / "empty"
    empty.mkdir()
    assert repo.clone_and_checkout(empty) == empty and (empty / "lakefile.lean").is_file()

    with pytest.raises(DestinationExistsError, match="not an empty directory") as info:
        repo.clone_and_checkout(root)
    assert isinstance(info.value, TracingError) and isinstance(info.value, FileExistsError)


def test_clone_and_checkout_with_submodule(tmp_path, monkeypatch):
    # Submodules from local paths need the file protocol, which git blocks for them by default.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "always")
    sub = init_repo(tmp_path / "sub")
    sub_sha = commit(sub, {"Sub.lean": "def sub := 1\n"})
    commit(sub, {"Sub.lean": "def sub := 2\n"})  # the pinned commit is the older one
    main = init_repo(tmp_path / "main")
    commit(main, {"lean-toolchain": "leanprover/lean4:v4.9.0\n"})
    git(main, "submodule", "add", "-q", str(sub), "deps/sub")
    git(main / "deps" / "sub", "checkout", "-q", sub_sha)
    git(main, "add", "deps/sub")
    git(main, "commit", "-q", "-m", "add submodule")

    for url in (str(main), f"file://{main}"):
        repo = LeanGitRepo(url)
        root = repo.clone_and_checkout(tmp_path / f"out-{repo.repo_type.value}")
        assert (root / "deps" / "sub" / "Sub.lean").read_text() == "def sub := 1\n"
        assert git(root / "deps" / "sub", "rev-parse", "HEAD") == sub_sha


# ------------------------------------------------------------------------------------------------
# Remote repositories through the mirror
# ------------------------------------------------------------------------------------------------


def test_file_url_goes_through_the_mirror(proj, tmp_path):
    path, c1, c2 = proj["path"], proj["c1"], proj["c2"]
    url = f"file://{path}"
    repo = LeanGitRepo(url, "v1")
    assert repo.repo_type is RepoType.REMOTE and not repo.is_local
    assert repo.commit == c1 and repo.url == url and repo.name == "proj"
    mirror = mirror_path(url)
    assert mirror.parent == tmp_path / "cache" / "git" and (mirror / "HEAD").is_file()
    assert git(mirror, "rev-parse", "--is-bare-repository") == "true"
    assert repo.cache_dirname == f"{path.parent.name}-proj-{c1}"
    assert repo.toolchain == "leanprover/lean4:v4.9.0" and repo.uses_lakefile_lean()
    assert repo.get_dependencies()["std"]["inputRev"] == "main"
    assert LeanGitRepo(url, "light").commit == c1
    assert LeanGitRepo(url, c2[:7]).commit == c2
    assert LeanGitRepo(url).commit == c2

    # A commit pushed later is fetched on demand; the default branch is refreshed.
    c3 = commit(path, {"Proj/More.lean": "theorem two : 2 = 2 := rfl\n"})
    assert LeanGitRepo(url, c3).commit == c3
    c4 = commit(path, {"Proj/More.lean": "theorem two : 2 = 2 := by rfl\n"})
    assert LeanGitRepo(url).commit == c4
    assert LeanGitRepo(url, "main").get_config("Proj/More.lean").endswith("by rfl\n")

    root = LeanGitRepo(url, "v1").clone_and_checkout(tmp_path / "co")
    assert git(root, "rev-parse", "HEAD") == c1
    assert git(root, "remote", "get-url", "origin") == url
    assert (root / "Proj" / "Basic.lean").is_file() and not (root / "Proj" / "More.lean").exists()

    # An emptied cache is rebuilt when the repository is read again.
    shutil.rmtree(mirror)
    assert repo.get_config("lean-toolchain") == "leanprover/lean4:v4.9.0\n"


def test_blobless_mirror(proj, tmp_path):
    path, c1 = proj["path"], proj["c1"]
    git(path, "config", "uploadpack.allowFilter", "true")  # the source now serves partial clones
    url = f"file://{path}"
    repo = LeanGitRepo(url, "v1")
    mirror = mirror_path(url)
    assert git(mirror, "config", "remote.origin.promisor") == "true"
    assert repo.get_dependencies()["helper"]["type"] == "path"
    root = repo.clone_and_checkout(tmp_path / "co")
    assert git(root, "rev-parse", "HEAD") == c1 and git(root, "status", "--porcelain") == ""
    assert (root / "Proj" / "Basic.lean").read_text() == "theorem one : 1 = 1 := rfl\n"
    assert git(root, "config", "remote.origin.promisor") == "true"
    # The blobs were fetched into the mirror, so the next checkout needs no remote at all.
    git(path, "config", "uploadpack.allowFilter", "false")
    path.rename(tmp_path / "moved")
    again = repo.clone_and_checkout(tmp_path / "co2")
    assert (again / "lakefile.lean").is_file()


def test_github_urls_are_normalised_and_use_a_seeded_mirror(proj):
    """A bare clone copied into the cache stands in for GitHub (there is no network here)."""
    url = "https://github.com/Owner/Proj"
    mirror = mirror_path(url + ".git/")
    assert mirror == mirror_path(url)
    mirror.parent.mkdir(parents=True)
    git(mirror.parent, "clone", "-q", "--bare", str(proj["path"]), str(mirror))
    for given in (url, url + ".git", url + "/", "http://github.com/Owner/Proj.git/"):
        repo = LeanGitRepo(given, proj["c1"])
        assert repo.url == url and repo.repo_type is RepoType.GITHUB
        assert repo.name == "Proj" and repo.owner == "Owner"
        assert repo.cache_dirname == f"Owner-Proj-{proj['c1']}"
        assert repo.lean_version == "v4.9.0"


@pytest.mark.parametrize(
    ("url", "normalized", "kind"),
    [
        ("https://github.com/o/r", "https://github.com/o/r", RepoType.GITHUB),
        ("https://www.github.com/o/r.git", "https://github.com/o/r", RepoType.GITHUB),
        ("git@github.com:o/r.git", "git@github.com:o/r.git", RepoType.REMOTE),
        ("ssh://git@example.org/o/r.git/", "ssh://git@example.org/o/r.git", RepoType.REMOTE),
        ("https://gitlab.com/o/r", "https://gitlab.com/o/r", RepoType.REMOTE),
        ("file:///srv/git/r.git", "file:///srv/git/r.git", RepoType.REMOTE),
    ],
)
def test_url_kinds(url, normalized, kind):
    assert repo_module._normalize_url(url) == (normalized, kind)


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------


def test_path_that_does_not_exist(tmp_path):
    with pytest.raises(RepoNotFoundError, match="does not exist"):
        LeanGitRepo(str(tmp_path / "nowhere"))


def test_directory_that_is_not_a_repo(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(RepoNotFoundError, match="git init && git add -A && git commit"):
        LeanGitRepo(str(tmp_path / "plain"))


def test_subdirectory_of_a_repo(proj):
    with pytest.raises(RepoNotFoundError, match="not its root"):
        LeanGitRepo(str(proj["path"] / "Proj"))


def test_file_url_to_nothing(tmp_path):
    with pytest.raises(RepoNotFoundError, match="Check the URL") as info:
        LeanGitRepo(f"file://{tmp_path}/missing")
    assert "credential helper" in str(info.value) and "no GitHub token" in str(info.value)
    assert not list((tmp_path / "cache" / "git").glob("*.git")), "no half-made mirror is left"


def test_https_url_fails_fast(monkeypatch):
    monkeypatch.setattr(repo_module, "GIT_LOW_SPEED_TIME_S", 10)
    monkeypatch.setattr(repo_module, "GIT_NETWORK_TIMEOUT_S", 20.0)
    start = time.monotonic()
    with pytest.raises(RepoNotFoundError, match="could not clone"):
        LeanGitRepo("https://github.com/lean-dojo-v2-tests/no-such-repository-xyz", "main")
    assert time.monotonic() - start < 25


def test_commit_that_does_not_exist(proj):
    for url in (str(proj["path"]), f"file://{proj['path']}"):
        with pytest.raises(CommitNotFoundError) as info:
            LeanGitRepo(url, "no-such-branch")
        message = str(info.value)
        assert "no-such-branch" in message and "main" in message and "v1" in message
        with pytest.raises(CommitNotFoundError):
            LeanGitRepo(url, "0" * 40)
    with pytest.raises(CommitNotFoundError, match="not a valid"):
        LeanGitRepo(str(proj["path"]), "--output=/tmp/x")


def test_empty_repository(tmp_path):
    path = init_repo(tmp_path / "empty")
    with pytest.raises(CommitNotFoundError, match="any commits"):
        LeanGitRepo(str(path))


def test_repository_without_lean_toolchain(proj, tmp_path):
    path = init_repo(tmp_path / "py")
    commit(path, {"README.md": "not Lean\n"})
    for url in (str(path), f"file://{path}"):
        with pytest.raises(NotALeanProjectError) as info:
            LeanGitRepo(url)
        message = str(info.value)
        assert "lean-toolchain" in message and "leanprover/lean4:v4.22.0" in message
        assert "git commit" in message


# ------------------------------------------------------------------------------------------------
# GitHub metadata
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def github_repo(proj) -> LeanGitRepo:
    url = "https://github.com/owner/proj"
    mirror = mirror_path(url)
    mirror.parent.mkdir(parents=True)
    git(mirror.parent, "clone", "-q", "--bare", str(proj["path"]), str(mirror))
    git(mirror, "remote", "set-url", "origin", url)  # as if it had been cloned from GitHub
    return LeanGitRepo(url, proj["c1"])


def test_github_metadata_without_token_makes_no_request(github_repo, proj):
    calls: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: calls.append(r) or httpx.Response(500))
    assert github_repo.github_metadata(transport=transport) is None
    assert LeanGitRepo(str(proj["path"])).github_metadata(transport=transport) is None
    assert calls == []


def test_github_metadata_with_token(github_repo, proj, monkeypatch, caplog):
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
    reset_settings()
    seen: list[httpx.Request] = []

    def ok(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "description": "A Lean project",
                "stargazers_count": 42,
                "license": {"spdx_id": "Apache-2.0", "name": "Apache License 2.0"},
                "default_branch": "main",
                "html_url": "https://github.com/owner/proj",
                "private": False,
            },
        )

    meta = github_repo.github_metadata(transport=httpx.MockTransport(ok))
    assert meta == {
        "description": "A Lean project",
        "stars": 42,
        "license": "Apache-2.0",
        "default_branch": "main",
        "html_url": "https://github.com/owner/proj",
    }
    assert str(seen[0].url) == "https://api.github.com/repos/owner/proj"
    assert seen[0].headers["Authorization"] == "Bearer secret-token"

    # Not on GitHub: no request even with a token.
    local = LeanGitRepo(str(proj["path"]))
    assert local.github_metadata(transport=httpx.MockTransport(ok)) is None
    assert len(seen) == 1

    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.lean_dojo.repo"):
        missing = httpx.MockTransport(lambda r: httpx.Response(404, json={"message": "Not Found"}))
        assert github_repo.github_metadata(transport=missing) is None

        def down(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("no network", request=request)

        assert github_repo.github_metadata(transport=httpx.MockTransport(down)) is None
    assert "404" in caplog.text and "no network" in caplog.text
    assert "secret-token" not in caplog.text


def test_offline_default_branch_uses_the_cached_tip(github_repo, proj, caplog):
    """Without network, a branch (or the default branch) falls back to the mirror's last state."""
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2.lean_dojo.repo"):
        repo = LeanGitRepo("https://github.com/owner/proj")
    assert repo.commit == proj["c2"]
    assert "could not reach" in caplog.text
    with pytest.raises(RepoNotFoundError, match="could not update"):
        LeanGitRepo("https://github.com/owner/proj", "not-fetched-yet")


def test_git_timeout_leaves_no_process_behind(monkeypatch, tmp_path):
    """A git command past its time limit is stopped with everything it started: killing only
    git used to leave its ssh (here: a fake one that hangs) running after the error."""
    pidfile = tmp_path / "ssh.pid"
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(f'#!/bin/sh\necho $$ > "{pidfile}"\nexec sleep 60\n')
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    monkeypatch.setattr(repo_module, "GIT_NETWORK_TIMEOUT_S", 2.0)
    start = time.monotonic()
    with pytest.raises(RepoNotFoundError, match="timed out after 2 s"):
        LeanGitRepo("ssh://git.example.invalid/owner/proj.git", "main")
    assert time.monotonic() - start < 15
    pid = int(pidfile.read_text())
    assert wait_until_dead(pid), f"the fake ssh (pid {pid}) outlived the timeout"
