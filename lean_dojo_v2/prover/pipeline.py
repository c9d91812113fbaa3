"""Layer 3 (prover): the one proving pipeline — check, search, re-check, record, triage, write
back, report.

::

    job = ProofJob(theorems, ReplayEnvSpec("raid/data/sample"),
                   write_back=WriteBackRequest(Path("~/src/myrepo")))
    report = ProveRun(HFProverSpec("smollm2"), SearchConfig(), workers=4).run([job])

``lean-dojo-v2 prove`` (:mod:`.cli`), the agents (``BaseAgent.prove``, hence ``python -m
lean_dojo_v2.lean_agent`` through ``LeanAgent``) and the quickstart all prove through
:meth:`ProveRun.run`. A run goes, for its jobs (a job: theorems proved in one environment,
usually one repository's):

1. **check** (:func:`check_jobs`): every write-back target and its repository's files, before
   any search, so that a typo cannot cost the proofs. Where the check chose to write is where
   the proofs go later (a default working copy in use is passed over once, and said once);
2. **search** (:func:`~.parallel.prove_theorems`: inline, worker processes or Ray actors);
3. **re-check** (``recheck=True``): every proof once more with :func:`~.verify.verify_proof` on
   a fresh environment of the job; a proof it rejects counts as failed;
4. **record** (``database=``) each final result and hand it to the ``observers``; without a
   re-check as each result arrives, so a run cut short keeps what it recorded;
5. **triage** (a job with a ``source_dir``): theorems whose statement uses a ``sorry``
   placeholder (:mod:`.triage`), reported and not written back unless asked;
6. **write back** (a job with a :class:`WriteBackRequest`) after every search; a failure there is
   reported in the job's report, not raised, so that a caller shows the proofs first;
7. **report**: a :class:`ProveRunReport`, one :class:`JobReport` per job with a
   :class:`~.outcome.TheoremOutcome` per theorem.

Every step but the search is optional: a job without a request writes nothing back, a run
without a database records nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from ..errors import LeanDojoError
from .outcome import DEPENDS_ON_SORRY, TheoremOutcome
from .recording import RecordingSummary

if TYPE_CHECKING:
    from ..database import DynamicDatabase
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import EnvFactory, GeneratorFactory, ResultObserver
    from .writeback import WriteBackTarget

logger = logging.getLogger(__name__)

__all__ = [
    "JobReport",
    "ProofJob",
    "ProveRun",
    "ProveRunReport",
    "WriteBackRequest",
    "check_jobs",
    "nothing_written",
    "recheck_proofs",
]


def nothing_written() -> dict[str, Any]:
    """The write-back report when there was nothing to write."""
    return {"written": [], "skipped": {}, "files": [], "diff_file": None}


# -- what goes in --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteBackRequest:
    """Write a job's proofs in place of ``sorry`` into ``repo_dir``
    (:func:`~.writeback.write_back`): into a working copy at ``out`` (default
    ``RAID_DIR/writeback/<repo name>``), or into the checkout itself with ``in_place``;
    ``branch`` commits them there; ``force`` replaces an ``out`` this library did not write.
    Proofs of theorems the triage marks ``depends_on_sorry`` are held back unless
    ``include_depends_on_sorry``. ``target`` is where :meth:`check` decided to write."""

    repo_dir: Path
    out: Path | None = None
    in_place: bool = False
    branch: str | None = None
    force: bool = False
    include_depends_on_sorry: bool = False
    target: WriteBackTarget | None = None

    def check(self, theorems: Sequence[Theorem]) -> WriteBackRequest:
        """This request with its target checked (every argument of ``write_back``, and a
        repository holding none of ``theorems``' files refused), before any search. A request
        checked already is returned as it is: the target is chosen, and said, once."""
        if self.target is not None:
            return self
        from .writeback import check_write_back

        target = check_write_back(
            self.repo_dir,
            out=self.out,
            in_place=self.in_place,
            branch=self.branch,
            force=self.force,
        )
        _check_files(target, theorems)
        return dataclasses.replace(self, target=target)


@dataclass(frozen=True)
class ProofJob:
    """Theorems proved in one environment, usually one repository's.

    ``make_env``: a picklable factory of the environment (called once per worker, and once more
    for the re-check); ``label``: the repository, in each outcome; ``source_dir``: its checkout,
    which the triage reads (None: no triage); ``write_back``: where the proofs go (None:
    nowhere); ``desc``: the progress bar's label."""

    theorems: Sequence[Theorem]
    make_env: EnvFactory
    label: str | None = None
    source_dir: Path | None = None
    write_back: WriteBackRequest | None = None
    desc: str = "proving"


def check_jobs(jobs: Sequence[ProofJob]) -> list[ProofJob]:
    """``jobs`` with every write-back request checked (:meth:`WriteBackRequest.check`): call it
    before anything costly (loading a model); :meth:`ProveRun.run` calls it too, and a checked
    request is not checked again."""
    return [
        job
        if job.write_back is None
        else dataclasses.replace(job, write_back=job.write_back.check(job.theorems))
        for job in jobs
    ]


def _check_files(target: WriteBackTarget, theorems: Sequence[Theorem]) -> None:
    """Refuse a repository holding none of the theorems' files (the wrong repository, or the
    wrong commit); warn about the files it lacks when it holds some."""
    from .writeback import WriteBackError, missing_files

    files = {t.file_path for t in theorems}
    missing = missing_files(target, files)
    if missing and len(missing) == len(files):
        raise WriteBackError(
            f"none of the {len(files)} file(s) of the theorems to prove is in {target.repo} "
            f"(e.g. {missing[0]}): write back into the repository the dataset was traced from "
            "(prove --write-back REPO_DIR; an agent's source_dir)"
        )
    if missing:
        logger.warning(
            "%d of the %d file(s) of the theorems to prove are not in %s (%s): proofs found in "
            "them will not be written back",
            len(missing),
            len(files),
            target.repo,
            ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else ""),
        )


