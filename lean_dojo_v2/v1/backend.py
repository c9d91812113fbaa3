"""Which :class:`~lean_dojo_v2.interaction.ProofEnv` a v1 ``Dojo`` runs on.

- ``PantographEnv`` when a Pantograph REPL is found and the theorem's repository has a built Lake
  project: the one :func:`use_project` or ``LEAN_DOJO_V2_V1_PROJECT`` names; the repository itself
  when its URL is a local checkout at the commit; or its checkout in the trace cache, where
  ``lean-dojo-v2 trace`` builds it (looked up only when that repository's git mirror is in the
  cache, so nothing is cloned). The REPL imports the theorem's own module (and the Dojo's
  ``additional_imports``).
- Otherwise ``ReplayEnv`` over the traced dataset named once with :func:`use_dataset` or
  ``LEAN_DOJO_V2_V1_DATASET``, with a one-line notice (once per process) that tactics are
  replayed: only tactics recorded in the dataset succeed.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..data.model import Pos as _Pos
from ..data.model import Theorem as DataTheorem
from ..errors import (
    ConfigError,
    DataFormatError,
    DatasetNotFoundError,
    IncompleteDatasetError,
    LeanDojoError,
)
from .errors import DojoInitError, V1ArgumentError
from .repo import LeanGitRepo, Theorem, _normalize_url

if TYPE_CHECKING:  # pragma: no cover
    from ..interaction.pantograph import PantographEnv
    from ..interaction.replay import ReplayEnv

logger = logging.getLogger("lean_dojo_v2.v1")

ENV_DATASET = "LEAN_DOJO_V2_V1_DATASET"
ENV_PROJECT = "LEAN_DOJO_V2_V1_PROJECT"

REPLAY_NOTICE = (
    "lean_dojo_v2.v1: tactics are replayed from the traced dataset {dataset} ({why}): only "
    "tactics recorded there succeed; install Lean and Pantograph and build the project for "
    "Lean-checked tactics (docs/migrating_from_v1.md)"
)

_lock = threading.Lock()
_chosen: dict[str, Path | None] = {"dataset": None, "project": None}
_noticed: set[str] = set()


def use_dataset(path: str | os.PathLike[str] | None) -> None:
    """Replay tactics from the traced dataset at ``path`` (a LeanDojo dataset directory or a split
    file) where no Lean project is found; ``None`` forgets it (``LEAN_DOJO_V2_V1_DATASET`` then
    applies). Raises :class:`~lean_dojo_v2.errors.DatasetNotFoundError` when nothing is there."""
    choose_dataset(path, "use_dataset")


def choose_dataset(path: object, source: str) -> None:
    """:func:`use_dataset`, its errors naming ``source`` (``--dataset`` for a run's option)."""
    with _lock:
        _chosen["dataset"] = None if path is None else _dataset_path(path, source)


def use_project(path: str | os.PathLike[str] | None) -> None:
    """Run every theorem in the built Lake project at ``path`` (a checkout of the theorems'
    repository at their commit, with ``lake build`` done) when a Pantograph REPL is found;
    ``None`` forgets it (``LEAN_DOJO_V2_V1_PROJECT`` then applies). Raises
    :class:`~lean_dojo_v2.errors.ConfigError` when ``path`` is not a built Lake project."""
    choose_project(path, "use_project")


def choose_project(path: object, source: str) -> None:
    """:func:`use_project`, its errors naming ``source`` (``--project`` for a run's option)."""
    with _lock:
        _chosen["project"] = None if path is None else _project_path(path, source)


def chosen_paths() -> dict[str, Path | None]:
    """What :func:`use_dataset` and :func:`use_project` chose (for :func:`restore_paths`)."""
    with _lock:
        return dict(_chosen)


def restore_paths(saved: dict[str, Path | None]) -> None:
    """Put back what :func:`chosen_paths` returned (after a run that named its own)."""
    with _lock:
        _chosen.update(saved)


DATASET_HINT = (
    "pass a LeanDojo dataset directory (with random/ and corpus.jsonl) or a split file such as "
    "random/test.json"
)


def _as_path(path: object, source: str, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise V1ArgumentError(
            f"{source} takes the path of {what} (a str or os.PathLike) or None, not {path!r}"
        )
    return Path(os.fspath(path)).expanduser()


def _dataset_path(path: object, source: str) -> Path:
    p = _as_path(path, source, "a traced dataset")
    if p.is_dir():
        from ..data.dataset import DatasetDir

        # The checks a replay's reading would make, done now (stat calls only), so that a run
        # names a wrong directory before its script starts rather than at its first Dojo.
        try:
            DatasetDir(p).require_complete()
        except IncompleteDatasetError as exc:
            # A replay reads every split of the dataset, so a partial one cannot serve.
            raise DatasetNotFoundError(
                f"{source}: {p} is not a complete traced dataset (missing "
                f"{', '.join(exc.missing)}); {DATASET_HINT}"
            ) from None
        except DatasetNotFoundError as exc:
            raise DatasetNotFoundError(f"{source}: {exc}; {DATASET_HINT}") from None
    elif p.is_file():
        _check_split_file(p, source)
    else:
        raise DatasetNotFoundError(f"{source}: no traced dataset at {p}; {DATASET_HINT}")
    return p.resolve()


def _check_split_file(path: Path, source: str) -> None:
    """A split file is a JSON list of theorem records: its first character (after blanks) says
    whether it can be one, without reading the whole file (a LeanDojo split is tens of MB)."""
    try:
        with path.open("rb") as f:
            head = f.read(4096).lstrip(b" \t\r\n\xef\xbb\xbf")
    except OSError as exc:
        raise DatasetNotFoundError(f"{source}: cannot read {path}: {exc.strerror}") from None
    if not head.startswith(b"["):
        raise DataFormatError(
            f"{source}: {path} is not a traced dataset (a split file is a JSON list of LeanDojo "
            f"theorem records); {DATASET_HINT}"
        )


def _project_path(path: object, source: str) -> Path:
    p = _as_path(path, source, "a built Lake project")
    if not is_built_project(p):
        raise ConfigError(
            f"{source}: {p} is not a built Lake project (a lakefile and a .lake/build folder); "
            "run `lake build` in a checkout of the repository at the theorems' commit"
        )
    return p.resolve()


def dataset_path() -> Path | None:
    """The dataset named with :func:`use_dataset`, else by ``LEAN_DOJO_V2_V1_DATASET``, else None."""
    chosen = _chosen["dataset"]
    if chosen is not None:
        return chosen
    env = os.environ.get(ENV_DATASET, "").strip()
    return _dataset_path(env, f"${ENV_DATASET}") if env else None


def is_built_project(path: str | os.PathLike[str] | None) -> bool:
    """A Lake project whose build folder exists (what Pantograph needs to import its modules)."""
    if path is None:
        return False
    p = Path(path)
    return (p / ".lake" / "build").is_dir() and (
        (p / "lakefile.lean").is_file() or (p / "lakefile.toml").is_file()
    )


# -- the replay dataset ---------------------------------------------------------------------------


class ReplayData:
    """A traced dataset's theorems, indexed for lookup, and their transitions."""

    def __init__(self, path: Path) -> None:
        from ..data.dataset import load_theorems
        from ..interaction.replay import TransitionTable

        self.path = path
        theorems = load_theorems(path)
        self.by_name: dict[str, list[DataTheorem]] = {}
        for thm in theorems:
            self.by_name.setdefault(thm.full_name, []).append(thm)
        self.table = TransitionTable.from_theorems(theorems)
        self.urls = {_normalize_url(t.url) for t in theorems}

    def find(self, theorem: Theorem) -> DataTheorem:
        """The dataset's record of ``theorem`` (same name, file and repository), or
        :class:`DojoInitError` saying why there is none."""
        name, path = theorem.full_name, theorem.file_path.as_posix()
        found = self.by_name.get(name, [])
        same_file = [t for t in found if t.file_path == path]
        if not same_file:
            where = f"; it is in {', '.join(sorted({t.file_path for t in found}))}" if found else ""
            raise DojoInitError(
                f"{name} of {path} is not in the traced dataset {self.path}{where}: check the "
                "theorem's full_name and file_path, or name the dataset that holds it "
                "(use_dataset / $LEAN_DOJO_V2_V1_DATASET)"
            )
        url = theorem.repo.url
        same_repo = [t for t in same_file if _normalize_url(t.url) == url]
        if not same_repo:
            raise DojoInitError(
                f"{name} of {path} is in the traced dataset {self.path} for {same_file[0].url}, "
                f"not for {url}: use the repository URL of the dataset's records"
            )
        commit = theorem.repo.commit
        if _is_full_sha(commit):
            same_commit = [t for t in same_repo if t.commit == commit]
            if not same_commit:
                raise DojoInitError(
                    f"{name} is in the traced dataset {self.path} at commit "
                    f"{same_repo[0].commit}, not {commit}: a replay can only give the states "
                    "recorded at the dataset's commit; use that commit, or trace yours"
                )
            same_repo = same_commit
        thm = same_repo[0]
        if not thm.traced_tactics:
            raise DojoInitError(
                f"{name} has no recorded tactic proof in {self.path} (its proof is a term), so "
                "there is nothing to replay; with Lean and Pantograph it can be started"
            )
        return thm

    def has_repo(self, repo: LeanGitRepo) -> bool:
        return repo.url in self.urls


@functools.lru_cache(maxsize=4)
def replay_data(path: Path) -> ReplayData:
    """The dataset at ``path``, read once per process (a v1 prover opens one Dojo per theorem)."""
    return ReplayData(path)


def _is_full_sha(commit: str) -> bool:
    return len(commit) == 40 and all(c in "0123456789abcdef" for c in commit.lower())


# -- the Lean project -----------------------------------------------------------------------------


def find_project(repo: LeanGitRepo) -> tuple[Path | None, str]:
    """The built Lake project of ``repo`` at its commit and where it came from, or None and why
    there is none (for the replay notice)."""
    chosen = _chosen["project"]
    if chosen is not None:
        return chosen, "use_project"
    env = os.environ.get(ENV_PROJECT, "").strip()
    if env:
        return _project_path(env, f"${ENV_PROJECT}"), f"${ENV_PROJECT}"
    from ..lean_dojo.repo import mirror_path

    if not repo.is_local and not (mirror_path(repo.url) / "HEAD").is_file():
        return None, f"{repo.url} was never traced on this machine (`lean-dojo-v2 trace`)"
    try:
        resolved = repo.resolved()
    except LeanDojoError as exc:
        return None, f"{repo.url} at {repo.commit} cannot be resolved: {_first_line(exc)}"
    if repo.is_local and is_built_project(repo.url) and _head(Path(repo.url)) == resolved.commit:
        return Path(repo.url), "the local checkout"
    from ..lean_dojo.tracing import get_traced_repo_path

    for build_deps in (False, True):
        root = get_traced_repo_path(resolved, build_deps)
        if is_built_project(root):
            return root, "the trace cache"
    return None, f"{repo.name} at {resolved.commit[:12]} is not traced and built in the cache"


def _head(path: Path) -> str | None:
    from ..system.commands import run_command

    try:
        return run_command(["git", "rev-parse", "HEAD"], cwd=path, timeout=30).text().strip()
    except LeanDojoError:
        return None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n")[0]


def find_declaration(source: str, full_name: str) -> _Pos | None:
    """Where the declaration named ``full_name`` starts in ``source`` (its command, doc comment
    and attributes included), or None when it is not declared there by name (generated
    declarations such as ``@[to_additive]`` twins)."""
    from ..data.sorry import find_declarations

    for decl in find_declarations(source):
        if decl.name == full_name:
            return _Pos(*decl.start)
    return None


# -- opening an environment -----------------------------------------------------------------------


@dataclass
class Opened:
    """An environment for one theorem: the env, what to ``start`` in it, and the backend."""

    env: PantographEnv | ReplayEnv
    target: DataTheorem | str
    backend: str


def check_inside_repository(theorem: Theorem) -> str:
    """The theorem's file path as a relative POSIX path, or :class:`DojoInitError` when it points
    outside the repository (absolute, or through ``..``)."""
    path = PurePosixPath(theorem.file_path.as_posix())
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise DojoInitError(
            f"{theorem.file_path} lies outside the repository {theorem.repo.url}: file_path must "
            "be relative to the repository's root, e.g. Mathlib/Data/Nat/Basic.lean"
        )
    return path.as_posix()


def open_env(theorem: Theorem, timeout: float, imports: tuple[str, ...]) -> Opened:
    """The environment a Dojo for ``theorem`` runs on (see the module docstring)."""
    check_inside_repository(theorem)
    from ..errors import LeanNotFoundError
    from ..interaction.pantograph.locate import locate_repl

    try:
        located = locate_repl()
    except LeanNotFoundError as exc:
        project, why = None, _first_line(exc).split(" (tried")[0].split(". ")[0]
    else:
        project, why = find_project(theorem.repo)
    if project is not None:
        return _open_pantograph(theorem, project, located.command, timeout, imports)
    dataset = dataset_path()
    if dataset is None:
        raise DojoInitError(
            f"cannot start {theorem.full_name}: {why}, and no traced dataset is named to replay "
            f"tactics from; call lean_dojo_v2.v1.use_dataset(PATH) or set {ENV_DATASET}=PATH, "
            f"or build the project (`lean-dojo-v2 trace {theorem.repo.url} "
            f"{theorem.repo.commit}`) and install Pantograph"
        )
    data = replay_data(dataset)
    target = data.find(theorem)
    key = str(dataset)
    if key not in _noticed:
        _noticed.add(key)
        logger.warning(REPLAY_NOTICE.format(dataset=dataset, why=why))
    from ..interaction.replay import ReplayEnv

    return Opened(ReplayEnv(data.table), target, "replay")


def _open_pantograph(
    theorem: Theorem,
    project: Path,
    command: tuple[str, ...],
    timeout: float,
    imports: tuple[str, ...],
) -> Opened:
    from ..interaction.pantograph import PantographConfig, PantographEnv
    from ..interaction.pantograph.locate import module_name

    relative = check_inside_repository(theorem)
    source_file = project / relative
    if not source_file.is_file():
        raise DojoInitError(
            f"{relative} is not a file of the repository {theorem.repo.url} (looked in {project}); "
            "check the theorem's file_path"
        )
    target: DataTheorem | str = theorem.full_name
    dataset = dataset_path()
    if dataset is not None:
        try:
            target = replay_data(dataset).find(theorem)
        except DojoInitError:
            pass
    if isinstance(target, str):
        start = find_declaration(source_file.read_text(encoding="utf-8"), theorem.full_name)
        if start is not None:
            target = DataTheorem(
                url=theorem.repo.url,
                commit=theorem.repo.commit,
                file_path=relative,
                full_name=theorem.full_name,
                start=start,
                end=start,
            )
        else:
            logger.info(
                "%s is not declared by name in %s; starting it from its type (goal.start)",
                theorem.full_name,
                relative,
            )
    config = PantographConfig(
        command=list(command),
        project_dir=str(project),
        imports=(module_name(relative), *imports),
        tactic_timeout=timeout,
        ready_timeout=max(600.0, timeout),
    )
    return Opened(PantographEnv(config), target, "pantograph")


def is_available_in_cache(repo: LeanGitRepo) -> bool:
    """Whether a :class:`~lean_dojo_v2.v1.Dojo` can start theorems of ``repo`` here: a built
    project of it is found (with a Pantograph REPL), or the replay dataset holds its theorems.
    v1's meaning was "traced into the cache", which v1 code checks before proving."""
    if not isinstance(repo, LeanGitRepo):
        if not (hasattr(repo, "url") and hasattr(repo, "commit")):
            raise V1ArgumentError(
                f"is_available_in_cache takes a LeanGitRepo(url, commit), not {repo!r}"
            )
        # The library's own repository (or v1's) names the same thing.
        repo = LeanGitRepo(repo.url, repo.commit)
    from ..errors import LeanNotFoundError
    from ..interaction.pantograph.locate import locate_repl

    try:
        locate_repl()
        if find_project(repo)[0] is not None:
            return True
    except (LeanNotFoundError, ConfigError):
        pass
    dataset = dataset_path()
    return dataset is not None and replay_data(dataset).has_repo(repo)


__all__ = [
    "ENV_DATASET",
    "ENV_PROJECT",
    "Opened",
    "ReplayData",
    "choose_dataset",
    "choose_project",
    "dataset_path",
    "find_declaration",
    "find_project",
    "is_available_in_cache",
    "is_built_project",
    "open_env",
    "replay_data",
    "use_dataset",
    "use_project",
]
