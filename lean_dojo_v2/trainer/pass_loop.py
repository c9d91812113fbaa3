"""Layer 3 (trainer): the per-pass loop every curriculum trainer shares (:class:`CurriculumTrainer`;
what it does in order: ``docs/training.md``, "Code layout"). A run is a *plan* of passes: with a
database, one pass per repository of its curriculum (easiest first); without, one pass on a
LeanDojo dataset directory (or on examples held in memory). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeVar

from ..config.loading import config_to_dict
from ..data.output_dir import disk_full_error
from ..data.run_lock import lock_output_dir
from .result import TrainingResult
from .run_dir import (
    CHECKPOINTS,
    DATA,
    STATE_FILE,
    SUMMARY_FILE,
    RepositoryLike,
    RunConfig,
    RunStart,
    config_fingerprint,
    curriculum,
    dataset_source,
    decided_by_main,
    has_progress,
    is_main_process,
    open_database,
    pass_name,
    resume_or_start,
    settle_previous,
    wait_for_everyone,
    write_json,
)

if TYPE_CHECKING:
    from ..database import DynamicDatabase
    from ..database.common import RepositoryRef
    from ..database.records import RepositoryInfo

ResultT = TypeVar("ResultT", bound=TrainingResult)


@dataclass
class Pass:
    """One pass of a plan: its label (``name@commit12`` of a curriculum repository, or the
    dataset's folder name), the ``repositories`` whose export it trains on (database runs), and
    ``data`` it was handed in memory instead (e.g. :meth:`RetrievalTrainer.fit_examples`)."""

    label: str
    repositories: list[RepositoryInfo] = field(default_factory=list)
    data: object = None


@dataclass
class PassDataset:
    """Where pass data on disk is: ``path`` (None for data held in memory) and ``source``, the
    words error messages use for it."""

    path: Path | None
    source: str


@dataclass
class PassRun:
    """A run under way, as the hooks see it: the ``plan``, the database (or None), the dataset
    ``data_path`` (or None), the run directory ``out``, its ``training_state.json`` content
    (``state["passes"]``: every finished pass's entry, resumed ones included), the number of
    passes ``first`` done before this call, and what a resumed run started from."""

    plan: list[Pass]
    db: DynamicDatabase | None
    data_path: Path | None
    out: Path
    state: dict[str, Any]
    first: int = 0
    resumed_from: str | None = None
    start: float = field(default_factory=time.perf_counter)

    def seconds(self) -> float:
        """Wall time of this call so far (a resumed run counts only its own time)."""
        return round(time.perf_counter() - self.start, 3)


PassListener: TypeAlias = Callable[[int, Pass, PassDataset, dict[str, Any]], object]
"""Called after each pass with ``(k, pass, dataset, info)``, ``info`` its state entry."""


class CurriculumTrainer(ABC, Generic[ResultT]):
    """The pass loop of a trainer; subclasses set the class attributes and fill in the hooks,
    which are called in the order they are listed (``_dataset_files`` only without a database,
    ``_pass_repositories`` only with one). :meth:`add_pass_listener` registers a function called
    on the main process after each pass: the agents re-evaluate earlier repositories with it."""

    run_kind: ClassVar[str]  # the kind of the database's training-run record ("sft")
    default_model: ClassVar[str]  # the model recorded when config.model_name is None
    config_file: ClassVar[str] = ""  # the config's file in output_dir ("": <run_kind>_config.yaml)
    run_what: ClassVar[str] = "training"  # how a refused resume names the run
    # Fields a run may resume with other values of (for a config without config_field metadata).
    not_fingerprinted: ClassVar[frozenset[str]] = frozenset()
    # Wait for the other ranks at the loop's barriers: `accelerate launch` starts every rank at
    # once; Lightning starts its own inside fit(), so a Lightning trainer leaves this False.
    sync_processes: ClassVar[bool] = True
    # A database run exports pass k to data/pass-NNN and reuses it on resume (True), or rewrites
    # one folder (data_path, default data/) before each pass (False).
    export_per_pass: ClassVar[bool] = False

    config: RunConfig
    result: ResultT | None

    # ------------------------------------------------------------------ the loop

    def add_pass_listener(self, listener: PassListener) -> None:
        """Call ``listener(k, pass, dataset, info)`` after each pass of every later ``train()``
        (main process only; passes skipped by a resume are not reported)."""
        listeners = self.__dict__.setdefault("_pass_listeners", [])
        listeners.append(listener)

    def remove_pass_listener(self, listener: PassListener) -> None:
        """Stop calling ``listener`` (registered with :meth:`add_pass_listener`)."""
        self.__dict__["_pass_listeners"].remove(listener)

    def train(
        self,
        repos: Iterable[RepositoryRef | RepositoryLike] | None = None,
        database: DynamicDatabase | str | os.PathLike[str] | None = None,
        data_path: str | os.PathLike[str] | None = None,
    ) -> ResultT:
        """With ``database`` (a DynamicDatabase or its file): one pass per repository of
        ``repos`` (default: all) in curriculum order, recorded in the database's training runs.
        Without: one pass on the LeanDojo dataset ``data_path``. Returns the result (also
        ``output_dir/summary.json``)."""
        start = time.perf_counter()
        db, own_db = open_database(database)
        try:
            plan, sources, plan_id = self._plan(repos, db, data_path)
            # A run that cannot start (bad data, no model, arguments TRL refuses) fails before
            # its output directory is created or written.
            self._check_inputs(plan, sources, db)
            try:
                return self._run_plan(plan, sources, plan_id, db, data_path, start=start)
            except Exception as exc:
                # Writers report a full disk in many ways (OSError, safetensors' and torch.save's
                # own errors): each becomes one line naming the filesystem.
                full = disk_full_error(
                    exc,
                    self.config.output_dir,
                    then="run the same command again: it resumes from the last whole checkpoint",
                )
                if full is None:
                    raise
                raise full from exc
        finally:
            if own_db and db is not None:
                db.close()

    def _plan(
        self,
        repos: Iterable[RepositoryRef | RepositoryLike] | None,
        db: DynamicDatabase | None,
        data_path: str | os.PathLike[str] | None,
    ) -> tuple[list[Pass], list[Path], dict[str, object]]:
        """``(passes, files the run reads, the plan's identity)``."""
        if db is not None:
            order, sources, plan_id = curriculum(db, repos)
            # A pass is labelled name@commit12 of its repository.
            labels = [f"{info.name}@{info.commit[:12]}" for info in order]
            passes = [
                Pass(label, self._pass_repositories(order, k)) for k, label in enumerate(labels)
            ]
            return passes, sources, plan_id
        path = dataset_source(repos, data_path)
        digest = hashlib.sha256()
        for f in self._dataset_files(path):
            if f.is_file():
                digest.update(f.read_bytes())
        plan_id = {"data": str(path.resolve()), "sha256": digest.hexdigest()}
        return [Pass(label=path.name)], [path], plan_id

    def _run_plan(
        self,
        plan: list[Pass],
        sources: list[Path],
        plan_id: dict[str, object],
        db: DynamicDatabase | None,
        data_path: str | os.PathLike[str] | None,
        *,
        start: float | None = None,
    ) -> ResultT:
        """Run (or resume) ``plan`` in ``output_dir``, record it, write ``summary.json``."""
        start = time.perf_counter() if start is None else start
        cfg, out = self.config, Path(self.config.output_dir)

        def has_checkpoint(o: Path, k: int) -> bool:
            return self._pass_checkpoint(o, k) is not None

        fingerprint = config_fingerprint(
            cfg, plan_id, self.not_fingerprinted, **self._fingerprint_extra()
        )
        config_file = self.config_file or f"{self.run_kind}_config.yaml"
        with ExitStack() as held:

            def decide() -> RunStart:
                # One run per directory: locked (by the main process alone) before anything in
                # ``out`` is looked at.
                if is_main_process():
                    held.enter_context(lock_output_dir(out))
                return resume_or_start(
                    out,
                    cfg,
                    fingerprint=fingerprint,
                    plan_id=plan_id,
                    sources=sources,
                    config_file=config_file,
                    has_checkpoint=has_checkpoint,
                    what=self.run_what,
                )

            begun = decided_by_main(decide, out) if self.sync_processes else decide()
            path = None if data_path is None else Path(data_path)
            run = PassRun(plan, db, path, out, begun.state, begun.first, start=start)
            # The database's record of the run (main process only): failed or interrupted when
            # the run raises, finished with its metrics otherwise.
            record = None
            if db is not None and is_main_process():
                record = db.start_training_run(
                    self.run_kind,
                    model=cfg.model_name or self.default_model,
                    config=config_to_dict(cfg),
                    repositories=[p.repositories[-1] for p in plan],
                )
            try:
                result = self._run_passes(run)
            except BaseException as exc:
                if record is not None and db is not None:
                    status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                    error = {"error": f"{type(exc).__name__}: {exc}"}
                    db.finish_training_run(record, status=status, metrics=error)
                # A run replaced only once the new one has something to resume (stage, then swap).
                settle_previous(begun.previous, out, keep_new=has_progress(out, has_checkpoint))
                raise
            settle_previous(begun.previous, out, keep_new=True)
            result.run_id = record
            if record is not None and db is not None:
                checkpoint = str(self._model_dir(out).resolve())
                metrics = self._record_metrics(result)
                db.finish_training_run(record, metrics=metrics, checkpoint=checkpoint)
            if is_main_process():
                write_json(out / SUMMARY_FILE, result.to_dict())
            self.result = result
            return result

    def _run_passes(self, run: PassRun) -> ResultT:
        out, state = run.out, run.state
        if run.first > 0 or self._pass_checkpoint(out, run.first) is not None:
            run.resumed_from = str(self._pass_checkpoint(out, run.first) or self._model_dir(out))
        self._begin(run)
        for k in range(run.first, len(run.plan)):
            dataset = self._pass_dataset(run, k)
            info = self._run_pass(k, run.plan[k], dataset, out)
            # Every process keeps the state (its result is the main process's); one writes it.
            state["passes"].append(info)
            state["passes_done"] = k + 1
            if is_main_process():
                self._save_pass(out)
                write_json(out / STATE_FILE, state)
                # The next pass starts from the saved model, not from this pass's checkpoints.
                shutil.rmtree(out / CHECKPOINTS / pass_name(k), ignore_errors=True)
                for listener in getattr(self, "_pass_listeners", ()):
                    listener(k, run.plan[k], dataset, info)
            self._barrier()
        result = self._summarise(run)
        if is_main_process():
            state["finished"] = True
            write_json(out / STATE_FILE, state)
        return result

    def _pass_dataset(self, run: PassRun, k: int) -> PassDataset:
        """Where pass ``k`` reads its data: the database export of its repositories (written
        here), the dataset ``data_path``, or nowhere (data in memory)."""
        p = run.plan[k]
        if p.data is not None:
            return PassDataset(None, p.label)
        if run.db is None:
            assert run.data_path is not None  # the plan has checked it
            return PassDataset(run.data_path, str(run.data_path))
        if self.export_per_pass:
            dataset_dir = run.out / DATA / pass_name(k)
            # A resumed pass keeps the export it started on.
            if is_main_process() and not (dataset_dir / "corpus.jsonl").is_file():
                run.db.export_merged_data(p.repositories, dataset_dir)
            source = f"the export of {p.label} at {dataset_dir}"
        else:
            dataset_dir = run.data_path if run.data_path is not None else run.out / DATA
            if is_main_process():
                run.db.export_merged_data(p.repositories, dataset_dir)
            source = f"the merged export of {len(p.repositories)} repositories at {dataset_dir}"
        self._barrier()
        return PassDataset(dataset_dir, source)

    def _barrier(self) -> None:
        if self.sync_processes:
            wait_for_everyone()

    # ------------------------------------------------------------------ hooks, in call order

    @abstractmethod
    def _dataset_files(self, path: Path) -> list[Path]:
        """Check the dataset at ``path`` (typed errors naming what is missing); the files whose
        contents identify it (their bytes are the plan's fingerprint)."""

    def _check_inputs(
        self, plan: list[Pass], sources: list[Path], db: DynamicDatabase | None
    ) -> None:
        """Before the output directory is locked, created or written: check what the run reads
        (``sources``: the dataset without a database) and loads, with typed errors (default:
        nothing beyond :meth:`_dataset_files`)."""

    def _pass_repositories(self, order: list[RepositoryInfo], k: int) -> list[RepositoryInfo]:
        """The repositories pass ``k`` of curriculum ``order`` trains on: all so far."""
        return order[: k + 1]

    def _fingerprint_extra(self) -> dict[str, object]:
        """What changes the training besides the config and the data (default: nothing)."""
        return {}

    @abstractmethod
    def _pass_checkpoint(self, out: Path, k: int) -> Path | None:
        """The checkpoint pass ``k`` in ``out`` would resume from, or None."""

    @abstractmethod
    def _model_dir(self, out: Path) -> Path:
        """Where the model saved after the last finished pass is (the run record's checkpoint)."""

    @abstractmethod
    def _begin(self, run: PassRun) -> None:
        """Get ready to run passes ``run.first`` … ``len(run.plan) - 1`` (the passes before
        ``run.first`` are done: restore what they left in ``run.out``)."""

    @abstractmethod
    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        """Train pass ``k``; its entry of ``training_state.json`` (JSON-able, with ``steps``)."""

    @abstractmethod
    def _save_pass(self, out: Path) -> None:
        """Save the model after a pass (main process only)."""

    @abstractmethod
    def _summarise(self, run: PassRun) -> ResultT:
        """The run's result, after its last pass (``run.state["passes"]``: every pass's entry,
        resumed ones included)."""

    def _record_metrics(self, result: ResultT) -> Mapping[str, object]:
        """What the database's training-run record keeps of ``result`` (default: all of it)."""
        return result.to_dict()


__all__ = ["CurriculumTrainer", "Pass", "PassDataset", "PassRun"]
