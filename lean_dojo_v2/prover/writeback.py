"""Write found proofs back into Lean source: ``sorry`` out, the proof in, in a working copy.

Safety rules (``docs/proving.md``):

- The user's checkout is never modified unless they ask for it (``in_place=True``, the CLI's
  ``--in-place``). By default the proofs go into a *working copy* in a directory this library
  creates (:func:`~lean_dojo_v2.data.output_dir.staged_output_dir`: new, empty or one we wrote;
  never the repository itself or a directory inside it): a ``git clone --local`` of the
  repository at its ``HEAD`` (or the commit asked for) when it is a git repository, otherwise a
  copy without its ``.lake`` build directory. Nothing in the user's repository is written, not
  even its ``.git`` (no worktree entry, no branch, no index refresh).
- A working copy is replaced by the next write-back only while it holds nothing we did not write:
  each records what it held when written (:data:`RECORD`: files, git refs, HEAD, index), and a
  commit, branch, staged, added, edited or deleted file since then keeps it. The default working
  copy (``RAID_DIR/writeback/<repo name>``) then moves on to ``<repo name>-2``, ``-3``, ... with a
  warning; an ``out`` the caller named is refused (:class:`~lean_dojo_v2.errors.OutputExistsError`)
  unless ``force``.
- In each file only the proof of each proved theorem changes: the text of its proof (the span
  :func:`~lean_dojo_v2.data.lean_lexer.proof_span` finds after the declaration's top-level
  ``:=``, which must contain a real ``sorry``) becomes ``by`` and the tactic block, indented two
  spaces past the declaration's own indentation, with the file's line endings. This is the text
  ``PantographEnv.verify`` checks. Every other character of the file is unchanged (CRLF, tabs,
  non-ASCII text, comments, a missing final newline).
- Every edit of a call is located before anything is written; a theorem whose ``sorry`` is not
  found raises :class:`SorryNotFoundError` (or is skipped and reported, ``missing="skip"``), and
  a failure leaves no half-written working copy behind.

The result holds a unified diff (``a/``/``b/`` paths relative to the repository root, ``git
apply`` takes it) and, with ``branch``, the branch and commit made in the working copy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.jsonio import loads
from ..data.lean_lexer import Positions, declaration_context, index_of, proof_span, tokenize
from ..data.model import Pos, Theorem
from ..data.sorry import find_declarations
from ..errors import LeanDojoError

if TYPE_CHECKING:
    from .result import SearchResult

logger = logging.getLogger(__name__)

__all__ = [
    "RECORD",
    "ProofEdit",
    "SorryNotFoundError",
    "WriteBackError",
    "WriteBackResult",
    "WriteBackTarget",
    "check_write_back",
    "edits_from_results",
    "insert_proof",
    "insert_proofs",
    "locate_sorry",
    "missing_files",
    "unified_diff",
    "working_copy_changes",
    "write_back",
]

# What a copy of a non-git directory leaves out: Lake's build directory (gigabytes of .olean).
_COPY_IGNORE = (".lake", "lake-packages")
_GIT_TIMEOUT = 600.0
_DEFAULT_AUTHOR = ("lean-dojo-v2", "lean-dojo-v2@localhost")
DIFF_FILE = ".lean_dojo_v2_proofs.diff"
RECORD = ".lean_dojo_v2_writeback.json"
"""What a working copy held when :func:`write_back` wrote it (see :func:`working_copy_changes`)."""
_DEFAULT_COPIES = 100  # RAID_DIR/writeback/<name>, <name>-2, ... <name>-100


class WriteBackError(LeanDojoError):
    """Proofs cannot be written back as asked: the repository directory does not exist, a
    branch was asked for where there is no git repository (or together with ``in_place``), a
    file of an edit is missing or not UTF-8, or two edits overlap."""


class SorryNotFoundError(WriteBackError, LookupError):
    """The theorem's ``sorry`` was not found in its file: no declaration of that name at (or
    near) its start, a declaration without a ``:=`` proof, or a proof without ``sorry`` (it is
    proved already). ``full_name`` and ``file_path`` say which."""

    def __init__(self, message: str, full_name: str = "", file_path: str = "") -> None:
        super().__init__(message)
        self.full_name = full_name
        self.file_path = file_path

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.full_name, self.file_path))


@dataclass(frozen=True)
class ProofEdit:
    """One proof to write: the theorem's file (relative to the repository root), its full name,
    its start (LeanDojo's 1-based line and column of the declaration) and the tactic text
    (what follows ``by``; one tactic per line, multi-line tactics kept, a leading ``by``
    accepted)."""

    file_path: str
    full_name: str
    start: Pos | tuple[int, int] | None
    proof: str

    @classmethod
    def of(cls, theorem: Theorem, proof: str | Sequence[str]) -> ProofEdit:
        """The edit writing ``proof`` (tactic text, or a list of tactics) into ``theorem``."""
        return cls(theorem.file_path, theorem.full_name, theorem.start, _as_text(proof))


def _as_text(proof: str | Sequence[str]) -> str:
    if isinstance(proof, str):
        return proof
    from .result import proof_text

    return proof_text(list(proof))


def edits_from_results(
    results: Iterable[SearchResult], theorems: Iterable[Theorem]
) -> tuple[list[ProofEdit], list[str]]:
    """Edits for the proved results, matched to ``theorems`` by (full name, file path).

    Returns the edits and the names of proved results with no theorem among ``theorems``
    (nothing to locate them by)."""
    by_key = {(t.full_name, t.file_path): t for t in theorems}
    edits, unmatched = [], []
    for result in results:
        if result.status != "proved" or not result.proof:
            continue
        theorem = by_key.get((result.theorem, result.file_path))
        if theorem is None:
            unmatched.append(result.theorem)
            continue
        edits.append(ProofEdit.of(theorem, result.proof))
    return edits, unmatched


# -- the text edit --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SorrySite:
    """Where a proof goes: ``source[begin:end]`` (the declaration's proof, holding a ``sorry``)
    is replaced by ``by`` and the tactic block indented by ``indent``, lines joined by
    ``newline``."""

    begin: int
    end: int
    indent: str
    newline: str
    declaration_start: int


def _line_start(source: str, index: int) -> int:
    return source.rfind("\n", 0, index) + 1


def _newline_at(source: str, index: int) -> str:
    """The line ending of the line holding ``index`` (the file's, when that line has none)."""
    end = source.find("\n", index)
    if end < 0:
        end = source.rfind("\n")
        if end < 0:
            return "\n"
    return "\r\n" if end > 0 and source[end - 1] == "\r" else "\n"


def _declared_at(source: str, index: int) -> int | None:
    """Start index of the declaration command at ``index`` (its keyword or any index inside its
    header), or None."""
    try:
        return declaration_context(source, index).command.start
    except ValueError:
        return None


def _name_matches(declared: str | None, full_name: str) -> bool:
    if declared is None:
        return False
    return declared == full_name or full_name.endswith("." + declared)


def locate_sorry(source: str, full_name: str, start: Pos | tuple[int, int] | None) -> SorrySite:
    """Find the proof of ``full_name`` to replace in ``source``.

    The declaration at ``start`` is taken when its name is ``full_name`` (or its last
    components); otherwise (the file changed since it was traced) the one declaration of that
    name in the file. Raises :class:`SorryNotFoundError` when there is none, when it has no
    ``:=`` proof, or when its proof holds no real ``sorry``."""
    declarations = find_declarations(source)
    position = Positions(source)
    by_start = {index_of(source, *d.start): d for d in declarations}
    decl_start = None
    if start is not None:
        try:
            at = _declared_at(source, index_of(source, start[0], start[1]))
        except ValueError:
            at = None
        if at is not None and _name_matches(getattr(by_start.get(at), "name", None), full_name):
            decl_start = at
    if decl_start is None:
        named = [i for i, d in by_start.items() if _name_matches(d.name, full_name)]
        exact = [i for i in named if by_start[i].name == full_name]
        named = exact or named
        if len(named) != 1:
            where = f" at line {start[0]}" if start is not None else ""
            why = "no declaration" if not named else f"{len(named)} declarations"
            raise SorryNotFoundError(
                f"{why} named {full_name!r} in the file{where}: check that the working copy is "
                "at the commit the theorem was traced from (pass its commit)",
                full_name,
            )
        decl_start = named[0]
        if start is not None:
            logger.info(
                "%s: not at line %d any more; found it at line %d",
                full_name,
                start[0],
                position(decl_start)[0],
            )
    span = proof_span(source, decl_start)
    line = position(decl_start)[0]
    if span is None:
        raise SorryNotFoundError(
            f"{full_name} (line {line}) has no ':=' proof to replace (pattern-matching "
            "definitions and `where` structures are not supported)",
            full_name,
        )
    begin, end = span
    if not any(
        t.kind == "ident" and t.text == "sorry" and source[t.start - 1 : t.start] != "."
        for t in tokenize(source[:end], begin)
    ):
        raise SorryNotFoundError(
            f"the proof of {full_name} (line {line}) has no sorry: it is proved already "
            "(nothing to write back)",
            full_name,
        )
    head = source[_line_start(source, decl_start) : decl_start]
    indent = head[: len(head) - len(head.lstrip(" \t"))] + "  "
    return SorrySite(begin, end, indent, _newline_at(source, decl_start), decl_start)


def proof_block(proof: str, indent: str = "  ", newline: str = "\n") -> str:
    """``by`` and the tactic block of ``proof`` indented by ``indent`` under it
    (:func:`lean_dojo_v2.data.lean_lexer.tactic_block`); an empty proof is refused."""
    from ..data.lean_lexer import tactic_block, tactic_block_lines

    if not any(line.strip() for line in tactic_block_lines(proof)):
        raise ValueError("an empty proof cannot be written back")
    return tactic_block(proof, indent, newline)


def insert_proofs(
    source: str, edits: Sequence[tuple[str, Pos | tuple[int, int] | None, str]]
) -> str:
    """``source`` with each ``(full_name, start, proof)`` written in place of that theorem's
    ``sorry`` proof (see :func:`locate_sorry`); every other character unchanged. All edits are
    located in the original text first; two edits of one declaration raise
    :class:`WriteBackError`."""
    sites = []
    for full_name, start, proof in edits:
        site = locate_sorry(source, full_name, start)
        sites.append((site, proof_block(proof, site.indent, site.newline), full_name))
    sites.sort(key=lambda s: s[0].begin)
    for (a, _, name_a), (b, _, name_b) in zip(sites, sites[1:], strict=False):
        if b.begin < a.end:
            raise WriteBackError(
                f"two proofs for one declaration ({name_a} and {name_b}); write one of them"
            )
    out, last = [], 0
    for site, block, _ in sites:
        out.append(source[last : site.begin])
        out.append(block)
        last = site.end
    out.append(source[last:])
    return "".join(out)


def insert_proof(
    source: str, full_name: str, start: Pos | tuple[int, int] | None, proof: str
) -> str:
    """``source`` with ``proof`` in place of the ``sorry`` proof of ``full_name``."""
    return insert_proofs(source, [(full_name, start, proof)])


# -- the diff ------------------------------------------------------------------------------------


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A unified diff of one file (``a/path``, ``b/path``), exact for ``git apply``: line ends
    (``\\r\\n`` too) are part of the lines, and a last line without a newline gets git's
    ``\\ No newline at end of file`` marker."""
    import difflib

    if old == new:
        return ""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=context,
    )
    out = [f"diff --git a/{path} b/{path}\n"]
    for line in lines:
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\n").rstrip() + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


# -- the working copy ----------------------------------------------------------------------------


@dataclass
class WriteBackResult:
    """What :func:`write_back` did: the directory edited (the working copy, or the repository
    itself with ``in_place``), the unified diff of every file changed (relative paths), the
    names written, those skipped with the reason, and the branch and commit made (or None)."""

    workdir: Path
    diff: str
    files: list[str]
    written: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    branch: str | None = None
    commit: str | None = None
    in_place: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "workdir": str(self.workdir),
            "files": self.files,
            "written": self.written,
            "skipped": self.skipped,
            "branch": self.branch,
            "commit": self.commit,
            "in_place": self.in_place,
        }

    def report(self) -> dict[str, Any]:
        """:meth:`to_dict` plus ``diff_file``: the diff saved as ``.lean_dojo_v2_proofs.diff`` in
        the working copy (None in place, where git shows it, or without changes), so that
        ``git apply`` can replay it on another checkout."""
        info = self.to_dict()
        info["diff_file"] = None
        if self.diff and not self.in_place:
            diff_file = self.workdir / DIFF_FILE
            diff_file.write_bytes(self.diff.encode("utf-8"))
            info["diff_file"] = str(diff_file)
        return info


_FSCK_HINT = "check that the repository is a healthy git repository (git fsck)"


def _git(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    hint: str = _FSCK_HINT,
) -> str:
    from ..system.commands import run_command

    result = run_command(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})} if env else None,
        timeout=_GIT_TIMEOUT,
        hint=hint,
    )
    return result.text().strip()


def _is_git_root(path: Path) -> bool:
    return (path / ".git").exists()


def _read_text(path: Path, rel: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WriteBackError(
            f"{rel} is not in the working copy: pass the repository the theorems were traced "
            "from (and their commit)"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WriteBackError(f"{rel} is not UTF-8 text ({exc}); Lean files are UTF-8") from None


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 bytes exactly (no newline translation), keeping the file's mode."""
    mode = path.stat().st_mode
    tmp = path.with_name(f".{path.name}.ldv2-{os.getpid()}.tmp")
    tmp.write_bytes(text.encode("utf-8"))
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _plan(
    root: Path, edits: Sequence[ProofEdit], missing: str
) -> tuple[dict[str, tuple[str, str]], list[str], dict[str, str]]:
    """Per file: (old text, new text); the names written; the names skipped with the reason."""
    by_file: dict[str, list[ProofEdit]] = {}
    for edit in edits:
        by_file.setdefault(edit.file_path, []).append(edit)
    changes: dict[str, tuple[str, str]] = {}
    written: list[str] = []
    skipped: dict[str, str] = {}
    for rel, file_edits in by_file.items():
        try:
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise WriteBackError(f"{rel!r} is not a path inside the repository")
            old = _read_text(root / rel, rel)
        except WriteBackError as exc:
            if missing != "skip":
                raise
            for edit in file_edits:
                skipped[edit.full_name] = str(exc)
            logger.warning("not written back: %s", exc)
            continue
        keep = []
        for edit in file_edits:
            try:
                locate_sorry(old, edit.full_name, edit.start)
            except SorryNotFoundError as exc:
                if missing != "skip":
                    raise SorryNotFoundError(f"{rel}: {exc}", edit.full_name, rel) from None
                skipped[edit.full_name] = str(exc)
                logger.warning("not written back: %s: %s", rel, exc)
                continue
            keep.append(edit)
        if not keep:
            continue
        new = insert_proofs(old, [(e.full_name, e.start, e.proof) for e in keep])
        changes[rel] = (old, new)
        written.extend(e.full_name for e in keep)
    return changes, written, skipped


def _apply(root: Path, changes: Mapping[str, tuple[str, str]]) -> str:
    diff = []
    for rel in sorted(changes):
        old, new = changes[rel]
        _write_text(root / rel, new)
        diff.append(unified_diff(rel, old, new))
    return "".join(diff)


def _author_env(root: Path) -> dict[str, str]:
    """Author/committer variables for a commit where git has no identity configured."""
    from ..system.commands import run_command

    env: dict[str, str] = {}
    for key, var, default in (
        ("user.name", "NAME", _DEFAULT_AUTHOR[0]),
        ("user.email", "EMAIL", _DEFAULT_AUTHOR[1]),
    ):
        found = run_command(["git", "config", key], cwd=root, check=False, timeout=60)
        if not found.ok or not found.stdout.strip():
            env[f"GIT_AUTHOR_{var}"] = env[f"GIT_COMMITTER_{var}"] = default
    return env


def _clone(repo: Path, dst: Path, commit: str | None) -> str:
    """``git clone --local`` of ``repo`` into the empty ``dst`` at ``commit`` (default: the
    repository's ``HEAD``), detached; returns the commit. Reads ``repo`` only.

    The objects are hard-linked where the filesystem allows it, else copied (``--no-hardlinks``):
    ``dst`` on another device than ``repo`` (``RAID_DIR`` on another disk, a tmpfs) makes git's
    ``--local`` clone fail with "Invalid cross-device link" instead of copying."""
    from ..errors import CommandFailedError

    rev = commit or "HEAD"
    sha = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo)
    hint = f"check that {dst.parent} is writable and has room for a copy of {repo}"
    clone = ["clone", "--quiet", "--local", "--no-checkout"]
    try:
        # In the C locale git's message is the English one looked for below.
        _git([*clone, str(repo), str(dst)], repo.parent, {"LC_ALL": "C"}, hint=hint)
    except CommandFailedError as exc:
        if b"failed to create link" not in exc.stderr:
            raise
        logger.info(
            "cannot hard-link the objects of %s into %s (%s); copying them instead",
            repo,
            dst,
            exc.stderr.decode("utf-8", "replace").strip().rsplit(": ", 1)[-1],
        )
        # git leaves what it had made of the clone; the copy needs the directory empty again.
        for entry in list(dst.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        _git([*clone, "--no-hardlinks", str(repo), str(dst)], repo.parent, hint=hint)
    _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha], dst)
    return sha


def _snapshot(root: Path) -> dict[str, Any]:
    """What working copy ``root`` holds, cheaply: each file's size and modification time (its
    ``.git`` and our own files left out) and, in a git working copy, HEAD, every ref and the
    index's entries."""
    from ..data.output_dir import MARKER

    ours = {MARKER, RECORD, DIFF_FILE}
    files: dict[str, list[int]] = {}
    for dirpath, dirs, names in os.walk(root):
        here = Path(dirpath)
        if here == root:
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in names + [d for d in dirs if (here / d).is_symlink()]:
            rel = (here / name).relative_to(root).as_posix()
            if rel not in ours:
                st = (here / name).lstat()
                files[rel] = [st.st_size, st.st_mtime_ns]
    snapshot: dict[str, Any] = {"files": files}
    if (root / ".git").exists():
        from ..system.commands import run_command

        def git(*args: str) -> str:
            out = run_command(["git", *args], cwd=root, check=False, timeout=60).stdout
            return out.decode("utf-8", "surrogateescape")

        snapshot["git"] = {
            "head": git("symbolic-ref", "-q", "HEAD").strip() or git("rev-parse", "HEAD").strip(),
            "refs": git("for-each-ref", "--format=%(refname) %(objectname)"),
            # The entries, not the index file: `git status` rewrites the file's stat cache.
            "index": hashlib.sha256(
                git("ls-files", "--stage", "-z").encode("utf-8", "surrogateescape")
            ).hexdigest(),
        }
    return snapshot


def working_copy_changes(path: str | os.PathLike[str]) -> str | None:
    """What changed in working copy ``path`` since :func:`write_back` wrote it, in words (None:
    nothing; also None when ``path`` is absent or empty, as there is nothing to keep)."""
    path = Path(path)
    if not path.is_dir() or next(path.iterdir(), None) is None:
        return None
    try:
        then = loads((path / RECORD).read_text("utf-8"))
    except (OSError, ValueError):
        return f"it has no record ({RECORD}) of what lean-dojo-v2 wrote there"
    now = _snapshot(path)
    files_then, files_now = then.get("files", {}), now["files"]
    changes = []
    for what, names in (
        ("added", sorted(set(files_now) - set(files_then))),
        ("deleted", sorted(set(files_then) - set(files_now))),
        (
            "changed",
            sorted(n for n in files_now if n in files_then and files_now[n] != files_then[n]),
        ),
    ):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            changes.append(f"{what} {', '.join(names[:3])}{more}")
    git_then, git_now = then.get("git", {}), now.get("git", {})
    if git_then.get("head") != git_now.get("head") or git_then.get("refs") != git_now.get("refs"):
        changes.append("commits or branches made")
    if git_then.get("index") != git_now.get("index"):
        changes.append("files staged")
    return "; ".join(changes) or None


def _refuse_changed(out: Path) -> None:
    from ..errors import OutputExistsError

    changes = working_copy_changes(out)
    if changes is not None:
        raise OutputExistsError(
            f"working copy {out} holds changes since lean-dojo-v2 wrote it ({changes}); "
            "choose another --out (out=), or pass --force (force=True) to replace it and lose them"
        )


def _default_working_copy(base: Path, repo: Path, *, force: bool) -> Path:
    """``base`` when a write-back may replace it (absent, empty, a working copy unchanged since we
    wrote it, or anything with ``force``), else the first such of ``base-2``, ``base-3``, ...: a
    copy holding someone's work is kept, and a warning says where the proofs go instead."""
    from ..data.output_dir import check_output_dir
    from ..errors import OutputExistsError

    check_output_dir(base, force=True, sources=[repo])  # never the repository, even with force
    if force:
        return base
    kept: list[tuple[Path, str]] = []
    for n in range(1, _DEFAULT_COPIES + 1):
        candidate = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            check_output_dir(candidate, sources=[repo])
            changes = working_copy_changes(candidate)
        except OutputExistsError as exc:
            changes = str(exc)
        if changes is None:
            if kept:
                logger.warning(
                    "not replacing the working copy %s: %s; writing the proofs to %s instead",
                    kept[0][0],
                    kept[0][1],
                    candidate,
                )
            return candidate
        kept.append((candidate, changes))
    raise OutputExistsError(
        f"the working copies {base} to {kept[-1][0].name} all hold changes lean-dojo-v2 did not "
        "make; pass --out NEW_DIR (out=), or remove the ones you no longer need"
    )


@dataclass(frozen=True)
class WriteBackTarget:
    """Where :func:`write_back` will write, checked by :func:`check_write_back`: the repository
    (resolved), whether it is a git repository, and the working copy's directory (None with
    ``in_place``: the repository itself is edited)."""

    repo: Path
    is_git: bool
    out: Path | None
    in_place: bool = False
    commit: str | None = None


def check_write_back(
    repo_dir: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    branch: str | None = None,
    commit: str | None = None,
    force: bool = False,
) -> WriteBackTarget:
    """Check every argument of :func:`write_back` without writing anything, so that a caller
    (``prove --write-back``) can refuse them before a long search rather than after it.

    Raises :class:`WriteBackError` (no repository directory, ``branch`` with ``in_place`` or
    without git, a branch name git refuses, ``out`` with ``in_place``, a commit that is not in the
    repository, an output directory that cannot be created) or
    :class:`~lean_dojo_v2.errors.OutputExistsError` (``out`` is the repository, lies inside it,
    holds files this library did not write, or is a working copy changed since we wrote it,
    without ``force``). Without ``out``, the default working copy in use by someone's changes is
    passed over for the next free ``RAID_DIR/writeback/<repo name>-N`` (a warning says so)."""
    from ..data.output_dir import check_output_dir

    repo = Path(repo_dir).expanduser()
    if not repo.is_dir():
        raise WriteBackError(f"no repository directory at {repo}; pass the repository's root")
    repo = repo.resolve()
    is_git = _is_git_root(repo)
    if branch is not None and in_place:
        raise WriteBackError(
            "--branch makes a commit in a working copy; it cannot be combined with --in-place "
            "(commit the edited files yourself)"
        )
    if branch is not None and not is_git:
        raise WriteBackError(f"{repo} is not the root of a git repository: --branch needs one")
    if in_place:
        if commit is not None:
            raise WriteBackError(
                "commit cannot be chosen with in_place (the checkout is used as is)"
            )
        if out is not None:
            raise WriteBackError(
                "--out names a working copy, --in-place edits the repository itself: pass one "
                "of them"
            )
        return WriteBackTarget(repo, is_git, None, in_place=True)
    if commit is not None and not is_git:
        raise WriteBackError(f"{repo} is not a git repository: no commit to check out")
    if is_git:
        rev = commit or "HEAD"
        from ..system.commands import run_command

        found = run_command(
            ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
            cwd=repo,
            check=False,
            timeout=60,
        )
        if not found.ok:
            what = f"commit {commit!r}" if commit else "a commit (HEAD)"
            raise WriteBackError(
                f"{repo} has no {what} to copy; commit the sources first, or pass --in-place"
            )
        if branch is not None:
            ok = run_command(
                ["git", "check-ref-format", "--branch", branch], cwd=repo, check=False, timeout=60
            )
            if not ok.ok:
                raise WriteBackError(f"{branch!r} is not a valid git branch name; choose another")
            taken = run_command(
                ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
                cwd=repo,
                check=False,
                timeout=60,
            )
            if taken.ok:
                # The working copy is a clone: its default branch exists there too, and a new
                # branch of an existing name could not be fetched back without clobbering.
                raise WriteBackError(
                    f"branch {branch!r} exists in {repo} already; choose a new branch name"
                )
    if out is None:
        from ..config import get_settings

        out_path = _default_working_copy(
            get_settings().raid_dir / "writeback" / repo.name, repo, force=force
        )
    else:
        out_path = Path(out).expanduser()
        check_output_dir(out_path, force=force, sources=[repo])
        if not force:
            _refuse_changed(out_path)
    parent = out_path.resolve().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise WriteBackError(
            f"cannot create the working copy {out_path}: {parent} is not a writable directory; "
            "choose another --out"
        )
    return WriteBackTarget(repo, is_git, out_path, commit=commit)


def missing_files(target: WriteBackTarget, paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` (relative to the repository root) that the copy to be edited
    will not hold: files absent from the commit a git working copy is made from (``HEAD`` by
    default), or from the directory itself with ``in_place`` or without git. Reads only."""
    wanted = sorted(set(paths))
    unsafe = [p for p in wanted if Path(p).is_absolute() or ".." in Path(p).parts]
    if target.is_git and not target.in_place:
        listing = _git(["ls-tree", "-r", "-z", "--name-only", target.commit or "HEAD"], target.repo)
        present = set(listing.split("\0"))
        return [p for p in wanted if p in unsafe or Path(p).as_posix() not in present]
    return [p for p in wanted if p in unsafe or not (target.repo / p).is_file()]


def write_back(
    repo_dir: str | os.PathLike[str],
    edits: Iterable[ProofEdit | tuple[Theorem, str | Sequence[str]]],
    *,
    out: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    branch: str | None = None,
    commit: str | None = None,
    message: str | None = None,
    missing: str = "error",
    force: bool = False,
) -> WriteBackResult:
    """Write proofs into a working copy of ``repo_dir`` (or into ``repo_dir`` itself with
    ``in_place=True``) and return the diff.

    - ``edits``: :class:`ProofEdit`\\ s, or ``(theorem, proof)`` pairs.
    - ``out``: the working copy's directory (default ``RAID_DIR/writeback/<repo name>``, or
      ``<repo name>-2``, ... when that one holds changes since we wrote it): new, empty, or a
      working copy this library wrote and nobody changed since (replaced); anything else needs
      ``force``. It may not be ``repo_dir`` or lie inside it.
    - ``branch``: create this branch in the working copy and commit the proofs on it (the
      working copy is a git clone; fetch the branch from there into your repository).
    - ``commit``: the commit to check out in the working copy (default: the repository's
      ``HEAD``).
    - ``missing``: ``"error"`` (default) raises :class:`SorryNotFoundError` for a theorem whose
      ``sorry`` is not found (:class:`WriteBackError` for one whose file is missing or not UTF-8)
      before anything is written; ``"skip"`` writes the others and lists it in ``skipped``.

    Every argument is checked (:func:`check_write_back`) before anything is read or written.
    """
    from ..data.output_dir import staged_output_dir
    from ..data.run_lock import lock_output_dir

    if missing not in ("error", "skip"):
        raise ValueError(f"missing must be 'error' or 'skip', not {missing!r}")
    target = check_write_back(
        repo_dir, out=out, in_place=in_place, branch=branch, commit=commit, force=force
    )
    repo, is_git = target.repo, target.is_git
    items = [e if isinstance(e, ProofEdit) else ProofEdit.of(*e) for e in edits]
    if in_place:
        changes, written, skipped = _plan(repo, items, missing)
        diff = _apply(repo, changes)
        return WriteBackResult(repo, diff, sorted(changes), written, skipped, in_place=True)
    assert target.out is not None  # check_write_back sets it whenever not in_place
    out = target.out
    made_branch = made_commit = None
    with lock_output_dir(out), staged_output_dir(out, force=force, sources=[repo]) as stage:
        if is_git:
            _clone(repo, stage, commit)
        else:
            shutil.copytree(
                repo,
                stage,
                symlinks=True,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns(*_COPY_IGNORE),
            )
        changes, written, skipped = _plan(stage, items, missing)
        _warn_if_checkout_differs(repo, changes)
        diff = _apply(stage, changes)
        if branch is not None:
            _git(["checkout", "--quiet", "-b", branch], stage)
            made_branch = branch
            if changes:
                _git(["add", "--", *sorted(changes)], stage)
                text = message or _commit_message(written)
                _git(["commit", "--quiet", "--no-verify", "-m", text], stage, _author_env(stage))
                made_commit = _git(["rev-parse", "HEAD"], stage)
        (stage / RECORD).write_text(json.dumps(_snapshot(stage)), "utf-8")
        if not force:
            _refuse_changed(out)  # the user may have written there during the search
    return WriteBackResult(
        out.resolve(), diff, sorted(changes), written, skipped, made_branch, made_commit
    )


def _warn_if_checkout_differs(repo: Path, changes: Mapping[str, tuple[str, str]]) -> None:
    """Warn when the user's own copy of an edited file differs from the working copy's (local
    changes since ``HEAD``): the diff applies to the committed text. Reads only."""
    for rel, (old, _new) in changes.items():
        try:
            mine = (repo / rel).read_bytes()
        except OSError:
            continue
        if mine != old.encode("utf-8"):
            logger.warning(
                "%s in %s differs from the working copy's (uncommitted changes?): the diff is "
                "against the committed text",
                rel,
                repo,
            )


def _commit_message(names: Sequence[str]) -> str:
    head = f"Proofs of {len(names)} theorem{'s' if len(names) != 1 else ''} found by lean-dojo-v2"
    return head + "\n\n" + "".join(f"- {n}\n" for n in names)


def tree_digest(root: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of every file under ``root`` (relative path -> hex digest; links by target):
    what tests and careful callers compare before and after to show a checkout is unchanged."""
    root = Path(root)
    digests = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digests[rel] = "link:" + os.readlink(path)
            else:
                digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests
