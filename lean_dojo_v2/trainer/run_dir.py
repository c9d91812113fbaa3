"""What the trainers share about a run's output directory and its data sources.

A run directory (``output_dir`` of :class:`~lean_dojo_v2.trainer.sft_trainer.SFTTrainer` or
:class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer`) holds the config, a
``training_state.json`` (fingerprint of config + data, passes done, finished?) and one
``pass-NNN`` folder of checkpoints per pass; an unfinished run of the same fingerprint is resumed.
Also here: JSON written atomically, the distributed rank checks, and the database curriculum
helpers (open a database given by path, a repository reference it understands).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..data.output_dir import check_output_dir, is_ours, mark_ours
from .config import config_to_dict, dump_config
from .errors import EmptyDatasetError, TrainerError, TrainingStateError

log = logging.getLogger(__name__)

STATE_FILE = "training_state.json"
SUMMARY_FILE = "summary.json"
CHECKPOINTS = "checkpoints"
LOGS = "logs"
DATA = "data"


def is_main_process() -> bool:
    """True on rank 0 of a distributed run (and in a plain one)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def wait_for_everyone() -> None:
    """A barrier across the processes of an ``accelerate``/``torchrun`` run (nothing alone)."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def write_json(path: Path, obj: Any, *, indent: int = 2) -> None:
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
        state = json.loads((out / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and "fingerprint" in state else None


def clear_dir(path: Path) -> None:
    """Delete everything inside ``path`` (not ``path`` itself)."""
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def config_fingerprint(
    config: Any, plan_id: Mapping[str, Any], exclude: Iterable[str], **extra: Any
) -> str:
    """SHA-256 of ``config`` (less the ``exclude`` keys, plus ``extra``) and the data plan: two
    runs with the same fingerprint train the same thing, so one may resume the other."""
    skip = set(exclude)
    cfg = {k: v for k, v in config_to_dict(config).items() if k not in skip}
    cfg.update(extra)
    blob = json.dumps({"config": cfg, "plan": plan_id}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def resume_or_start(
    out: Path,
    config: Any,
    *,
    fingerprint: str,
    plan_id: Mapping[str, Any],
    sources: list[Path],
    config_file: str,
    has_checkpoint: Callable[[Path, int], bool],
    what: str = "training",
    barrier: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], int]:
    """Check run directory ``out`` and return ``(state, passes done)``.

    An unfinished run there of the same ``fingerprint`` that got anywhere (a pass done, or a
    checkpoint of pass 0 per ``has_checkpoint(out, 0)``) is resumed when ``config.resume`` and
    not ``config.overwrite_output_dir``; an unfinished run of another fingerprint is a
    :class:`TrainingStateError` (``what`` names the kind of run). Otherwise (on the main process)
    ``out`` is emptied, marked ours, and given ``config_file`` and a fresh state; ``barrier``
    then waits for the other processes.
    """
    check_output_dir(out, force=config.overwrite_output_dir, sources=sources)
    old = read_state(out) if out.is_dir() and is_ours(out) else None
    # A run that stopped before its first checkpoint has nothing to resume: start afresh.
    progressed = old is not None and (int(old.get("passes_done", 0)) > 0 or has_checkpoint(out, 0))
    if progressed and not old.get("finished") and config.resume and not config.overwrite_output_dir:
        if old.get("fingerprint") != fingerprint:
            raise TrainingStateError(
                f"{out} holds an unfinished {what} run of another config or data "
                f"(started {old.get('started_at', '?')}); resume it with the same config, or "
                "choose a new output_dir, or set overwrite_output_dir=True (--force) or "
                "resume=False to start afresh there (its contents are deleted)"
            )
        log.info("resuming the unfinished run in %s (pass %d)", out, old["passes_done"] + 1)
        return old, int(old["passes_done"])
    if is_main_process():
        if out.exists():
            clear_dir(out)
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
    if barrier is not None:
        barrier()
    return read_state(out) or {}, 0


# ---------------------------------------------------------------------- the database curriculum


def open_database(database: Any) -> tuple[Any, bool]:
    """``(database, opened here?)`` for a DynamicDatabase, a path to one, or None."""
    if database is None:
        return None, False
    if isinstance(database, (str, os.PathLike)):
        from ..database import DynamicDatabase

        return DynamicDatabase(database, create=False), True
    return database, False


def empty_database_error(db: Any) -> TrainerError:
    """The error for a database with no repository to train on."""
    return EmptyDatasetError(
        f"the database {getattr(db, 'path', '')} has no repositories to train on; add one "
        "(`lean-dojo-v2 db add ...`) or pass data_path= for a dataset directory"
    )


class TrainingRunRecord:
    """A training run's record in the database ``db`` (started on the main process only, and
    only when there is a database): use as ``with TrainingRunRecord(...) as record:`` around the
    training, which marks the record ``failed`` (``interrupted`` on Ctrl-C) if it raises; then
    :meth:`finish` with the run's metrics. ``plan``: the passes, each with the ``repositories``
    of the curriculum so far (the record lists each pass's last one). ``id`` is the record's id,
    or None."""

    def __init__(self, db: Any, kind: str, *, model: str, config: Any, plan: Iterable[Any]) -> None:
        self.db = db
        self.id: int | None = None
        if db is not None and is_main_process():
            self.id = db.start_training_run(
                kind,
                model=model,
                config=config_to_dict(config),
                repositories=[p.repositories[-1] for p in plan],
            )

    def __enter__(self) -> TrainingRunRecord:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and self.id is not None:
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            self.db.finish_training_run(
                self.id, status=status, metrics={"error": f"{type(exc).__name__}: {exc}"}
            )

    def finish(self, metrics: Mapping[str, Any], checkpoint: Path) -> None:
        """Mark the run finished with ``metrics`` and its ``checkpoint``."""
        if self.id is not None:
            self.db.finish_training_run(self.id, metrics=metrics, checkpoint=str(checkpoint))


def repo_ref(repo: Any) -> Any:
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
    db: Any, repos: Iterable[Any] | None
) -> tuple[list[Any], list[Path], dict[str, Any]]:
    """The repositories of database ``db`` to train on, easiest first (``repos``: only these;
    None: all), the files the run reads (the database) and the plan's identity (for the
    fingerprint)."""
    refs = None if repos is None else [repo_ref(r) for r in repos]
    if refs is not None and not refs:
        raise TrainerError("repos is an empty list; pass None to train on every repository")
    order = db.sort_repositories_by_difficulty(refs)
    if not order:
        raise empty_database_error(db)
    sources = [Path(db.path)] if getattr(db, "path", None) else []
    return order, sources, {"database": [[i.url, i.commit] for i in order]}


def pass_label(repo: Any) -> str:
    """The label of a curriculum pass over repository ``repo`` (``name@commit12``)."""
    return f"{repo.name}@{repo.commit[:12]}"


def dataset_source(repos: Iterable[Any] | None, data_path: str | os.PathLike[str] | None) -> Path:
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
