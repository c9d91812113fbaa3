"""What the trainers share about a run's output directory and its data sources: the training state
and its fingerprint, resume or a fresh start (an old run set aside until the new one has something
to resume), the checks that an output never overlaps an input, JSON written atomically, where a
run of several processes starts (rank 0 decides; the ranks: :mod:`lean_dojo_v2.system.ranks`),
and the database curriculum (``docs/training.md``, "Resume").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..config.loading import config_to_dict, dump_config, unfingerprinted_fields
from ..data.jsonio import loads
from ..data.output_dir import (
    check_output_dir,
    is_ours,
    mark_ours,
    put_back,
    recover_left_behind,
    set_aside,
)
from ..errors import EmptyDatasetError, OutputExistsError, TrainerError
from ..system.ranks import is_main_process as is_main_process
from ..system.ranks import on_main_process
from ..system.ranks import wait_for_everyone as wait_for_everyone
from ..system.ranks import world_size as world_size
from .errors import TrainingStateError

if TYPE_CHECKING:
    from dataclasses import Field

    from ..database import DynamicDatabase
    from ..database.common import RepositoryRef
    from ..database.records import RepositoryInfo

log = logging.getLogger(__name__)

STATE_FILE = "training_state.json"
SUMMARY_FILE = "summary.json"
CHECKPOINTS = "checkpoints"
LOGS = "logs"
DATA = "data"


class RunConfig(Protocol):
    """What the run directory reads of a trainer's config (a dataclass: it is written to the
    run directory and fingerprinted)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def output_dir(self) -> str: ...
    @property
    def model_name(self) -> str | None: ...
    @property
    def resume(self) -> bool: ...
    @property
    def overwrite_output_dir(self) -> bool: ...


class RepositoryLike(Protocol):
    """A repository version given by its ``url`` and ``commit`` (a ``LeanGitRepo``)."""

    @property
    def url(self) -> str: ...
    @property
    def commit(self) -> str: ...


def decided_by_main(decide: Callable[[], RunStart], out: Path) -> RunStart:
    """Where a run starts, decided once per run directory, not per process: the main process
    ``decide``s (lock, checks, resume or set aside, write); the others start from what it
    wrote, and its refusal is raised on every process (the others touch nothing there)."""
    begun = on_main_process(decide)
    if begun is not None:
        return begun
    state = read_state(out) or {}
    return RunStart(state, int(state.get("passes_done", 0)))


