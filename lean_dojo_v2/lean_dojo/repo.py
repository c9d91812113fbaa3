"""``LeanGitRepo``: a Lean 4 project pinned to one commit, read with plain ``git``.

A repository is named by a GitHub URL, any git remote (``https://``, ``ssh://``, ``git@host:o/r``,
``file://``) or a local directory, and a commit given as a SHA (full or abbreviated), a tag, a branch
or nothing (the default branch's head; ``HEAD`` for a local directory). Construction resolves the
commit to its full SHA and checks that the project has a ``lean-toolchain`` there.

No GitHub API and no token are needed: remote repositories are cloned once into a bare mirror under
``<cache_dir>/git/`` (blobless where the server allows it) and every later read (``lean-toolchain``,
``lake-manifest.json``, checkouts) goes through that mirror. The optional
:meth:`LeanGitRepo.github_metadata` is the only thing that talks to the GitHub API, and only when a
token is set.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import posixpath
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import get_settings
from ..data.jsonio import loads
from ..errors import CommandError, CommandNotFoundError, CommandTimeoutError, DataFormatError
from ..system.commands import CommandResult, run_command
from ..system.commands import tail as _output_tail
from .errors import (
    CommitNotFoundError,
    DestinationExistsError,
    NotALeanProjectError,
    RepoNotFoundError,
    TracingError,
)

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("lean_dojo_v2.lean_dojo.repo")

# Limits for git commands that talk to a remote. A transfer slower than LOW_SPEED_LIMIT bytes/s for
# LOW_SPEED_TIME seconds is abandoned; the subprocess timeout is the backstop for everything else
# (curl's own connect timeout is minutes). Module-level so a caller or a test can tighten them.
GIT_NETWORK_TIMEOUT_S: float = 3600.0
GIT_LOW_SPEED_LIMIT: int = 1000
GIT_LOW_SPEED_TIME_S: int = 60
# Local git commands (rev-parse, cat-file, ls-tree, local clones of large repositories).
GIT_LOCAL_TIMEOUT_S: float = 600.0

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# scp-like syntax, as git reads it: a colon before the first slash (``git@host:owner/repo.git``).
_SCP_RE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^/:\s]+):(?P<path>(?!//).*)$")
_GITHUB_HTTP_RE = re.compile(
    r"^https?://(?:www\.)?github\.com/(?P<owner>[^/\s]+)/(?P<name>[^/\s]+?)(?:\.git)?/*$",
    re.IGNORECASE,
)
_GITHUB_ANY_RE = re.compile(
    r"^(?:https?://(?:www\.)?|ssh://(?:[^@/]+@)?|(?:[^@/]+@)?)github\.com[:/]"
    r"(?P<owner>[^/\s]+)/(?P<name>[^/\s]+?)(?:\.git)?/*$",
    re.IGNORECASE,
)
_FULL_SHA_RE = re.compile(r"^[0-9a-fA-F]{40}$")

TOOLCHAIN_FILE = "lean-toolchain"
MANIFEST_FILE = "lake-manifest.json"
_EXAMPLE_TOOLCHAIN = "leanprover/lean4:v4.22.0"
_PRIVATE_HINT = (
    "Check the URL. For a private repository use an SSH URL (git@github.com:owner/repo.git) or "
    "set up a git credential helper; no GitHub token is needed."
)


class RepoType(Enum):
    GITHUB = "github"
    REMOTE = "remote"
    LOCAL = "local"


# ----------------------------------------------------------------------------------------------
# Running git
# ----------------------------------------------------------------------------------------------


def _git_env(network: bool = False) -> dict[str, str]:
    """The environment for git: never prompt, so that a private or missing repository fails at
    once instead of waiting for a password nobody will type."""
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    # An askpass that answers with the prompt text makes the server reject the login at once; it
    # also overrides core.askPass and SSH_ASKPASS, which could open a GUI prompt.
    env["GIT_ASKPASS"] = "echo"
    env["GCM_INTERACTIVE"] = "never"
    # English messages: they are shown to users in errors and matched in one place.
    env["LC_ALL"] = "C"
    if network and not (env.get("GIT_SSH_COMMAND") or env.get("GIT_SSH")):
        # ssh asks for passphrases and host keys on the terminal itself; BatchMode stops that.
        if not _configured_ssh_command():
            env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes -o ConnectTimeout=30"
    return env


@functools.lru_cache(maxsize=1)
def _configured_ssh_command() -> str:
    # A user's core.sshCommand (a particular key, a jump host) must win over our default, and
    # GIT_SSH_COMMAND would override it, so we only set ours when there is none.
    try:
        result = run_command(["git", "config", "--get", "core.sshCommand"], timeout=30, check=False)
        return result.text().strip()
    except CommandError:
        return ""


def _run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    network_url: str | None = None,
    timeout: float | None = None,
    stdin: bytes | None = None,
) -> CommandResult:
    """Run ``git args`` and return the finished process (never raises on a non-zero exit).

    ``network_url`` marks a command that may talk to that remote: it gets the stall limits and the
    network timeout. A timeout is reported as exit status -1 with a message in stderr.
    """
    cmd = ["git"]
    if network_url is not None:
        cmd += [
            "-c",
            f"http.lowSpeedLimit={GIT_LOW_SPEED_LIMIT}",
            "-c",
            f"http.lowSpeedTime={GIT_LOW_SPEED_TIME_S}",
        ]
    cmd += list(args)
    if timeout is None:
        timeout = GIT_NETWORK_TIMEOUT_S if network_url is not None else GIT_LOCAL_TIMEOUT_S
    logger.debug("running %s (cwd=%s)", " ".join(cmd), cwd)
    try:
        return run_command(
            cmd,
            cwd=cwd,
            env=_git_env(network_url is not None),
            input=stdin,
            timeout=timeout,
            check=False,
        )
    except CommandNotFoundError as exc:
        raise TracingError(
            "git is not installed or not on PATH; install git (e.g. `apt-get install git`, "
            "`brew install git`) and try again"
        ) from exc
    except CommandTimeoutError as exc:
        message = f"\ngit {' '.join(args[:2])} timed out after {timeout:.0f} s"
        return CommandResult(tuple(cmd), -1, exc.stdout, exc.stderr + message.encode())


def _git_checked(
    args: Sequence[str],
    error: type[TracingError],
    what: str,
    advice: str,
    *,
    cwd: Path | None = None,
    network_url: str | None = None,
    stdin: bytes | None = None,
) -> CommandResult:
    """:func:`_run_git`, raising ``error("<what>:\n<end of git's stderr>\n<advice>")`` when git
    fails."""
    proc = _run_git(args, cwd=cwd, network_url=network_url, stdin=stdin)
    if proc.returncode != 0:
        raise error(f"{what}:\n{_tail(proc.stderr)}\n{advice}")
    return proc


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _tail(stderr: bytes, lines: int = 15) -> str:
    return _output_tail(stderr, lines, empty="(git printed nothing)")


def _rev_parse(git_dir: Path, rev: str) -> str | None:
    proc = _run_git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=git_dir)
    if proc.returncode != 0:
        return None
    sha = _text(proc.stdout).strip()
    return sha if _FULL_SHA_RE.match(sha) else None


def _existing_refs(git_dir: Path, limit: int = 8) -> list[str]:
    """A few branches and tags of the repository (newest first) for error messages."""
    proc = _run_git(
        [
            "for-each-ref",
            "--sort=-creatordate",
            f"--count={limit}",
            "--format=%(refname:short)",
            "refs/heads",
            "refs/tags",
        ],
        cwd=git_dir,
    )
    if proc.returncode != 0:
        return []
    return [line for line in _text(proc.stdout).splitlines() if line.strip()]


def _promisor_remote(git_dir: Path) -> str | None:
    """The remote that lazily supplies missing objects, when ``git_dir`` is a partial clone."""
    proc = _run_git(["config", "--get-regexp", r"^remote\..*\.promisor$"], cwd=git_dir)
    for line in _text(proc.stdout).splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lower() in ("true", "yes", "on", "1"):
            return key[len("remote.") : -len(".promisor")]
    return None


def _prefetch_commit_blobs(git_dir: Path, commit: str) -> None:
    """Download in one batch the blobs of ``commit`` that a partial clone lacks.

    A clone made from a blobless mirror cannot check out: its ``origin`` is the mirror, which does
    not have the blobs either. Filling them into the mirror first keeps later checkouts offline.
    """
    remote = _promisor_remote(git_dir)
    if remote is None:
        return
    proc = _git_checked(
        ["rev-list", "--objects", "--no-walk", "--missing=print", "--no-object-names", commit],
        TracingError,
        f"could not list the files of commit {commit} in {git_dir}",
        f"If the cache is damaged, delete {git_dir} and try again.",
        cwd=git_dir,
    )
    missing = [line[1:] for line in _text(proc.stdout).splitlines() if line.startswith("?")]
    if not missing:
        return
    url_proc = _run_git(["config", "--get", f"remote.{remote}.url"], cwd=git_dir)
    url = _text(url_proc.stdout).strip() or remote
    logger.info("fetching %d files of %s from %s", len(missing), commit[:12], url)
    # The same request git itself makes to fill a partial clone, but for all files at once.
    _git_checked(
        [
            "-c",
            "fetch.negotiationAlgorithm=noop",
            "fetch",
            remote,
            "--no-tags",
            "--no-write-fetch-head",
            "--recurse-submodules=no",
            "--filter=blob:none",
            "--stdin",
        ],
        RepoNotFoundError,
        f"could not download the files of commit {commit} from {url}",
        f"{_PRIVATE_HINT} If you are offline, connect and try again.",
        cwd=git_dir,
        network_url=url,
        stdin=("\n".join(missing) + "\n").encode(),
    )


def _url_hash(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def mirror_path(url: str) -> Path:
    """Where the bare mirror of the remote ``url`` is kept: ``<cache_dir>/git/<hash>.git``.

    Deleting it is safe (it is cloned again when needed); copying a bare clone there ahead of
    time lets a machine without network use that remote.
    """
    normalized, _ = _normalize_url(url)
    return get_settings().cache_dir / "git" / f"{_url_hash(normalized)}.git"


# ----------------------------------------------------------------------------------------------
# URLs
# ----------------------------------------------------------------------------------------------


def _looks_remote(url: str) -> bool:
    if _SCHEME_RE.match(url):
        return True
    # An existing local path wins over git's scp-like reading of a colon ("my:dir").
    if Path(url).expanduser().exists():
        return False
    return bool(_SCP_RE.match(url)) and not url.startswith(("/", ".", "~"))


def _normalize_url(url: str) -> tuple[str, RepoType]:
    text = url.strip()
    if not text:
        raise RepoNotFoundError(
            "an empty repository URL was given; pass a git URL (https://github.com/owner/repo) or "
            "the path of a local git repository"
        )
    m = _GITHUB_HTTP_RE.match(text)
    if m:
        return f"https://github.com/{m['owner']}/{m['name']}", RepoType.GITHUB
    if _looks_remote(text):
        return text.rstrip("/"), RepoType.REMOTE
    return str(Path(text).expanduser().resolve()), RepoType.LOCAL


def _url_path_parts(url: str) -> list[str]:
    if _SCHEME_RE.match(url):
        path = urlsplit(url).path
    else:
        m = _SCP_RE.match(url)
        path = m["path"] if m and not Path(url).is_absolute() else url
    return [p for p in path.replace("\\", "/").split("/") if p]


def _strip_git_suffix(name: str) -> str:
    return name[: -len(".git")] if name.endswith(".git") else name


# ----------------------------------------------------------------------------------------------
# LeanGitRepo
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, init=False)
class LeanGitRepo:
    """A Lean 4 project at one commit.

    ``LeanGitRepo(url, commit=None)``: after construction ``url`` is normalised (GitHub URLs
    without ``.git`` or a trailing slash, local paths absolute) and ``commit`` is the full 40-hex
    SHA. Raises :class:`RepoNotFoundError`, :class:`CommitNotFoundError` or
    :class:`NotALeanProjectError` (each message says how to fix it).
    """

    url: str
    commit: str

    def __init__(self, url: str | os.PathLike[str], commit: str | None = None) -> None:
        # A commit of None (the default branch), a tag or a branch is accepted here; the field
        # always holds the full SHA once __post_init__ has resolved it.
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "commit", commit)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.url, (str, os.PathLike)):
            raise TypeError(f"url must be a string or a path, got {type(self.url).__name__}")
        url, kind = _normalize_url(os.fspath(self.url))
        object.__setattr__(self, "url", url)
        self.__dict__["repo_type"] = kind  # fills the cached property
        requested = None if self.commit is None else str(self.commit).strip() or None
        if requested is not None and (
            requested.startswith("-") or any(c.isspace() for c in requested)
        ):
            raise CommitNotFoundError(
                f"{requested!r} is not a valid commit, tag or branch name; pass a commit SHA, a "
                f"tag or a branch of {url}"
            )
        if self.is_local:
            sha = self._resolve_local(requested)
        else:
            sha = self._resolve_remote(requested)
        object.__setattr__(self, "commit", sha)
        if self.toolchain is None:
            raise NotALeanProjectError(
                f"{self.url} has no non-empty {TOOLCHAIN_FILE} file at commit {sha}. Lean 4 "
                f"projects need a {TOOLCHAIN_FILE} file at the root naming their toolchain, such "
                f"as `{_EXAMPLE_TOOLCHAIN}`; add it (echo {_EXAMPLE_TOOLCHAIN} > "
                f"{TOOLCHAIN_FILE}) and commit it (git add {TOOLCHAIN_FILE} && git commit), or "
                "pick a commit that has one."
            )

    # -- construction helpers -----------------------------------------------------------------

    def _resolve_local(self, requested: str | None) -> str:
        import git  # GitPython; imported here so that importing this module stays cheap

        path = Path(self.url)
        if not path.exists():
            raise RepoNotFoundError(
                f"{path} does not exist. Pass the path of a local git repository or a git URL "
                "(https://github.com/owner/repo, git@host:owner/repo.git, file:///path/to/repo)."
            )
        if not path.is_dir():
            raise RepoNotFoundError(
                f"{path} is a file, not a directory; pass the root directory of a git repository"
            )
        try:
            repo = git.Repo(path, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            try:
                parent = git.Repo(path, search_parent_directories=True)
                root = parent.working_tree_dir
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                root = None
            if root is not None:
                raise RepoNotFoundError(
                    f"{path} is inside the git repository {root}, not its root; pass {root} "
                    f"(the {TOOLCHAIN_FILE} file must be at the repository root)"
                ) from None
            raise RepoNotFoundError(
                f"{path} is not a git repository. Tracing reads committed files, so make it one: "
                f"cd {path} && git init && git add -A && git commit -m 'initial commit'"
            ) from None
        try:
            if repo.working_tree_dir is not None and Path(repo.working_tree_dir).resolve() != path:
                raise RepoNotFoundError(
                    f"{path} is inside the git repository {repo.working_tree_dir}, not its root; "
                    f"pass {repo.working_tree_dir}"
                )
            sha = _rev_parse(path, requested or "HEAD")
            if sha is None:
                raise self._commit_not_found(requested, path)
            if not repo.bare and repo.is_dirty(untracked_files=True):
                logger.warning(
                    "%s has uncommitted changes (or untracked files); tracing uses the committed "
                    "state of commit %s, so commit your changes first if they should be traced",
                    path,
                    sha[:12],
                )
        finally:
            repo.close()
        return sha

    def _commit_not_found(self, requested: str | None, git_dir: Path) -> CommitNotFoundError:
        refs = _existing_refs(git_dir)
        what = f"{requested!r}" if requested else "HEAD (the default branch)"
        if refs:
            existing = f"Branches and tags that exist: {', '.join(refs)}."
        else:
            existing = "The repository has no branches or tags (does it have any commits?)."
        return CommitNotFoundError(
            f"{what} is not a commit, tag or branch of {self.url}. {existing} Pass a commit SHA, "
            "a tag or a branch that exists (for a remote repository, check that it was pushed)."
        )

    @property
    def _mirror_dir(self) -> Path:
        return mirror_path(self.url)

    def _resolve_remote(self, requested: str | None) -> str:
        from filelock import FileLock, Timeout

        mirror = self._mirror_dir
        mirror.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(mirror) + ".lock")
        try:
            lock.acquire(timeout=1)
        except Timeout:
            logger.info("waiting for another process that is updating the mirror of %s", self.url)
            lock.acquire()
        try:
            return self._resolve_in_mirror(mirror, requested)
        finally:
            lock.release()

    def _resolve_in_mirror(self, mirror: Path, requested: str | None) -> str:
        fresh = False
        if not _is_git_dir(mirror):
            if mirror.exists():
                logger.warning("removing the damaged mirror %s of %s", mirror, self.url)
                shutil.rmtree(mirror)
            self._clone_mirror(mirror)
            fresh = True
        rev = requested or "HEAD"
        sha = _rev_parse(mirror, rev)
        # A branch (or the default branch) moves, so its cached tip may be stale; a SHA or a tag
        # already in the mirror is final and needs no network.
        moving = requested is None or _is_branch(mirror, requested)
        if not fresh and (sha is None or moving):
            fetch_error = self._fetch_refs(mirror)
            if fetch_error is not None and sha is None:
                raise RepoNotFoundError(
                    f"could not update the mirror of {self.url} to look for {rev!r}:\n"
                    f"{fetch_error}\n{_PRIVATE_HINT}"
                )
            if fetch_error is not None:
                logger.warning(
                    "could not reach %s to update %r; using its last known commit %s",
                    self.url,
                    rev,
                    sha,
                )
            else:
                sha = _rev_parse(mirror, rev)
        if sha is None and requested is not None and _FULL_SHA_RE.match(requested):
            # A commit on no branch or tag (e.g. of a pull request) can still be fetched by its full
            # SHA; servers do not resolve abbreviated ones.
            proc = _run_git(
                ["fetch", "--quiet", "origin", requested], cwd=mirror, network_url=self.url
            )
            if proc.returncode == 0:
                sha = _rev_parse(mirror, requested)
        if sha is None:
            raise self._commit_not_found(requested, mirror)
        return sha

    def _clone_mirror(self, mirror: Path) -> None:
        tmp = mirror.with_name(f"{mirror.name}.tmp-{os.getpid()}")
        if tmp.exists():
            shutil.rmtree(tmp)
        logger.info("cloning %s into the cache %s", self.url, mirror)
        proc = _run_git(
            ["clone", "--bare", "--quiet", "--filter=blob:none", "--", self.url, str(tmp)],
            network_url=self.url,
        )
        if proc.returncode != 0 and b"filter" in proc.stderr.lower():
            # Servers (or old gits) without partial clone: fall back to a full bare clone.
            logger.info("partial clone refused for %s; making a full clone", self.url)
            shutil.rmtree(tmp, ignore_errors=True)
            proc = _run_git(
                ["clone", "--bare", "--quiet", "--", self.url, str(tmp)], network_url=self.url
            )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RepoNotFoundError(
                f"could not clone {self.url}:\n{_tail(proc.stderr)}\n{_PRIVATE_HINT}"
            )
        os.replace(tmp, mirror)

    def _fetch_refs(self, mirror: Path) -> str | None:
        """Update branches and tags of the mirror; the error text on failure, else None."""
        proc = _run_git(
            [
                "fetch",
                "--quiet",
                "--update-head-ok",
                "origin",
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ],
            cwd=mirror,
            network_url=self.url,
        )
        return None if proc.returncode == 0 else _tail(proc.stderr)

    def _git_dir(self) -> Path:
        """Where git commands read this repository: the local path, or the cached mirror (cloned
        again if the cache was emptied since construction)."""
        if self.is_local:
            return Path(self.url)
        mirror = self._mirror_dir
        if not _is_git_dir(mirror) or _rev_parse(mirror, self.commit) is None:
            self._resolve_remote(self.commit)
        return mirror

    # -- identity -----------------------------------------------------------------------------

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> LeanGitRepo:
        """The local repository at ``path``, at its current HEAD."""
        return cls(str(Path(path).expanduser().resolve()), None)

    @functools.cached_property
    def repo_type(self) -> RepoType:
        return _normalize_url(self.url)[1]

    @property
    def is_local(self) -> bool:
        return self.repo_type is RepoType.LOCAL

    @property
    def name(self) -> str:
        """The repository's name: the last URL component without ``.git`` (the directory name
        for a local repository)."""
        if self.is_local:
            return _strip_git_suffix(Path(self.url).name)
        parts = _url_path_parts(self.url)
        return _strip_git_suffix(parts[-1]) if parts else _strip_git_suffix(self.url)

    @property
    def owner(self) -> str | None:
        """The component before the name in a URL (GitHub's owner); None for a local path."""
        if self.is_local:
            return None
        parts = _url_path_parts(self.url)
        if len(parts) >= 2:
            return parts[-2]
        host = urlsplit(self.url).hostname if _SCHEME_RE.match(self.url) else None
        return host or None

    @property
    def cache_dirname(self) -> str:
        """``<owner>-<name>-<commit>`` for URLs, ``<name>-<commit>`` for local repositories."""
        owner = self.owner
        return f"{owner}-{self.name}-{self.commit}" if owner else f"{self.name}-{self.commit}"

    def __str__(self) -> str:
        return f"{self.url}@{self.commit}"

    # -- files at the commit --------------------------------------------------------------------

    def _blob_id(self, filename: str, git_dir: Path) -> str | None:
        """The blob of ``filename`` at the commit, or None when there is no such file."""
        path = posixpath.normpath(filename.replace("\\", "/")).lstrip("/")
        if path in ("", ".") or path.startswith(("../", "-")):
            return None
        # ls-tree reads only trees, which a blobless mirror has: "missing" is then told apart
        # from "the blob still has to be downloaded".
        listing = _git_checked(
            ["ls-tree", "-z", self.commit, "--", path],
            TracingError,
            f"could not list {path} at {self.commit} in {self.url}",
            "If the cache is damaged, delete it and try again.",
            cwd=git_dir,
        )
        entry = _text(listing.stdout).split("\0", 1)[0]
        meta, _, entry_path = entry.partition("\t")
        fields = meta.split()
        if entry_path != path or len(fields) != 3 or fields[1] != "blob":
            return None
        return fields[2]

    def _read_file(self, filename: str) -> bytes | None:
        git_dir = self._git_dir()
        blob = self._blob_id(filename, git_dir)
        if blob is None:
            return None
        proc = _git_checked(
            ["cat-file", "blob", blob],
            RepoNotFoundError,
            f"could not read {filename} of {self.url} at {self.commit}",
            _PRIVATE_HINT,
            cwd=git_dir,
            network_url=self.url,
        )
        return proc.stdout

    def get_config(self, filename: str) -> str | dict[str, Any] | None:
        """The text of ``filename`` (relative to the root) at the commit; parsed when it ends in
        ``.json``; None when the file does not exist. Nothing is checked out."""
        data = self._read_file(filename)
        if data is None:
            return None
        text = data.decode("utf-8", errors="replace")
        if filename.endswith(".json"):
            try:
                value = loads(text)
            except DataFormatError as exc:
                raise DataFormatError(
                    f"not valid JSON at commit {self.commit} of {self.url} ({exc}); fix the file "
                    "and commit it",
                    file=filename,
                ) from exc
            if not isinstance(value, dict):
                raise DataFormatError(
                    f"expected a JSON object at commit {self.commit} of {self.url}, got "
                    f"{type(value).__name__}",
                    file=filename,
                )
            return value
        return text

    @functools.cached_property
    def toolchain(self) -> str | None:
        """The first line of ``lean-toolchain``, e.g. ``leanprover/lean4:v4.9.0``."""
        text = self.get_config(TOOLCHAIN_FILE)
        if not isinstance(text, str):
            return None
        for line in text.splitlines():
            if line.strip():
                return line.strip()
        return None

    @property
    def lean_version(self) -> str:
        """The toolchain's version part, e.g. ``v4.9.0`` for ``leanprover/lean4:v4.9.0``."""
        toolchain = self.toolchain or ""
        return toolchain.rsplit(":", 1)[-1].strip()

    def uses_lakefile_lean(self) -> bool:
        return self._read_exists("lakefile.lean")

    def uses_lakefile_toml(self) -> bool:
        return self._read_exists("lakefile.toml")

    def _read_exists(self, filename: str) -> bool:
        return self._blob_id(filename, self._git_dir()) is not None

    def get_dependencies(self) -> dict[str, dict[str, Any]]:
        """Dependencies pinned by ``lake-manifest.json`` at the commit: name → ``{"type": "git",
        "url", "rev", "inputRev", "scope"}`` or ``{"type": "path", "dir", "scope"}``. Reads both
        the old manifest layout (``{"git": {...}}`` per package) and the flat one. Empty when
        there is no manifest."""
        manifest = self.get_config(MANIFEST_FILE)
        if manifest is None:
            return {}
        assert isinstance(manifest, dict)
        packages = manifest.get("packages", [])
        if not isinstance(packages, list):
            raise DataFormatError(
                f"'packages' must be a list (commit {self.commit} of {self.url})",
                file=MANIFEST_FILE,
                field="packages",
            )
        deps: dict[str, dict[str, Any]] = {}
        for index, package in enumerate(packages):
            dep = _manifest_entry(package)
            if dep is None:
                raise DataFormatError(
                    f"unrecognised package entry {package!r} (commit {self.commit} of {self.url})",
                    file=MANIFEST_FILE,
                    record=index,
                )
            name, value = dep
            deps[name] = value
        return deps

    # -- checkouts ------------------------------------------------------------------------------

    def clone_and_checkout(self, dst: str | os.PathLike[str]) -> Path:
        """Clone into ``dst`` (which must not exist or be empty), check out the commit detached,
        initialise submodules; returns ``dst`` as an absolute path."""
        root = Path(dst).expanduser().resolve()
        existed = root.exists()
        if existed and (not root.is_dir() or any(root.iterdir())):
            raise DestinationExistsError(
                f"{root} exists and is not an empty directory; remove it or pass a new path"
            )
        source = self._git_dir()
        if not self.is_local:
            from filelock import FileLock

            with FileLock(str(source) + ".lock"):
                _prefetch_commit_blobs(source, self.commit)
        else:
            _prefetch_commit_blobs(source, self.commit)
        try:
            self._clone_into(source, root)
        except BaseException:
            if root.exists():
                shutil.rmtree(root, ignore_errors=True)
            if existed:
                root.mkdir(parents=True, exist_ok=True)
            raise
        return root

    def _clone_into(self, source: Path, root: Path) -> None:
        root.parent.mkdir(parents=True, exist_ok=True)
        _git_checked(
            ["clone", "--quiet", "--no-checkout", "--", str(source), str(root)],
            RepoNotFoundError,
            f"could not clone {source} into {root}",
            "Check that there is free disk space and that the directory is writable.",
        )
        if not self.is_local:
            # origin should be the real remote (relative submodule URLs resolve against it), and
            # if the mirror is blobless, this clone must know where to fetch older blobs from.
            _git_checked(
                ["remote", "set-url", "origin", self.url],
                TracingError,
                f"git could not set origin of {root}",
                "Check that the directory is writable.",
                cwd=root,
            )
            if _promisor_remote(source) is not None:
                for key in ("promisor", "partialclonefilter"):
                    value = _run_git(["config", "--get", f"remote.origin.{key}"], cwd=source)
                    if value.returncode == 0:
                        _run_git(
                            ["config", f"remote.origin.{key}", _text(value.stdout).strip()],
                            cwd=root,
                        )
        _git_checked(
            ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", self.commit],
            TracingError,
            f"could not check out {self.commit} of {self.url} in {root}",
            f"If the cache is damaged, delete "
            f"{source if not self.is_local else 'the destination'} and try again.",
            cwd=root,
            network_url=self.url,
        )
        if (root / ".gitmodules").is_file():
            _git_checked(
                ["submodule", "update", "--init", "--recursive", "--quiet"],
                RepoNotFoundError,
                f"could not fetch the git submodules of {self.url} at {self.commit}",
                f"Check the URLs in .gitmodules; {_PRIVATE_HINT}",
                cwd=root,
                network_url=self.url,
            )

    # -- optional GitHub metadata -----------------------------------------------------------------

    def github_metadata(
        self, *, transport: httpx.BaseTransport | None = None
    ) -> dict[str, Any] | None:
        """Description, stars, licence, default branch and page of a GitHub repository, from the
        GitHub API; None without a token (no request is made), for repositories not on GitHub, or
        when the request fails (metadata is optional, so failures are only logged)."""
        token = get_settings().github_token
        m = _GITHUB_ANY_RE.match(self.url) if not self.is_local else None
        if not token or m is None:
            return None
        import httpx

        owner, name = m["owner"], _strip_git_suffix(m["name"])
        api = f"https://api.github.com/repos/{owner}/{name}"
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "lean-dojo-v2",
        }
        try:
            with httpx.Client(transport=transport, timeout=10.0) as client:
                response = client.get(api, headers=headers)
                response.raise_for_status()
                data = response.json()
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            hint = " (check GITHUB_ACCESS_TOKEN)" if status in (401, 403) else ""
            logger.warning("GitHub metadata of %s/%s: HTTP %d%s", owner, name, status, hint)
            return None
        except (httpx.HTTPError, ValueError) as exc:
            logger.warning("GitHub metadata of %s/%s unavailable: %s", owner, name, exc)
            return None
        if not isinstance(data, dict):
            logger.warning("GitHub metadata of %s/%s: unexpected answer", owner, name)
            return None
        license_info = data.get("license")
        license_id = None
        if isinstance(license_info, dict):
            license_id = license_info.get("spdx_id") or license_info.get("name")
        return {
            "description": data.get("description"),
            "stars": data.get("stargazers_count"),
            "license": license_id,
            "default_branch": data.get("default_branch"),
            "html_url": data.get("html_url"),
        }