# -- what comes out ------------------------------------------------------------------------------


@dataclass
class JobReport:
    """One job: its final ``results`` (re-checked when asked) and ``outcomes``, in the order of
    its theorems; the seconds its search (with re-check and recording) took; ``write_back``,
    the write-back's report (``WriteBackResult.report()``; on failure ``error``,
    ``what_was_written`` and ``not_written``) and ``write_back_error``, the exception of a
    failed write-back."""

    job: ProofJob
    results: list[SearchResult]
    outcomes: list[TheoremOutcome]
    seconds: float
    write_back: dict[str, Any] | None = None
    write_back_error: Exception | None = None


@dataclass
class ProveRunReport:
    """Every job's report, and the recording summary (None: no database)."""

    jobs: list[JobReport] = field(default_factory=list)
    recorded: RecordingSummary | None = None

    @property
    def results(self) -> list[SearchResult]:
        return [r for job in self.jobs for r in job.results]

    @property
    def outcomes(self) -> list[TheoremOutcome]:
        return [o for job in self.jobs for o in job.outcomes]

    @property
    def proved(self) -> int:
        return sum(o.proved for o in self.outcomes)

    @property
    def seconds(self) -> float:
        return sum(job.seconds for job in self.jobs)

    @property
    def write_back_error(self) -> Exception | None:
        """The first failed write-back's exception (None: none failed)."""
        return next((j.write_back_error for j in self.jobs if j.write_back_error), None)


# -- the run -------------------------------------------------------------------------------------


@dataclass
class ProveRun:
    """How to prove: ``make_generator`` (a picklable factory of the ``TacticGenerator``, called
    once per worker), the search ``config``, ``workers`` and ``parallel``
    (``"process"``, ``"ray"`` with ``ray_address``, ``"inline"``; see
    :func:`~.parallel.prove_theorems`), ``progress`` (a bar on stderr), ``recheck`` (every proof
    verified once more), ``database`` and ``model`` (record each proof there, with the model
    that found it), and ``observers``, called with each final result (after its re-check) in
    this process. :meth:`run` proves jobs (see the module docstring)."""

    make_generator: GeneratorFactory
    config: SearchConfig | None = None
    workers: int = 1
    parallel: str = "process"
    ray_address: str | None = None
    progress: bool = True
    recheck: bool = False
    database: DynamicDatabase | None = None
    model: str | None = None
    observers: Sequence[ResultObserver] = ()

    def run(self, jobs: Sequence[ProofJob]) -> ProveRunReport:
        """Check, then prove every job, then write back; the report of it all."""
        jobs = check_jobs(jobs)
        report = ProveRunReport(recorded=RecordingSummary() if self.database is not None else None)
        for job in jobs:
            report.jobs.append(self._prove(job, report.recorded))
        if report.recorded is not None:
            from .recording import warn_not_recorded

            warn_not_recorded(report.recorded)  # once, with the count
        for job_report in report.jobs:
            if job_report.job.write_back is not None:
                _write_back(job_report)
        return report

    def _prove(self, job: ProofJob, recorded: RecordingSummary | None) -> JobReport:
        from . import parallel  # looked up at call time: a test may stand in for it

        def finish(result: SearchResult) -> None:
            if self.database is not None and recorded is not None:
                from .recording import record_results

                part = record_results(
                    self.database, [result], job.theorems, model=self.model, warn=False
                )
                recorded.merge(part)
            for observe in self.observers:
                observe(result)

        start = time.perf_counter()
        results = parallel.prove_theorems(
            job.theorems,
            job.make_env,
            self.make_generator,
            self.config,
            workers=self.workers,
            backend=self.parallel,
            # Without a re-check a result is final when it arrives: record it then.
            on_result=None if self.recheck else finish,
            progress=self.progress,
            ray_address=self.ray_address,
            desc=job.desc,
        )
        if self.recheck:
            results = recheck_proofs(results, job.theorems, job.make_env)
            for result in results:
                finish(result)
        seconds = time.perf_counter() - start
        triage: dict[str, list[str]] = {}
        if job.source_dir is not None:
            from .triage import placeholder_dependencies

            triage = placeholder_dependencies(job.source_dir, job.theorems)
        outcomes = [TheoremOutcome.of(r, job.label, triage.get(r.theorem)) for r in results]
        return JobReport(job, results, outcomes, seconds)