def write_json(path: Path, obj: object, *, indent: int = 2) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a reader never sees half a file)."""
    from ..data.jsonio import atomic_write

    with atomic_write(path) as fh:
        fh.write(json.dumps(obj, indent=indent, ensure_ascii=False, default=str) + "\n")


def pass_name(k: int) -> str:
    """The folder name of pass ``k`` (0-based) under checkpoints/, logs/, data/."""
    return f"pass-{k:03d}"


def read_state(out: Path) -> dict[str, Any] | None:
    """The training state of run directory ``out``; None if there is none (or it is unreadable)."""
    try:
        state = loads((out / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and "fingerprint" in state else None


def config_fingerprint(
    config: RunConfig, plan_id: Mapping[str, object], exclude: Iterable[str] = (), **extra: object
) -> str:
    """SHA-256 of ``config`` (less its fields declared ``config_field(..., fingerprint=False)``
    and the ``exclude`` keys, plus ``extra``) and the data plan: two runs with the same
    fingerprint train the same thing, so one may resume the other."""
    skip = set(exclude) | unfingerprinted_fields(type(config))
    cfg = {k: v for k, v in config_to_dict(config).items() if k not in skip}
    cfg.update(extra)
    blob = json.dumps({"config": cfg, "plan": plan_id}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def local_model_path(model_name: str | None) -> Path | None:
    """``model_name`` as a local path when it names one that exists (a hub id does not)."""
    if not model_name:
        return None
    path = Path(model_name).expanduser()
    return path if path.exists() else None


def check_run_outputs(
    out: Path, model_name: str | None, sources: Iterable[str | Path], *, force: bool
) -> list[str | Path]:
    """Refuse ``out`` (:class:`OutputExistsError`) when it may not be written: foreign without
    ``force``, or (even with ``force``) the same as, inside or holding one of the run's inputs:
    ``sources`` and the model ``model_name`` it loads. Returns every input path."""
    inputs = list(sources)
    model = local_model_path(model_name)
    if model is not None:
        real, m = out.resolve(), model.resolve()
        if real == m or real in m.parents or m in real.parents:
            raise OutputExistsError(
                f"output_dir {out} overlaps model_name {model_name}: the run would replace the "
                f"model it loads. To continue training from it, keep model_name={model_name} "
                "and choose a new output_dir (--set output_dir=NEW_DIR)"
            )
        inputs.append(model)
    check_output_dir(out, force=force, sources=inputs)
    return inputs


def check_export_dir(
    export: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str],
    inputs: Iterable[str | Path],
    force: bool,
) -> Path:
    """``--export DIR`` is an output too: refuse it (:class:`OutputExistsError`) where the run
    directory ``out`` would be refused, and where it overlaps ``out`` itself (even with
    ``force``). Returns it resolved."""
    dst, run = Path(export), Path(out)
    real, run_real = dst.resolve(), run.resolve()
    if real == run_real or run_real in real.parents or real in run_real.parents:
        raise OutputExistsError(
            f"export {dst} overlaps the run directory {run}: export to a directory outside it"
        )
    return check_output_dir(dst, force=force, sources=inputs)


@dataclass
class RunStart:
    """Where a run starts: its ``state``, the ``first`` pass to run, and ``previous``, the run
    directory's old contents set aside (a fresh start over an existing run) until the new run
    has something to put in their place (see :func:`settle_previous`)."""

    state: dict[str, Any]
    first: int
    previous: Path | None = None


def resume_or_start(
    out: Path,
    config: RunConfig,
    *,
    fingerprint: str,
    plan_id: Mapping[str, object],
    sources: list[Path],
    config_file: str,
    has_checkpoint: Callable[[Path, int], bool],
    what: str = "training",
) -> RunStart:
    """Check run directory ``out`` (:func:`check_run_outputs`) and say where the run starts.

    An unfinished run there of the same ``fingerprint`` that got anywhere (a pass done, or a
    checkpoint of pass 0 per ``has_checkpoint(out, 0)``) is resumed when ``config.resume`` and
    not ``config.overwrite_output_dir``; an unfinished run of another fingerprint is a
    :class:`TrainingStateError` (``what`` names the kind of run). Otherwise (on the main process)
    the old contents of ``out`` are set aside (not deleted: :func:`settle_previous` decides) and
    ``out`` is made anew, marked ours, with ``config_file`` and a fresh state (several
    processes: see :func:`decided_by_main`).
    """
    if is_main_process():
        # A run killed (kill -9) after setting the old run aside never settled it: settle it as
        # its normal exit would have (put back unless the killed run got something to resume).
        recover_left_behind(out, superseded=lambda o: has_progress(o, has_checkpoint))
    check_run_outputs(
        out,
        getattr(config, "model_name", None),
        sources,
        force=config.overwrite_output_dir,
    )
    old = read_state(out) if out.is_dir() and is_ours(out) else None
    # A run that stopped before its first checkpoint has nothing to resume: start afresh.
    if (
        old is not None
        and has_progress(out, has_checkpoint)
        and not old.get("finished")
        and config.resume
        and not config.overwrite_output_dir
    ):
        if old.get("fingerprint") != fingerprint:
            raise TrainingStateError(
                f"{out} holds an unfinished {what} run of another config or data "
                f"(started {old.get('started_at', '?')}); resume it with the same config, or "
                "choose a new output_dir, or set overwrite_output_dir=True (--force) or "
                "resume=False to start afresh there (its contents are deleted)"
            )
        log.info("resuming the unfinished run in %s (pass %d)", out, old["passes_done"] + 1)
        return RunStart(old, int(old["passes_done"]))
    previous = None
    if is_main_process():
        if out.exists() and next(out.iterdir(), None) is not None:
            previous = set_aside(out)
        out.mkdir(parents=True, exist_ok=True)
        mark_ours(out)
        state = {
            "fingerprint": fingerprint,
            "plan": dict(plan_id),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "passes_done": 0,
            "passes": [],
            "finished": False,
        }
        dump_config(config, out / config_file)
        write_json(out / STATE_FILE, state)
    return RunStart(read_state(out) or {}, 0, previous)


def has_progress(out: Path, has_checkpoint: Callable[[Path, int], bool]) -> bool:
    """Whether the run in ``out`` has something a rerun would resume: a finished pass or a
    checkpoint of its first pass."""
    state = read_state(out)
    return state is not None and (int(state.get("passes_done", 0)) > 0 or has_checkpoint(out, 0))


def settle_previous(previous: Path | None, out: Path, *, keep_new: bool) -> None:
    """After a fresh start over an old run (``previous``, set aside): remove the old one when
    the new run ``keep_new`` (it finished, or has something to resume), else put the old one
    back in ``out`` (the new run failed before it had anything: nothing is lost)."""
    if previous is None or not is_main_process():
        return
    if keep_new:
        shutil.rmtree(previous, ignore_errors=True)
    else:
        put_back(previous, out)


# ---------------------------------------------------------------------- the database curriculum


def open_database(
    database: DynamicDatabase | str | os.PathLike[str] | None,
) -> tuple[DynamicDatabase | None, bool]:
    """``(database, opened here?)`` for a DynamicDatabase, a path to one, or None."""
    if database is None:
        return None, False
    if isinstance(database, (str, os.PathLike)):
        from ..database import DynamicDatabase

        return DynamicDatabase(Path(database), create=False), True
    return database, False


def repo_ref(repo: RepositoryRef | RepositoryLike) -> RepositoryRef:
    """A repository reference the database understands: LeanGitRepo-like objects become
    ``(url, commit)``."""
    from ..database.records import RepositoryInfo

    if isinstance(repo, (RepositoryInfo, int, str, tuple)):
        return repo
    url, commit = getattr(repo, "url", None), getattr(repo, "commit", None)
    if isinstance(url, str) and isinstance(commit, str):
        return (url, commit)
    raise TrainerError(
        f"cannot use {repo!r} as a repository: pass a RepositoryInfo, a repository id, a url, "
        "(url, commit), or an object with .url and .commit (LeanGitRepo)"
    )


def curriculum(
    db: DynamicDatabase, repos: Iterable[RepositoryRef | RepositoryLike] | None
) -> tuple[list[RepositoryInfo], list[Path], dict[str, object]]:
    """The repositories of database ``db`` to train on, easiest first (``repos``: only these;
    None: all), the files the run reads (the database) and the plan's identity (for the
    fingerprint)."""
    refs = None if repos is None else [repo_ref(r) for r in repos]
    if refs is not None and not refs:
        raise TrainerError("repos is an empty list; pass None to train on every repository")
    order = db.sort_repositories_by_difficulty(refs)
    if not order:
        raise EmptyDatasetError(
            f"the database {getattr(db, 'path', '')} has no repositories to train on; add one "
            "(`lean-dojo-v2 db add ...`) or pass data_path= for a dataset directory"
        )
    sources = [Path(db.path)] if getattr(db, "path", None) else []
    return order, sources, {"database": [[i.url, i.commit] for i in order]}


def dataset_source(
    repos: Iterable[RepositoryRef | RepositoryLike] | None,
    data_path: str | os.PathLike[str] | None,
) -> Path:
    """``data_path`` when training without a database (an error if ``repos`` are given, or no
    ``data_path``)."""
    if repos is not None:
        raise TrainerError(
            "repos were given without a database: pass database=DynamicDatabase(...) to train "
            "on them, or data_path= for a LeanDojo dataset directory"
        )
    if data_path is None:
        raise TrainerError(
            "nothing to train on: pass data_path= (a LeanDojo dataset directory, e.g. "
            "lean_dojo_v2.data.sample_dataset_path()) or database= (the curriculum)"
        )
    return Path(data_path)