def _is_git_dir(path: Path) -> bool:
    if not (path / "HEAD").is_file():
        return False
    proc = _run_git(["rev-parse", "--git-dir"], cwd=path)
    return proc.returncode == 0


def _is_branch(git_dir: Path, name: str) -> bool:
    if name.startswith("refs/heads/"):
        return True
    if _rev_parse(git_dir, f"refs/tags/{name}") is not None:
        return False  # rev-parse prefers a tag over a branch of the same name
    proc = _run_git(["show-ref", "--verify", "--quiet", f"refs/heads/{name}"], cwd=git_dir)
    return proc.returncode == 0


def _manifest_entry(package: object) -> tuple[str, dict[str, Any]] | None:
    """One ``packages[i]`` of a manifest as (name, fields), for both manifest layouts."""
    if not isinstance(package, dict):
        return None
    if "type" in package:
        kind, body = package["type"], package
    elif len(package) == 1 and next(iter(package)) in ("git", "path"):
        # Old manifests (versions up to 6) nest each package under its kind.
        kind, body = next(iter(package.items()))
        if not isinstance(body, dict):
            return None
    else:
        return None
    name = body.get("name")
    if not isinstance(name, str):
        return None
    scope = body.get("scope", "")
    if kind == "path":
        return name, {"type": "path", "dir": body.get("dir"), "scope": scope}
    if kind == "git":
        input_rev = body.get("inputRev", body.get("inputRev?"))
        return name, {
            "type": "git",
            "url": body.get("url"),
            "rev": body.get("rev"),
            "inputRev": input_rev,
            "scope": scope,
        }
    return None
