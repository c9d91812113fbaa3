"""Layer 4 (evaluation): the calls each problem made to the verifier and the Lean CPU time they
cost, measured at the environment, in whichever process the environment lives.

A proof search runs in a worker process (or a Ray actor, or inline); its results come back, but
not what the Lean processes under it spent. :class:`MeteredEnvFactory` wraps the environment
factory of a run: each environment it builds counts every call that reaches it (``start``,
``run_tactic``, ``verify``; a verdict served by the cache in front of it never gets here) and
the CPU seconds of this process's child processes (the Lean REPLs) since the previous
call, and appends one JSON line per call to ``<ledger dir>/<pid>.jsonl``. The evaluation reads
those lines back (:class:`UsageLedger`) when the problem's result arrives: the lines of a call
are written before its search returns.

A worker proves one problem at a time, so CPU time between two calls of a worker is the
problem's. With Ray on several machines the ledger directory must be on a shared file system;
otherwise those problems show 0 calls and 0 CPU seconds.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.jsonio import loads
from ..interaction.base import AsyncProofEnv, ProofEnv
from ..interaction.wrapped import WrappedEnv, wrap_each
from ..system.processes import ChildCpuMeter

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..interaction.types import ProofState, TacticResult, Verdict
    from ..prover.search_types import EnvFactory

log = logging.getLogger(__name__)

__all__ = ["MeteredEnv", "MeteredEnvFactory", "ProblemUsage", "UsageLedger", "problem_key"]


def problem_key(full_name: str, file_path: str) -> str:
    """How the ledger names a problem: its theorem's name and file (names repeat across files
    of a LeanDojo dataset)."""
    return f"{file_path}::{full_name}"


class _LedgerWriter:
    """This process's ledger file, one JSON line per call (shared by its environments)."""

    _by_dir: dict[str, _LedgerWriter] = {}
    _lock = threading.Lock()

    def __init__(self, directory: str) -> None:
        self.path = Path(directory) / f"{os.getpid()}.jsonl"
        self.cpu = ChildCpuMeter()
        self.write_lock = threading.Lock()

    @classmethod
    def for_dir(cls, directory: str) -> _LedgerWriter:
        with cls._lock:
            key = f"{os.getpid()}:{directory}"
            writer = cls._by_dir.get(key)
            if writer is None:
                writer = cls._by_dir[key] = cls(directory)
            return writer

    def record(self, problem: str | None, seconds: float) -> None:
        cpu = self.cpu.delta()
        if problem is None:
            return
        line = json.dumps({"problem": problem, "calls": 1, "cpu": cpu, "seconds": seconds})
        try:
            with self.write_lock, self.path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")  # one short write: whole lines, also beside other workers
        except OSError as exc:  # the run goes on; its budget lacks this call
            log.warning("cannot write Lean usage to %s: %s", self.path, exc)


class MeteredEnv(WrappedEnv):
    """An environment whose every call is counted into the ledger (see the module docstring)."""

    def __init__(self, env: ProofEnv | AsyncProofEnv, ledger_dir: str) -> None:
        super().__init__(env)
        self.writer = _LedgerWriter.for_dir(ledger_dir)
        self.problem: str | None = None  # the problem of the last start/verify: run_tactic's

    def _begin(self, theorem: Theorem | None) -> tuple[str | None, float]:
        if theorem is not None:
            self.problem = problem_key(theorem.full_name, theorem.file_path)
        return self.problem, time.perf_counter()

    async def start(self, theorem: Theorem) -> ProofState:
        problem, t = self._begin(theorem)
        try:
            return await self.env.start(theorem)
        finally:
            self.writer.record(problem, time.perf_counter() - t)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        problem, t = self._begin(state.theorem)
        try:
            return await self.env.run_tactic(state, tactic, timeout)
        finally:
            self.writer.record(problem, time.perf_counter() - t)

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        problem, t = self._begin(theorem)
        try:
            return await self.env.verify(theorem, proof)
        finally:
            self.writer.record(problem, time.perf_counter() - t)


@dataclass(frozen=True)
class MeteredEnvFactory:
    """``make_env`` with each environment it builds wrapped in a :class:`MeteredEnv` writing to
    ``ledger_dir`` (picklable when ``make_env`` is)."""

    make_env: EnvFactory
    ledger_dir: str

    def __call__(self) -> AsyncProofEnv | list[AsyncProofEnv]:
        return wrap_each(self.make_env(), lambda env: MeteredEnv(env, self.ledger_dir))


@dataclass
class ProblemUsage:
    """Verifier calls and Lean CPU seconds of one problem."""

    calls: int = 0
    cpu_seconds: float = 0.0


class UsageLedger:
    """The parent's reader of the ledger directory: :meth:`take` the usage of a problem whose
    result arrived. Lines are read as they come (a file's partial last line waits)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.offsets: dict[Path, int] = {}
        self.usage: dict[str, ProblemUsage] = {}

    def _read(self) -> None:
        try:
            files = sorted(self.directory.glob("*.jsonl"))
        except OSError:
            return
        for path in files:
            start = self.offsets.get(path, 0)
            try:
                with path.open("rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self.offsets[path] = start + end
            for line in data[:end].splitlines():
                try:
                    record = loads(line)
                    problem, cpu = str(record["problem"]), float(record["cpu"])
                except (ValueError, KeyError, TypeError):
                    continue
                entry = self.usage.setdefault(problem, ProblemUsage())
                entry.calls += 1
                entry.cpu_seconds += cpu

    def take(self, problem: str) -> ProblemUsage:
        """The problem's usage so far, removed from the ledger (a problem is counted once)."""
        self._read()
        return self.usage.pop(problem, ProblemUsage())
