"""v1's ``Pos``, ``LeanGitRepo`` and ``Theorem`` (``lean_dojo.data_extraction.lean``).

``LeanGitRepo(url, commit)`` here only records its two fields: v1 code builds one per theorem
from benchmark JSON, and replay must work offline. Anything else v1's class offered
(``get_config``, ``clone_and_checkout``, ``lean_version``…) is answered by the library's own
:class:`lean_dojo_v2.lean_dojo.LeanGitRepo`, built on first such use (it resolves the commit
through git, which may need the network, as v1 did).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..data.model import Pos as _Pos
from .errors import V1ArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from ..lean_dojo.repo import LeanGitRepo as ResolvedRepo

_POS_TEXT = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


class Pos(_Pos):
    """A 1-based ``(line_nb, column_nb)`` position: the library's own ``Pos`` (a named tuple, so it
    iterates, orders and prints as ``(3, 7)`` like v1's) with v1's ``from_str``."""

    __slots__ = ()

    @classmethod
    def from_str(cls, s: str) -> Pos:
        """``"(323, 1109)"`` → ``Pos(323, 1109)``."""
        m = _POS_TEXT.match(s.strip()) if isinstance(s, str) else None
        if m is None:
            raise V1ArgumentError(f"not a position: {s!r}; write it as '(line, column)'")
        return cls(int(m.group(1)), int(m.group(2)))


def _normalize_url(url: str) -> str:
    url = url.strip()
    if "://" in url or url.startswith("git@"):
        url = url.rstrip("/")
        return url[: -len(".git")] if url.endswith(".git") else url
    return str(Path(url).expanduser().resolve()) if Path(url).expanduser().exists() else url


@dataclass(frozen=True)
class LeanGitRepo:
    """A git repository at a commit, as v1 code names one: ``LeanGitRepo(url, commit)``.

    ``url`` loses a trailing ``/`` and ``.git``; an existing local path becomes absolute.
    ``commit`` is required, as in v1, and kept as given (v1 turned tags into SHAs through GitHub;
    the library's own repository, see :meth:`resolved`, does that through git). A missing or
    ``None`` commit is a :class:`V1ArgumentError` (v1 failed on it with a bare ``TypeError``)."""

    url: str
    # The default only lets a missing commit reach the typed error below.
    commit: str = ""
    _resolved: ResolvedRepo | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.url, (str, os.PathLike)) or not os.fspath(self.url).strip():
            raise V1ArgumentError(
                f"LeanGitRepo's url must be a git URL or a local path, not {self.url!r}"
            )
        if not isinstance(self.commit, str) or not self.commit.strip():
            raise V1ArgumentError(
                f"LeanGitRepo's commit must be a commit SHA, tag or branch name, not "
                f"{self.commit!r}; name the commit the theorems were traced at (a dataset "
                "record's 'commit'), or lean_dojo_v2.lean_dojo.LeanGitRepo(url).commit for the "
                "default branch's latest"
            )
        object.__setattr__(self, "url", _normalize_url(os.fspath(self.url)))
        object.__setattr__(self, "commit", self.commit.strip())

    def __getstate__(self) -> dict[str, Any]:
        # The resolved repository is a cache (and holds locks and paths of this machine).
        return {"url": self.url, "commit": self.commit, "_resolved": None}

    @property
    def name(self) -> str:
        """The last component of the URL (the directory name of a local path)."""
        return PurePosixPath(self.url.replace("\\", "/")).name

    @property
    def commit_url(self) -> str:
        return f"{self.url}/tree/{self.commit}"

    @property
    def is_lean4(self) -> bool:
        """Whether this is Lean 4's own repository (v1's meaning)."""
        return self.url == "https://github.com/leanprover/lean4"

    @property
    def is_local(self) -> bool:
        return Path(self.url).is_dir()

    def resolved(self) -> ResolvedRepo:
        """The library's :class:`lean_dojo_v2.lean_dojo.LeanGitRepo` for this URL and commit
        (built once; it may clone through git)."""
        resolved = self._resolved
        if resolved is None:
            from ..lean_dojo.repo import LeanGitRepo as ResolvedRepo

            resolved = ResolvedRepo(self.url, self.commit)
            object.__setattr__(self, "_resolved", resolved)
        return resolved

    def __getattr__(self, name: str) -> Any:
        # Only called for names this class lacks: the rest of v1's LeanGitRepo API.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.resolved(), name)

    def __str__(self) -> str:
        return f"LeanGitRepo(url='{self.url}', commit='{self.commit}')"


def _relative_lean_path(file_path: object) -> Path:
    if not isinstance(file_path, (str, os.PathLike)):
        raise V1ArgumentError(
            f"Theorem's file_path must be a path relative to the repository, not {file_path!r}"
        )
    path = Path(os.fspath(file_path))
    if path.suffix != ".lean":
        raise V1ArgumentError(f"File extension must be .lean: {path} (name a Lean source file)")
    return path


@dataclass(frozen=True)
class Theorem:
    """A theorem of a repository: ``Theorem(repo, file_path, full_name)``, as in v1.

    ``file_path`` becomes a ``Path`` and must name a ``.lean`` file; whether it lies inside the
    repository is checked when a :class:`~lean_dojo_v2.v1.Dojo` starts the theorem."""

    repo: LeanGitRepo
    file_path: Path
    full_name: str

    def __post_init__(self) -> None:
        if type(self.repo).__module__ == "lean_dojo_v2.lean_dojo.repo":
            # The library's own repository names the same thing (and is resolved already).
            object.__setattr__(self, "repo", LeanGitRepo(self.repo.url, self.repo.commit))
        if not isinstance(self.repo, LeanGitRepo):
            raise V1ArgumentError(
                f"Theorem's repo must be a LeanGitRepo(url, commit), not {type(self.repo).__name__}"
            )
        object.__setattr__(self, "file_path", _relative_lean_path(self.file_path))
        if not isinstance(self.full_name, str) or not self.full_name.strip():
            raise V1ArgumentError(
                f"Theorem's full_name must be the theorem's fully qualified name, not "
                f"{self.full_name!r}"
            )

    @property
    def uid(self) -> str:
        """A string that identifies the theorem: repository, commit, file and name."""
        return f"{self.repo.url}@{self.repo.commit}:{self.file_path}:{self.full_name}"

    @property
    def uhash(self) -> str:
        """A hash of :attr:`uid` that is the same in every process (v1's used ``hash``, which
        Python salts per process)."""
        import hashlib

        return hashlib.sha256(self.uid.encode("utf-8")).hexdigest()[:16]


__all__ = ["LeanGitRepo", "Pos", "Theorem"]
