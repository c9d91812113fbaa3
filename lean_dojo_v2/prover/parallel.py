"""Layer 3 (prover): prove many theorems at once in worker processes, Ray actors or inline.

:func:`prove_theorems` runs one proof search per theorem (:func:`~.search.search_theorem`) and
returns the results in input order. Each worker builds its own environment and generator from
two *factories*: picklable callables without arguments (a module-level function, a
``functools.partial`` of one, or one of the specs below: :class:`ReplayEnvSpec`,
:class:`PantographEnvSpec`, :class:`HFProverSpec`, :class:`ExternalProverSpec`). Nothing of a
worker is shared: a Lean process, a model, a client each live in one worker.

Backends:

- ``"process"`` (default): ``workers`` processes started with the ``spawn`` method (safe with
  threads, CUDA and asyncio in the parent). Each works on one theorem at a time. A worker that
  dies (killed, out of memory, a segfault in native code) loses only the theorem it was on: that
  theorem is tried again on a fresh worker (``retries`` times, default 1) and otherwise gets
  status ``"error"``; every other theorem's result is kept and the run goes on.
- ``"ray"``: the same over Ray actors, each owning a ``ProofEnv`` (:mod:`.ray_backend`; a local
  Ray instance, or a cluster with ``ray_address``).
- ``"inline"``: in this process (no isolation; for debugging, for a generator that cannot be
  pickled, and for one model shared by several searches): theorem after theorem, or with
  ``workers`` > 1 that many searches at once in threads, each with an environment of its own and
  all with one generator whose calls are answered together, one batched call per round
  (:mod:`.lockstep`: on a CPU a batch of 8 states decodes in 3 times the time of one).

``on_result(result)`` is called in this process as each result arrives (record it, print it);
a progress bar shows theorems done and proved.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from ..errors import ConfigError
from .workers import (
    MAX_START_FAILURES,
    ProofWorker,
    ResultCollector,
    TaskQueue,
    WorkerStartError,
    error_result,
)

# Public here before the shared pieces moved to .workers; kept importable from this path.
from .workers import close_env as close_env
from .workers import search_one as search_one

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from ..interaction import PantographEnv, ReplayEnv
    from .external_prover import ExternalProver
    from .hf_prover import HFProver
    from .ray_backend import RayResources
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import EnvFactory, GeneratorFactory, ResultObserver

__all__ = [
    "BACKENDS",
    "ExternalProverSpec",
    "HFProverSpec",
    "PantographEnvSpec",
    "ReplayEnvSpec",
    "WorkerStartError",
    "error_result",
    "prove_theorems",
]

BACKENDS = ("process", "ray", "inline")


# -- factories -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayEnvSpec:
    """Builds a :class:`~lean_dojo_v2.interaction.ReplayEnv` from a LeanDojo dataset directory
    or split file (every theorem of it), in the worker."""

    data: str

    def __call__(self) -> ReplayEnv:
        from ..interaction import ReplayEnv

        return ReplayEnv.from_dataset(self.data)


@dataclass(frozen=True)
class PantographEnvSpec:
    """Builds a :class:`~lean_dojo_v2.interaction.PantographEnv` with these
    :class:`~lean_dojo_v2.interaction.PantographConfig` fields, in the worker (each worker
    launches its own REPL)."""

    config: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> PantographEnv:
        from ..interaction import PantographConfig, PantographEnv

        return PantographEnv(PantographConfig(**self.config))


@dataclass(frozen=True)
class HFProverSpec:
    """Builds an :class:`~lean_dojo_v2.prover.HFProver` (a local model) in the worker:
    ``HFProver(model, device=device, **kwargs)``."""

    model: str | None = None
    device: str = "auto"
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> HFProver:
        from .hf_prover import HFProver

        return HFProver(self.model, device=self.device, **self.kwargs)


@dataclass(frozen=True)
class ExternalProverSpec:
    """Builds an :class:`~lean_dojo_v2.prover.ExternalProver` (an OpenAI-compatible endpoint,
    e.g. one vLLM server shared by every worker) in the worker. The API key is read from the
    environment variable ``api_key_env`` in the worker (it is never pickled)."""

    model: str
    base_url: str
    api_key_env: str | None = "OPENAI_API_KEY"
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> ExternalProver:
        from .external_prover import ExternalProver

        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return ExternalProver(self.model, base_url=self.base_url, api_key=key, **self.kwargs)


# -- entry point ---------------------------------------------------------------------------------


def prove_theorems(
    theorems: Iterable[Theorem],
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None = None,
    workers: int = 1,
    backend: str = "process",
    on_result: ResultObserver | None = None,
    *,
    retries: int = 1,
    progress: bool = True,
    ray_address: str | None = None,
    ray_resources: RayResources | None = None,
    desc: str = "proving",
) -> list[SearchResult]:
    """Search for a proof of every theorem; one :class:`SearchResult` per theorem, in input
    order (see the module docstring for the backends).

    ``make_env`` / ``make_generator``: factories called once in each worker (a ``ProofEnv``,
    ``AsyncProofEnv`` or a list of them; a ``TacticGenerator``); picklable for ``"process"``
    and ``"ray"``. ``retries``: how often a theorem whose worker died is tried again on a fresh
    worker before it gets status ``"error"``. ``ray_address``: the Ray cluster to join
    (``"auto"``, ``"ray://host:10001"``); None starts a local Ray instance unless one is running.
    ``ray_resources``: per actor, e.g. ``{"num_cpus": 1, "num_gpus": 1}`` for a local model on a
    GPU."""
    theorems = list(theorems)
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a whole number >= 1, got {workers!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be a whole number >= 0, got {retries!r}")
    bad = [t for t in theorems if not isinstance(t, Theorem)]
    if bad:
        raise ConfigError(f"prove_theorems takes Theorem records, got a {type(bad[0]).__name__}")
    collector = ResultCollector(theorems, on_result, progress, desc)
    try:
        if not theorems:
            return []
        if backend == "inline":
            run = _run_inline if workers == 1 or len(theorems) == 1 else _run_lockstep
            run(theorems, make_env, make_generator, config, collector, min(workers, len(theorems)))
        else:
            args = (theorems, make_env, make_generator, config, min(workers, len(theorems)))
            if backend == "ray":
                from .ray_backend import RayResources, run_ray

                run_ray(
                    *args,
                    collector,
                    retries=retries,
                    address=ray_address,
                    **(ray_resources or RayResources()),
                )
            else:
                _run_processes(*args, collector, retries)
    finally:
        results = collector.finish()
    return results


def _run_inline(
    theorems: Sequence[Theorem],
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None,
    collector: ResultCollector,
    workers: int = 1,
) -> None:
    worker = ProofWorker(make_env, make_generator, config)
    try:
        for i, theorem in enumerate(theorems):
            collector.put(i, worker.prove(theorem))
    finally:
        worker.close()


def _run_lockstep(
    theorems: Sequence[Theorem],
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None,
    collector: ResultCollector,
    workers: int,
) -> None:
    """``workers`` searches at once in threads of this process, each with an environment of its
    own, all with one generator whose calls are answered together (:mod:`.lockstep`). Results
    reach ``collector`` in this thread (its observers record into a database opened here)."""
    import queue
    import threading

    from .lockstep import Lockstep

    lockstep = Lockstep(make_generator())
    todo = iter(enumerate(theorems))
    take, stop = threading.Lock(), threading.Event()
    done: queue.SimpleQueue[tuple[int, SearchResult] | BaseException | None] = queue.SimpleQueue()

    def work() -> None:
        slot = lockstep.slot()
        try:
            env = make_env()
            try:
                while True:
                    with take:
                        i, theorem = (-1, None) if stop.is_set() else next(todo, (-1, None))
                    if theorem is None:
                        break
                    slot.begin(i)
                    try:
                        done.put((i, search_one(slot, env, theorem, config)))
                    finally:
                        slot.finish()
            finally:
                close_env(env)
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            stop.set()  # the other threads end with the theorem they are on
            done.put(exc)
        finally:
            slot.close()
            done.put(None)

    threads = [
        threading.Thread(target=work, name=f"lean-dojo-v2-lockstep-{k}", daemon=True)
        for k in range(workers)
    ]
    for t in threads:
        t.start()
    running, failure = len(threads), None
    while running:
        item = done.get()
        if item is None:
            running -= 1
        elif isinstance(item, BaseException):
            failure = failure or item
        else:
            collector.put(*item)
    if failure is not None:
        raise failure


# -- worker processes ----------------------------------------------------------------------------


def _worker_main(
    conn: Connection,
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None,
    threads: int,
) -> None:
    """A worker process: build env and generator, then prove what the parent sends until None."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    try:
        worker = ProofWorker(make_env, make_generator, config)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("init_error", _portable(exc)))
        return
    try:
        conn.send(("ready", worker.backend()))
        while True:
            task = conn.recv()
            if task is None:
                break
            index, theorem = task
            conn.send(("result", index, worker.prove(theorem)))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the parent went away or stopped us
    finally:
        worker.close()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a :class:`WorkerStartError` with its text."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return WorkerStartError(f"a proof worker failed to start: {type(exc).__name__}: {exc}")


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    task: int | None = None
    ready: bool = False
    started: float = 0.0