def recheck_proofs(
    results: Sequence[SearchResult], theorems: Sequence[Theorem], make_env: EnvFactory
) -> list[SearchResult]:
    """Every proved result re-checked once more with ``verify_proof`` on a fresh environment of
    ``make_env``; a proof it does not accept becomes a ``failed`` result saying why."""
    from .verify import verify_proof
    from .workers import close_env

    if not any(r.status == "proved" for r in results):
        return list(results)
    by_key = {(t.full_name, t.file_path): t for t in theorems}
    made = make_env()
    env = made[0] if isinstance(made, (list, tuple)) else made
    try:
        out = []
        for r in results:
            theorem = by_key.get((r.theorem, r.file_path))
            if r.status != "proved":
                out.append(r)
                continue
            verdict = verify_proof(env, theorem, r.proof or []) if theorem is not None else None
            if verdict is not None and verdict.ok:
                out.append(dataclasses.replace(r, checked_by=verdict.checked_by))
            else:
                why = "; ".join(verdict.messages) if verdict is not None else "no verdict"
                error = f"the re-check rejected the proof: {why}"
                out.append(dataclasses.replace(r, status="failed", error=error))
        return out
    finally:
        close_env(made)


# -- write-back ----------------------------------------------------------------------------------


def _write_back(report: JobReport) -> None:
    """Write the job's proofs where its checked request says; fill in the report and each
    outcome's ``written_back`` / ``reason``."""
    from .writeback import edits_from_results, write_back

    request = report.job.write_back
    assert request is not None and request.target is not None  # run() checked it
    held = set()
    if not request.include_depends_on_sorry:
        for o in report.outcomes:
            if o.proved and o.triage == DEPENDS_ON_SORRY:
                held.add(o.theorem)
                o.reason = (
                    "not written back: its statement uses "
                    + ", ".join(o.depends_on)
                    + ", itself a sorry placeholder, so the proof may be an artefact of it "
                    "(include_depends_on_sorry=True writes it anyway)"
                )
    wanted = [r for r in report.results if r.theorem not in held]
    edits, _ = edits_from_results(wanted, report.job.theorems)
    if not edits:
        if not any(r.status == "proved" for r in report.results):
            logger.warning("nothing to write back: no theorem was proved")
        report.write_back = nothing_written()
        return
    target = request.target
    try:
        result = write_back(
            request.repo_dir,
            edits,
            # Where the check before the search chose (and said so): not chosen a second time.
            out=target.out if target.out is not None else request.out,
            in_place=request.in_place,
            branch=request.branch,
            missing="skip",
            force=request.force,
        )
    except (LeanDojoError, OSError) as exc:
        report.write_back = _failure(request, sorted(e.full_name for e in edits), exc)
        report.write_back_error = exc
        return
    info = result.report()
    written = set(result.written)
    skipped = info.get("skipped", {})
    for o in report.outcomes:
        if o.proved and o.theorem not in held:
            o.written_back = o.theorem in written
            if not o.written_back and o.theorem in skipped:
                o.reason = f"not written back: {skipped[o.theorem]}"
    report.write_back = info


def _failure(request: WriteBackRequest, names: list[str], exc: BaseException) -> dict[str, Any]:
    """The write-back report of a write-back that raised after the search: the error, and what
    was and was not written."""
    if request.in_place and isinstance(exc, OSError):
        what = "files of the checkout may be partly edited: check `git status` there"
    elif request.in_place:
        what = "no file of the checkout was changed"
    else:
        what = "nothing was written (no working copy made)"
    message = str(exc) if not isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    return {**nothing_written(), "error": message, "what_was_written": what, "not_written": names}
