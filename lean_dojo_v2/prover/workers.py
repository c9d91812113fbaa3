"""Layer 3 (prover): what every parallel proving backend shares.

A worker (a process of :mod:`.parallel`, an actor of :mod:`.ray_backend`) is a
:class:`ProofWorker`: an environment and a generator built once from picklable factories, one
search per theorem. In the parent, a :class:`TaskQueue` hands out theorems and gives a theorem
whose worker died to a fresh one, and a :class:`ResultCollector` keeps the results in input order,
calls ``on_result`` and drives the progress bar. Both backends import this module; neither imports
the other's private names.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..data.model import Theorem
from ..errors import LeanDojoError

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import EnvFactory, Envs, GeneratorFactory, ResultObserver

logger = logging.getLogger(__name__)

__all__ = [
    "ProofWorker",
    "ResultCollector",
    "TaskQueue",
    "WorkerStartError",
    "backend_of",
    "close_env",
    "error_result",
    "search_one",
]

# A worker that dies before it is ready this many times in a row means the factories cannot
# work on this machine (a crash at import, out of memory at model load): stop respawning.
MAX_START_FAILURES = 3


class WorkerStartError(LeanDojoError):
    """Proof workers could not start: their environment or generator factory failed (the
    message holds its error), or the worker processes died while starting
    ``MAX_START_FAILURES`` times in a row (out of memory loading the model, a crash in native
    code)."""


# -- one theorem ---------------------------------------------------------------------------------


def error_result(
    theorem: Theorem, message: str, backend: str = "unknown", seconds: float = 0.0
) -> SearchResult:
    """The result of a theorem whose search could not run (its worker died, ...)."""
    from .result import SearchResult

    return SearchResult(
        theorem=theorem.full_name,
        file_path=theorem.file_path,
        status="error",
        proof=None,
        expansions=0,
        seconds=seconds,
        backend=backend,
        checked_by=None,
        error=message,
    )


def backend_of(env: object) -> str:
    """The ``backend`` name of an environment (of the first, for a list of them)."""
    if isinstance(env, (list, tuple)):
        return backend_of(env[0]) if env else "unknown"
    return str(getattr(env, "backend", "unknown"))


def search_one(
    generator: TacticGenerator, env: Envs, theorem: Theorem, config: SearchConfig | None
) -> SearchResult:
    """One search; an exception that escapes it becomes an ``"error"`` result."""
    from .search import search_theorem

    start = time.perf_counter()
    try:
        return search_theorem(generator, env, theorem, config)
    except Exception as exc:  # noqa: BLE001 - one theorem's failure must not end the run
        logger.warning("search of %s raised %s: %s", theorem.full_name, type(exc).__name__, exc)
        return error_result(
            theorem, f"{type(exc).__name__}: {exc}", backend_of(env), time.perf_counter() - start
        )


def close_env(env: Envs) -> None:
    """Close an environment (or each of a list), sync or async; best effort."""
    for e in env if isinstance(env, (list, tuple)) else [env]:
        close = getattr(e, "close", None)
        if close is None:
            continue
        try:
            out = close()
            if hasattr(out, "__await__"):
                from .search import run_sync

                run_sync(out)
        except Exception as exc:  # noqa: BLE001 - best effort at shutdown
            logger.debug("closing %r failed: %s", e, exc)


class ProofWorker:
    """An environment and a generator, built once in the worker from the factories;
    :meth:`prove` runs one search. The body of a worker process and of a Ray actor."""

    def __init__(
        self,
        make_env: EnvFactory,
        make_generator: GeneratorFactory,
        config: SearchConfig | None,
    ) -> None:
        self.env = make_env()
        try:
            self.generator = make_generator()
        except BaseException:
            close_env(self.env)  # a Lean process must not outlive a worker that failed to start
            raise
        self.config = config

    def backend(self) -> str:
        return backend_of(self.env)

    def prove(self, theorem: Theorem) -> SearchResult:
        return search_one(self.generator, self.env, theorem, self.config)

    def close(self) -> None:
        close_env(self.env)


# -- the parent's side ---------------------------------------------------------------------------


class _ProgressBar:
    """Theorems done / proved, as a tqdm bar on stderr."""

    def __init__(self, total: int, enabled: bool, desc: str) -> None:
        from tqdm.auto import tqdm

        self.proved = 0
        self.bar = tqdm(total=total, desc=desc, unit="thm", disable=not enabled, dynamic_ncols=True)

    def update(self, result: SearchResult) -> None:
        self.proved += result.status == "proved"
        self.bar.set_postfix(proved=self.proved, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class ResultCollector:
    """Results in input order, the callback and the progress bar in one place."""

    def __init__(
        self,
        theorems: Sequence[Theorem],
        on_result: ResultObserver | None,
        progress: bool,
        desc: str,
    ) -> None:
        self.theorems = theorems
        self.results: list[SearchResult | None] = [None] * len(theorems)
        self.on_result = on_result
        self.bar = _ProgressBar(len(theorems), progress, desc)

    def put(self, index: int, result: SearchResult) -> None:
        """Record theorem ``index``'s result; a second result for it is ignored (the first
        one was already reported)."""
        if self.results[index] is not None:
            return
        self.results[index] = result
        self.bar.update(result)
        if self.on_result is not None:
            self.on_result(result)

    def done(self) -> bool:
        return all(r is not None for r in self.results)

    def finish(self) -> list[SearchResult]:
        self.bar.close()
        return [r for r in self.results if r is not None]


class TaskQueue:
    """The theorems still to prove, by index, each given to a fresh worker again after its
    worker died, while ``retries`` last (shared by the process and Ray backends)."""

    def __init__(
        self, theorems: Sequence[Theorem], collector: ResultCollector, retries: int
    ) -> None:
        self.theorems = theorems
        self.collector = collector
        self.retries = retries
        self.pending: deque[int] = deque(range(len(theorems)))
        self.tries = [0] * len(theorems)

    def __bool__(self) -> bool:
        return bool(self.pending)

    def __len__(self) -> int:
        return len(self.pending)

    def pop(self) -> int:
        """The next theorem's index (a retried one first)."""
        return self.pending.popleft()

    def pop_first(self, skip: Callable[[int], bool]) -> int | None:
        """The first theorem's index in the queue that ``skip`` does not pass over (a retried
        one first), or None when it passes over them all."""
        for i in self.pending:
            if not skip(i):
                self.pending.remove(i)
                return i
        return None

    def lost(
        self, i: int, *, who: str, how: str = "", error: str, backend: str, seconds: float
    ) -> None:
        """The ``who`` (``"worker"``, ``"Ray actor"``) proving theorem ``i`` died (``how``, for
        the log): queue it first again while it has retries left, else its result is an
        ``"error"`` result with message ``error``."""
        died = f"the {who} proving {self.theorems[i].full_name} died" + (f" ({how})" if how else "")
        self.tries[i] += 1
        if self.tries[i] <= self.retries:
            logger.warning("%s; trying it again on a fresh %s", died, who.split()[-1])
            self.pending.appendleft(i)
        else:
            logger.warning("%s", died)
            self.collector.put(i, error_result(self.theorems[i], error, backend, seconds))