def _needs_main_module(*objects: object) -> bool:
    """Whether unpickling ``objects`` in a worker needs the parent's ``__main__`` module (a
    factory class defined in the user's script). Unpicklable objects count as needing it: the
    worker's start then fails as multiprocessing would have it fail."""
    import pickle

    try:
        return b"__main__" in pickle.dumps(objects)
    except Exception:  # noqa: BLE001 - any pickling failure: leave multiprocessing's default
        return True


@contextmanager
def _main_module_hidden(hide: bool) -> Iterator[None]:
    """While a worker starts, hide the parent's ``__main__`` from ``spawn``, which would
    otherwise import it again in the worker and run a script's top-level code once more there: a
    script in upstream LeanDojo-v2's style, without an ``if __name__ == "__main__":`` guard,
    would train again in every worker, then fail. Only when the factories do not need ``__main__``
    (:func:`_needs_main_module`); ``spawn`` reads these attributes while ``start()`` runs."""
    import sys

    main = sys.modules.get("__main__")
    if not hide or main is None:
        yield
        return
    saved: dict[str, object] = {
        k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__
    }
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _run_processes(
    theorems: Sequence[Theorem],
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None,
    workers: int,
    collector: ResultCollector,
    retries: int,
) -> None:
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")
    threads = max(1, (os.cpu_count() or 1) // workers)
    hide_main = not _needs_main_module(make_env, make_generator, config)
    pending = TaskQueue(theorems, collector, retries)
    pool: list[_Worker] = []
    backend = "unknown"
    start_failures = 0

    def spawn() -> None:
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_worker_main,
            args=(child, make_env, make_generator, config, threads),
            name="lean-dojo-v2-prover",
            daemon=True,
        )
        with _main_module_hidden(hide_main):
            proc.start()
        child.close()
        pool.append(_Worker(proc, parent, started=time.perf_counter()))

    def assign(worker: _Worker) -> None:
        if pending:
            worker.task = pending.pop()
            worker.started = time.perf_counter()
            worker.conn.send((worker.task, theorems[worker.task]))
        else:
            worker.task = None
            _send_stop(worker)

    def lost(worker: _Worker) -> None:
        """``worker`` died: its theorem is retried or gets an error result."""
        nonlocal start_failures
        pool.remove(worker)
        code = worker.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        if not worker.ready:
            start_failures += 1
            if start_failures >= MAX_START_FAILURES:
                raise WorkerStartError(
                    f"proof workers died while starting ({how}) {start_failures} times in a row; "
                    "check memory (each worker loads its own model), or prove in one process "
                    "(--workers 1, workers=1)"
                )
        if worker.task is not None:
            pending.lost(
                worker.task,
                who="worker",
                how=how,
                error=f"the worker process died ({how}) while proving this theorem",
                backend=backend,
                seconds=time.perf_counter() - worker.started,
            )
        if pending and len(pool) < workers:
            spawn()

    try:
        for _ in range(workers):
            spawn()
        while not collector.done():
            if not pool:
                spawn()
            by_handle: dict[Any, _Worker] = {}  # a worker's pipe or its process sentinel
            for w in pool:
                by_handle[w.conn] = w
                by_handle[w.process.sentinel] = w
            for handle in wait(list(by_handle), timeout=1.0):
                worker = by_handle[handle]
                if worker not in pool:
                    continue
                message = _receive(worker)
                if message is None:  # died: its messages (if any) were read first
                    if not worker.process.is_alive() or handle is worker.conn:
                        worker.process.join(timeout=5)
                        lost(worker)
                    continue
                kind = message[0]
                if kind == "init_error":
                    raise message[1]
                if kind == "ready":
                    worker.ready = True
                    start_failures = 0
                    backend = message[1]
                    assign(worker)
                elif kind == "result":
                    _, index, result = message
                    worker.task = None
                    collector.put(index, result)
                    assign(worker)
    finally:
        for w in pool:
            _send_stop(w)
        deadline = time.monotonic() + 10
        for w in pool:
            w.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(timeout=5)
            w.conn.close()


def _receive(worker: _Worker) -> tuple[Any, ...] | None:
    """The worker's next message, or None when its pipe is closed (the process ended) or it
    has nothing to say yet."""
    try:
        if worker.conn.poll():
            return worker.conn.recv()
    except (EOFError, OSError):
        return None
    return None


def _send_stop(worker: _Worker) -> None:
    try:
        worker.conn.send(None)
    except (OSError, ValueError):
        pass
