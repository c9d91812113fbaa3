"""Best-first proof search (and the whole-proof mode) over :class:`AsyncProofEnv` s.

:class:`BestFirstSearch` keeps a frontier of open proof states ordered by *priority*:

    priority(state) = cumulative log-prob of the tactic path to it
                      + progress_weight * (- predicted steps remaining)      (when weight > 0)

and repeatedly takes the ``frontier_batch`` best open states, asks the generator for
``num_samples`` tactics for all of them in **one** ``generate`` call, and runs every
(state, tactic) pair. Tactics of one batch run concurrently across the environments given
(one call at a time per environment). Each new state becomes a node; a state seen before (same
canonical text, :attr:`ProofState.text`) is not expanded again — the better path is kept while
it is still open. A tactic that leaves no goals gives a candidate proof, which counts only after
``env.verify(theorem, proof_text(tactics))`` accepts it (``SearchResult.checked_by`` is the
verdict's). A rejected proof is counted (``stats["verify_rejected"]``) and the search goes on.

Budgets: ``max_expansions`` (nodes expanded), ``timeout`` (wall clock per theorem: the generator
call is abandoned and no tactic is started past it, and every tactic's own limit is cut to the
time left), ``tactic_timeout`` (passed to ``run_tactic``), ``max_depth``.

Failures of the environment drop a branch, never the search: a :class:`TacticTimeout` is an
error edge; :class:`EnvCrashedError` (the REPL died or answered garbage; Pantograph relaunches it
on the next call) drops the tactic that caused it; a :class:`StaleStateError` (the state belongs
to a process that was restarted since) makes the search re-create the state on that environment
by starting the theorem again and replaying the node's tactic path, then retry — so one crash
costs only its own branch. Errors that are not the environment's (the generator or the progress
model raising, malformed generator output, a theorem the environment does not know) end the
search with ``status="error"`` and the message; nothing raises out of ``search``.

Environments: replay states carry their goals, so with replay environments any environment
runs any node. Pantograph states are REPL state ids of one process, so a node's tactics run on
an environment that holds the node: the root is started on every environment, and a child
lives on the environment that made it (documented in ``docs/search.md``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import queue
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, ProofEnv, split_tactics
from ..interaction.types import (
    EnvClosedError,
    EnvCrashedError,
    InteractionError,
    InvalidRequestError,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticTimeout,
    UnknownTheoremError,
    Verdict,
)
from .env_adapter import as_async_envs, restarts_of, shares_states
from .result import SearchResult, proof_text
from .search_tree import DROPPED, EXPANDED, OPEN, TOO_DEEP, Node, SearchTree

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class SearchConfig:
    """Settings of one proof search (per theorem).

    Generation:
        num_samples: tactics asked of the generator per expanded state (whole-proof mode: proofs
            per generator request).
        frontier_batch: open states expanded per generator call (one batched ``generate`` over
            all of them); 1 is plain best-first, larger batches keep a model busy.

    Budgets:
        max_expansions: states expanded (one generator request each) before giving up
            (``status="failed"``, ``stats["stop_reason"] == "max_expansions"``).
        timeout: wall-clock seconds per theorem (``status="timeout"``).
        tactic_timeout: seconds each ``run_tactic`` may take (the environment returns a
            ``TacticTimeout`` past it); cut to the time left of ``timeout``.
        max_depth: states this many tactics deep are not expanded (None: no limit).

    Priority:
        progress_weight: weight λ of the progress model's predicted steps remaining; the
            priority is ``logprob + λ·(−steps)``. 0 uses log-probs only and loads no model;
            > 0 needs a model (argument, or ``LEANPROGRESS_MODEL``).

    Modes:
        whole_proof: sample whole proofs (``generator.generate_proofs``) and verify each
            instead of searching tactic by tactic (:class:`WholeProofSearch`).
        whole_proof_rounds: generator requests in whole-proof mode (``num_samples`` proofs each).

    Failure handling:
        rebuild_stale: re-create a state lost to an environment restart (start the theorem and
            replay the node's tactics) instead of dropping the node.
        max_rebuilds: at most this many such re-creations per theorem.
        verify_retries: extra attempts of a whole-proof re-check whose environment crashed.
        generator_in_thread: run the (blocking) generator in a worker thread, so the wall-clock
            limit holds during a slow generation and environments stay responsive.
    """

    num_samples: int = 8
    max_expansions: int = 100
    timeout: float = 600.0
    tactic_timeout: float = 30.0
    frontier_batch: int = 4
    progress_weight: float = 0.0
    whole_proof: bool = False
    whole_proof_rounds: int = 1
    max_depth: int | None = None
    rebuild_stale: bool = True
    max_rebuilds: int = 50
    verify_retries: int = 1
    generator_in_thread: bool = True

    def __post_init__(self) -> None:
        for name in ("num_samples", "max_expansions", "frontier_batch", "whole_proof_rounds"):
            _check_int(name, getattr(self, name), 1)
        for name in ("max_rebuilds", "verify_retries"):
            _check_int(name, getattr(self, name), 0)
        if self.max_depth is not None:
            _check_int("max_depth", self.max_depth, 1)
        for name in ("timeout", "tactic_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(
                    f"SearchConfig.{name} must be a finite number of seconds > 0, got {value!r}"
                )
        w = self.progress_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ConfigError(
                f"SearchConfig.progress_weight must be a finite number >= 0, got {w!r}"
            )


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"SearchConfig.{name} must be a whole number >= {low}, got {value!r}")


# ------------------------------------------------------------------------------ helpers


class _Stop(Exception):
    """Ends a search early with a status (internal)."""

    def __init__(self, status: str, reason: str, error: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.error = status, reason, error


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from blocking code, also where an event loop is already
    running in this thread (Jupyter): then it runs on a fresh loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="lean-dojo-v2-search", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _load_progress_model() -> Any:
    """The model named by ``LEANPROGRESS_MODEL`` (imported only when a weight asks for it)."""
    try:
        from ..models.progress import load_progress_model
    except ImportError as exc:
        raise ConfigError(
            "SearchConfig.progress_weight > 0 needs a progress model, but "
            f"lean_dojo_v2.models.progress cannot be imported ({exc}); pass progress_model= or "
            "set progress_weight=0"
        ) from exc
    model = load_progress_model()
    if model is None:
        raise ConfigError(
            "SearchConfig.progress_weight > 0 needs a progress model: pass progress_model= to "
            "the search or set LEANPROGRESS_MODEL to a trained model's directory "
            "(or set progress_weight=0)"
        )
    return model


def _check_theorem(theorem: object) -> Theorem:
    if not isinstance(theorem, Theorem):
        raise ConfigError(
            f"search needs a lean_dojo_v2.data.Theorem, not {type(theorem).__name__} "
            "(load theorems with lean_dojo_v2.data.load_theorems)"
        )
    return theorem


def _clean_candidates(raw: object, expected: int, num_samples: int, what: str) -> list[list[Any]]:
    """Check the generator's answer: ``expected`` lists of candidates (``.tactic`` str,
    ``.logprob`` number). Per state: duplicates (same text up to white space) merged keeping
    the best score, at most ``num_samples``, best first. Raises ValueError on a malformed answer."""
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)) or len(raw) != expected:
        got = len(raw) if isinstance(raw, Sequence) else type(raw).__name__
        raise ValueError(f"{what} returned {got} lists for {expected} states")
    out: list[list[Any]] = []
    for i, cands in enumerate(raw):
        if not isinstance(cands, Sequence) or isinstance(cands, (str, bytes)):
            raise ValueError(f"{what}: entry {i} is a {type(cands).__name__}, not a list")
        best: dict[str, Any] = {}
        for c in cands:
            tactic, lp = getattr(c, "tactic", None), getattr(c, "logprob", None)
            if (
                not isinstance(tactic, str)
                or isinstance(lp, bool)
                or not isinstance(lp, (int, float))
            ):
                raise ValueError(
                    f"{what}: entry {i} holds {c!r}; expected Candidate(tactic: str, logprob: float)"
                )
            if not tactic.strip() or math.isnan(lp):
                continue
            key = " ".join(tactic.split())
            if key not in best or lp > best[key].logprob:
                best[key] = c
        ranked = sorted(best.values(), key=lambda c: -c.logprob)
        out.append(ranked[:num_samples])
    return out


class _Clock:
    def __init__(self, timeout: float) -> None:
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + timeout

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def remaining(self) -> float:
        return self.deadline - time.perf_counter()


class _Counters:
    """Time and event counters of one search, merged into ``SearchResult.stats``."""

    def __init__(self) -> None:
        self.generator_calls = 0
        self.generator_seconds = 0.0
        self.candidates = 0
        self.tactic_calls = 0
        self.env_seconds = 0.0  # sum over calls (several environments overlap)
        self.env_wall_seconds = 0.0  # wall time spent waiting for environments
        self.verify_calls = 0
        self.verify_rejected = 0
        self.verify_errors = 0
        self.verify_seconds = 0.0
        self.tactic_timeouts = 0
        self.env_crashes = 0
        self.stale_states = 0
        self.rebuilds = 0
        self.rebuild_failures = 0
        self.skipped_jobs = 0
        self.progress_calls = 0
        self.progress_seconds = 0.0
        self.crash_messages: list[str] = []
        self.rejections: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        d = dict(vars(self))
        for k, v in d.items():
            if isinstance(v, float):
                d[k] = round(v, 6)
        return d


async def _timed_call(func: Any, *args: Any, in_thread: bool, timeout: float) -> tuple[Any, float]:
    """``func(*args)`` (blocking) and its own run time; in a worker thread when ``in_thread``,
    then abandoned (TimeoutError) after ``timeout`` seconds."""

    def call() -> tuple[Any, float]:
        t = time.perf_counter()
        value = func(*args)
        return value, time.perf_counter() - t

    if not in_thread:
        return call()
    future = _in_daemon_thread(call)
    done, _ = await asyncio.wait({future}, timeout=max(timeout, 0.0))
    if not done:
        future.add_done_callback(_discard_result)
        raise TimeoutError
    return future.result()


class _DaemonPool:
    """Daemon worker threads for blocking generator / progress-model calls.

    Not the loop's default executor: ``asyncio.run`` waits for that one at exit, so a generator
    call abandoned at the deadline would hold the search past its wall-clock limit. Threads are
    kept for the next call (a hop costs tens of microseconds, a new thread more); a new one is
    started only when every thread is busy (e.g. with an abandoned call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._idle = 0

    def submit(self, func: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._tasks.put((func, future))
        if spawn:
            threading.Thread(
                target=self._work, name="lean-dojo-v2-search-worker", daemon=True
            ).start()
        return future

    def _work(self) -> None:
        while True:
            func, future = self._tasks.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(func())
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1


_POOL = _DaemonPool()


def _in_daemon_thread(func: Any) -> asyncio.Future[Any]:
    """Run ``func()`` in a daemon worker thread (:class:`_DaemonPool`); an asyncio future."""
    return asyncio.wrap_future(_POOL.submit(func))


def _discard_result(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # retrieve it so asyncio does not log "never retrieved"


# ------------------------------------------------------------------------ best-first


@dataclass
class _Job:
    node: Node
    tactic: str
    logprob: float
    index: int
    env_index: int | None = None
    result: Any = None  # a TacticResult, or "crash" / "stale" / "skipped"


class _BlockingSearch:
    """``search``: the blocking form of the subclass's ``search_async``."""

    def search(
        self, env: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        """Blocking :meth:`search_async` (blocking environments run in worker threads). Use an
        ``AsyncPantographEnv`` only with :meth:`search_async` in the loop that opened it."""
        envs = as_async_envs(env)
        _check_theorem(theorem)
        return run_sync(self.search_async(envs, theorem))  # type: ignore[attr-defined]


class BestFirstSearch(_BlockingSearch):
    """Best-first search over proof states; see the module docstring.

    ``last_tree`` is the :class:`SearchTree` of the latest search (expansion order, nodes, edges),
    for inspection and tests."""

    def __init__(
        self,
        generator: Any,
        config: SearchConfig | None = None,
        progress_model: Any = None,
    ) -> None:
        self.generator = generator
        self.config = config if config is not None else SearchConfig()
        if not isinstance(self.config, SearchConfig):
            raise ConfigError(f"config must be a SearchConfig, not {type(self.config).__name__}")
        if not callable(getattr(generator, "generate", None)):
            raise ConfigError(
                f"{type(generator).__name__} is not a TacticGenerator: it has no generate()"
            )
        self.progress_model = progress_model
        if self.config.progress_weight > 0 and progress_model is None:
            self.progress_model = _load_progress_model()
        self.last_tree: SearchTree | None = None

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        run = _BestFirstRun(self, as_async_envs(envs), _check_theorem(theorem))
        try:
            return await run.execute()
        finally:
            self.last_tree = run.tree


class _BestFirstRun:
    """The state of one best-first search of one theorem."""

    def __init__(self, owner: BestFirstSearch, envs: list[AsyncProofEnv], theorem: Theorem):
        self.cfg = owner.config
        self.owner = owner
        self.envs = envs
        self.theorem = theorem
        self.tree = SearchTree()
        self.c = _Counters()
        self.shared = all(shares_states(e) for e in envs)
        self.restarts0 = [restarts_of(e) for e in envs]
        self.clock = _Clock(self.cfg.timeout)
        self.expansions = 0
        self.proof: list[str] | None = None
        self.verdict: Verdict | None = None

    # ----------------------------------------------------------------------- driver
    async def execute(self) -> SearchResult:
        try:
            generator = self.owner.generator.for_theorem(self.theorem)
            await self._start()
            await self._loop(generator)
            raise _Stop("failed", "exhausted")  # pragma: no cover - _loop always raises
        except _Stop as stop:
            return self._result(stop.status, stop.reason, stop.error)
        except EnvClosedError as exc:
            return self._result("error", "env_closed", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - never a traceback out of search
            log.exception("search of %s failed", self.theorem.full_name)
            return self._result("error", "exception", f"{type(exc).__name__}: {exc}")

    async def _start(self) -> None:
        """The root: started on the first environment (shared states) or on every one."""
        targets = [0] if self.shared else list(range(len(self.envs)))
        t = time.perf_counter()
        outcomes = await asyncio.gather(
            *(self.envs[i].start(self.theorem) for i in targets), return_exceptions=True
        )
        self.c.env_wall_seconds += time.perf_counter() - t
        states: dict[int, ProofState] = {}
        first_error: BaseException | None = None
        for i, out in zip(targets, outcomes, strict=True):
            if isinstance(out, ProofState):
                states[i] = out
            elif isinstance(out, BaseException):
                if isinstance(out, UnknownTheoremError):
                    raise _Stop("error", "unknown_theorem", str(out))
                if not isinstance(out, Exception):
                    raise out
                first_error = first_error or out
                if isinstance(out, EnvCrashedError):
                    self._crash(out)
            elif isinstance(out, ProofFinished):
                raise _Stop("error", "no_goals", "the environment says the theorem has no goals")
        if not states:
            assert first_error is not None
            raise _Stop(
                "error",
                "start_failed",
                f"starting {self.theorem.full_name} failed: "
                f"{type(first_error).__name__}: {first_error}",
            )
        first = min(states)
        root = self.tree.add_root(states[first], first)
        root.handles.update(states)
        self.tree.push(root)

    async def _loop(self, generator: Any) -> None:
        cfg = self.cfg
        tree = self.tree
        while True:
            if self.clock.remaining() <= 0:
                raise _Stop("timeout", "timeout")
            if self.expansions >= cfg.max_expansions:
                raise _Stop("failed", "max_expansions")
            batch: list[Node] = []
            while len(batch) < min(cfg.frontier_batch, cfg.max_expansions - self.expansions):
                node = tree.pop()
                if node is None:
                    break
                if not node.handles:  # every environment lost it
                    node.status = DROPPED
                    continue
                batch.append(node)
            if not batch:
                raise _Stop("failed", "exhausted")
            candidates = await self._generate(generator, [n.key for n in batch])
            for node in batch:
                node.status = EXPANDED
                node.expanded_at = self.expansions
                tree.expansion_order.append(node.id)
                self.expansions += 1
            pairs = [
                (node, c) for node, cands in zip(batch, candidates, strict=True) for c in cands
            ]
            jobs = [_Job(node, c.tactic, float(c.logprob), k) for k, (node, c) in enumerate(pairs)]
            self.c.candidates += len(jobs)
            await self._run_jobs(jobs)
            await self._absorb(jobs)

    # -------------------------------------------------------------------- generation
    async def _generate(self, generator: Any, states: list[str]) -> list[list[Any]]:
        cfg = self.cfg
        remaining = self.clock.remaining()
        waited = time.perf_counter()
        try:
            raw, seconds = await _timed_call(
                generator.generate,
                states,
                cfg.num_samples,
                in_thread=cfg.generator_in_thread,
                timeout=remaining,
            )
        except TimeoutError:
            # the abandoned call's time is the generator's, not the engine's
            self.c.generator_seconds += time.perf_counter() - waited
            raise _Stop("timeout", "timeout_in_generator") from None
        except Exception as exc:  # noqa: BLE001 - the generator's failure ends the search
            raise _Stop(
                "error",
                "generator_error",
                f"the tactic generator raised {type(exc).__name__}: {exc}",
            ) from exc
        self.c.generator_calls += 1
        self.c.generator_seconds += seconds
        try:
            return _clean_candidates(raw, len(states), cfg.num_samples, "generate()")
        except ValueError as exc:
            raise _Stop("error", "generator_output", str(exc)) from None

    # ---------------------------------------------------------------------- tactics
    async def _run_jobs(self, jobs: list[_Job]) -> None:
        """Run every job; each environment runs one at a time, the environments in parallel.
        A worker takes the first pending job it can run (replay: any; Pantograph: one whose
        node it holds). Jobs no environment can run, or left when time runs out, are skipped."""
        pending = list(jobs)
        t = time.perf_counter()

        async def worker(i: int) -> None:
            while pending:
                if self.clock.remaining() <= 0:
                    return
                job = next((j for j in pending if self.shared or i in j.node.handles), None)
                if job is None:
                    return
                pending.remove(job)
                job.env_index = i
                job.result = await self._run_one(i, job)

        await asyncio.gather(*(worker(i) for i in range(len(self.envs))))
        self.c.env_wall_seconds += time.perf_counter() - t
        for job in pending:
            job.result = "skipped"
            self.c.skipped_jobs += 1

    def _state_on(self, i: int, node: Node) -> ProofState | None:
        state = node.handles.get(i)
        if state is None and self.shared and node.handles:
            state = next(iter(node.handles.values()))
        return state

    async def _run_one(self, i: int, job: _Job) -> Any:
        state = self._state_on(i, job.node)
        if state is None:
            return "stale"
        result = await self._tactic(i, state, job.tactic)
        if result == "stale":
            self.c.stale_states += 1
            job.node.handles.pop(i, None)
            rebuilt = await self._rebuild(i, job.node)
            if rebuilt is None:
                return "stale"
            result = await self._tactic(i, rebuilt, job.tactic)
            if result == "stale":
                self.c.stale_states += 1
                job.node.handles.pop(i, None)
        return result

    async def _tactic(self, i: int, state: ProofState, tactic: str) -> Any:
        """One ``run_tactic``: a TacticResult, or ``"crash"`` / ``"stale"`` / ``"skipped"``."""
        remaining = self.clock.remaining()
        if remaining <= 0:
            return "skipped"
        limit = min(self.cfg.tactic_timeout, remaining)
        t = time.perf_counter()
        try:
            return await self.envs[i].run_tactic(state, tactic, limit)
        except StaleStateError:
            return "stale"
        except InvalidRequestError as exc:  # e.g. tactic text Lean cannot take
            return TacticError(str(exc), self.envs[i].backend, "invalid")
        except EnvCrashedError as exc:
            self._crash(exc)
            return "crash"
        except EnvClosedError:
            raise
        except InteractionError as exc:  # the REPL refused the request: only this branch
            self._crash(exc)
            return "crash"
        finally:
            self.c.tactic_calls += 1
            self.c.env_seconds += time.perf_counter() - t

    def _crash(self, exc: BaseException) -> None:
        self.c.env_crashes += 1
        if len(self.c.crash_messages) < 5:
            self.c.crash_messages.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        log.info(
            "search of %s: environment failure (%s); dropping that branch",
            self.theorem.full_name,
            exc,
        )

    async def _rebuild(self, i: int, node: Node) -> ProofState | None:
        """Re-create ``node``'s state on environment ``i`` after its process was restarted:
        start the theorem again and replay the node's path (every state on the way must be the
        recorded one). None (node dropped there) when that fails or the budget is spent."""
        if not self.cfg.rebuild_stale or self.c.rebuilds >= self.cfg.max_rebuilds:
            self.c.rebuild_failures += 1
            return None
        self.c.rebuilds += 1
        chain: list[Node] = []
        current: Node | None = node
        while current is not None:
            chain.append(current)
            current = self.tree.nodes[current.parent] if current.parent is not None else None
        chain.reverse()
        t = time.perf_counter()
        try:
            state: Any = await self.envs[i].start(self.theorem)
        except EnvClosedError:
            raise
        except InteractionError as exc:
            if isinstance(exc, EnvCrashedError):
                self._crash(exc)
            self.c.rebuild_failures += 1
            return None
        finally:
            self.c.env_seconds += time.perf_counter() - t
        if not isinstance(state, ProofState) or state.text != chain[0].key:
            self.c.rebuild_failures += 1
            return None
        chain[0].handles[i] = state
        for child in chain[1:]:
            assert child.tactic is not None
            result = await self._tactic(i, state, child.tactic)
            if not isinstance(result, ProofState) or result.text != child.key:
                self.c.rebuild_failures += 1
                return None
            child.handles[i] = result
            state = result
        return state

    # ------------------------------------------------------------------ bookkeeping
    async def _absorb(self, jobs: list[_Job]) -> None:
        """Add the outcomes of a batch to the tree (in job order, so the tree does not depend on
        which environment finished first), score and push the new states, then re-check the
        proofs found, best first."""
        tree = self.tree
        cfg = self.cfg
        new_nodes: list[Node] = []
        moved: list[Node] = []
        proofs: list[tuple[float, list[str]]] = []
        for job in jobs:
            result, node = job.result, job.node
            if isinstance(result, ProofState):
                env_index = job.env_index if job.env_index is not None else 0
                child, how = tree.add_child(node, job.tactic, job.logprob, result, env_index)
                if how == "new":
                    if cfg.max_depth is not None and child.depth >= cfg.max_depth:
                        child.status = TOO_DEEP
                    else:
                        new_nodes.append(child)
                elif how == "reparented" and child not in new_nodes:
                    moved.append(child)
            elif isinstance(result, ProofFinished):
                tree.add_edge(node, job.tactic, job.logprob, "proof")
                proofs.append((node.logprob + job.logprob, tree.path(node, job.tactic)))
            elif isinstance(result, TacticError):
                kind = result.kind or "tactic"
                if isinstance(result, TacticTimeout):
                    kind = "timeout"
                    self.c.tactic_timeouts += 1
                tree.tactic_errors[kind] += 1
                tree.add_edge(node, job.tactic, job.logprob, f"error:{kind}")
            else:  # "crash" / "stale" / "skipped"
                tree.add_edge(node, job.tactic, job.logprob, str(result))
                if result == "stale" and not node.handles and node.status == OPEN:
                    node.status = DROPPED
        await self._score(new_nodes)
        for child in new_nodes:
            tree.push(child)
        for child in dict.fromkeys(moved):
            child.priority = self._priority(child)
            tree.push(child)
        for _, tactics in sorted(proofs, key=lambda p: -p[0]):
            if await self._verify(tactics):
                raise _Stop("proved", "proved")

    def _priority(self, node: Node) -> float:
        w = self.cfg.progress_weight
        if w > 0 and node.progress is not None:
            return node.logprob - w * node.progress
        return node.logprob

    async def _score(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        model = self.owner.progress_model
        if self.cfg.progress_weight > 0 and model is not None:
            goals = [n.key for n in nodes]
            prefixes = ["\n".join(self.tree.path(n)) for n in nodes]
            t = time.perf_counter()
            try:
                preds = await _in_daemon_thread(
                    lambda: model.predict(goals=goals, prefixes=prefixes)
                )
            except Exception as exc:  # noqa: BLE001
                raise _Stop(
                    "error",
                    "progress_error",
                    f"the progress model raised {type(exc).__name__}: {exc}",
                ) from exc
            self.c.progress_calls += 1
            self.c.progress_seconds += time.perf_counter() - t
            if isinstance(preds, (int, float)):
                preds = [preds]
            if len(preds) != len(nodes):
                raise _Stop(
                    "error",
                    "progress_output",
                    f"the progress model returned {len(preds)} predictions for {len(nodes)} states",
                )
            for n, p in zip(nodes, preds, strict=True):
                n.progress = float(p)
        for n in nodes:
            n.priority = self._priority(n)

    async def _verify(self, tactics: list[str]) -> bool:
        """Whole-proof re-check; True (and the proof kept) when the verdict is ok."""
        verdict = await _verify_proof(
            self.envs, self.theorem, proof_text(tactics), self.cfg, self.c, self.clock, self._crash
        )
        if verdict is not None and verdict.ok:
            self.proof, self.verdict = tactics, verdict
            return True
        return False

    def _result(self, status: str, reason: str, error: str | None) -> SearchResult:
        stats: dict[str, Any] = {"stop_reason": reason}
        stats.update(self.tree.stats())
        stats.update(self.c.as_dict())
        stats["envs"] = len(self.envs)
        stats["shared_states"] = self.shared
        stats["env_restarts"] = _restart_delta(self.envs, self.restarts0)
        seconds = self.clock.elapsed()
        stats["engine_seconds"] = round(
            max(
                0.0,
                seconds
                - self.c.generator_seconds
                - self.c.env_wall_seconds
                - self.c.verify_seconds
                - self.c.progress_seconds,
            ),
            6,
        )
        proved = status == "proved"
        return SearchResult(
            theorem=self.theorem.full_name,
            file_path=self.theorem.file_path,
            status=status,
            proof=list(self.proof) if proved and self.proof is not None else None,
            expansions=self.expansions,
            seconds=seconds,
            backend=self.envs[0].backend,
            checked_by=self.verdict.checked_by if proved and self.verdict else None,
            error=error,
            stats=stats,
        )


def _restart_delta(envs: list[AsyncProofEnv], before: list[int | None]) -> int:
    total = 0
    for env, b in zip(envs, before, strict=True):
        now = restarts_of(env)
        if now is not None and b is not None:
            total += now - b
    return total


async def _verify_proof(
    envs: list[AsyncProofEnv],
    theorem: Theorem,
    text: str,
    cfg: SearchConfig,
    c: _Counters,
    clock: _Clock,
    on_crash: Any,
    env_index: int = 0,
) -> Verdict | None:
    """``verify`` of a whole proof with retries on an environment failure; None when it could
    not be checked. Counts rejections (with the first messages) in ``c``."""
    for attempt in range(cfg.verify_retries + 1):
        if clock.remaining() <= 0:
            raise _Stop("timeout", "timeout_before_verify")
        env = envs[(env_index + attempt) % len(envs)]
        t = time.perf_counter()
        try:
            verdict = await env.verify(theorem, text)
        except EnvClosedError:
            raise
        except InteractionError as exc:
            c.verify_errors += 1
            if isinstance(exc, EnvCrashedError):
                on_crash(exc)
            elif len(c.rejections) < 5:
                c.rejections.append(f"verify raised {type(exc).__name__}: {str(exc)[:300]}")
            continue
        finally:
            c.verify_calls += 1
            c.verify_seconds += time.perf_counter() - t
        if not verdict.ok:
            c.verify_rejected += 1
            if len(c.rejections) < 5:
                c.rejections.append("; ".join(verdict.messages)[:300])
        return verdict
    return None


# ------------------------------------------------------------------------ whole proof


class WholeProofSearch(_BlockingSearch):
    """Whole-proof mode: ask ``generator.generate_proofs([first state], num_samples)`` for
    whole tactic proofs, re-check each with ``env.verify`` (in the generator's order, across the
    environments), and stop at the first accepted one. ``config.whole_proof_rounds`` requests at
    most (each counts as one expansion); proofs already checked are not checked again."""

    def __init__(
        self, generator: Any, config: SearchConfig | None = None, progress_model: Any = None
    ) -> None:
        self.generator = generator
        self.config = config if config is not None else SearchConfig(whole_proof=True)
        if not isinstance(self.config, SearchConfig):
            raise ConfigError(f"config must be a SearchConfig, not {type(self.config).__name__}")
        if not callable(getattr(generator, "generate_proofs", None)):
            raise ConfigError(
                f"{type(generator).__name__} cannot propose whole proofs: whole-proof search "
                "needs a generator with generate_proofs(states, num_samples)"
            )
        self.progress_model = progress_model  # unused: every proof is checked in model order

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        envs_ = as_async_envs(envs)
        theorem = _check_theorem(theorem)
        cfg = self.config
        c = _Counters()
        clock = _Clock(cfg.timeout)
        restarts0 = [restarts_of(e) for e in envs_]
        state = {"rounds": 0, "proof": None, "verdict": None, "checked": 0}

        def crash(exc: BaseException) -> None:
            c.env_crashes += 1
            if len(c.crash_messages) < 5:
                c.crash_messages.append(f"{type(exc).__name__}: {str(exc)[:300]}")

        def result(status: str, reason: str, error: str | None = None) -> SearchResult:
            stats: dict[str, Any] = {"stop_reason": reason, "mode": "whole_proof"}
            stats.update(c.as_dict())
            stats["proofs_checked"] = state["checked"]
            stats["envs"] = len(envs_)
            stats["env_restarts"] = _restart_delta(envs_, restarts0)
            verdict = state["verdict"]
            return SearchResult(
                theorem=theorem.full_name,
                file_path=theorem.file_path,
                status=status,
                proof=state["proof"] if status == "proved" else None,
                expansions=state["rounds"],
                seconds=clock.elapsed(),
                backend=envs_[0].backend,
                checked_by=verdict.checked_by if status == "proved" and verdict else None,
                error=error,
                stats=stats,
            )

        try:
            generator = self.generator.for_theorem(theorem)
            if not callable(getattr(generator, "generate_proofs", None)):
                raise _Stop(
                    "error",
                    "generator_error",
                    f"{type(generator).__name__} has no generate_proofs()",
                )
            t = time.perf_counter()
            try:
                root = await envs_[0].start(theorem)
            except UnknownTheoremError as exc:
                raise _Stop("error", "unknown_theorem", str(exc)) from None
            except EnvClosedError:
                raise
            except InteractionError as exc:
                raise _Stop(
                    "error",
                    "start_failed",
                    f"starting {theorem.full_name} failed: {type(exc).__name__}: {exc}",
                ) from None
            finally:
                c.env_wall_seconds += time.perf_counter() - t
            if not isinstance(root, ProofState):
                raise _Stop("error", "no_goals", "the environment says the theorem has no goals")
            tried: set[str] = set()
            rounds = min(cfg.whole_proof_rounds, cfg.max_expansions)
            for _ in range(rounds):
                if clock.remaining() <= 0:
                    raise _Stop("timeout", "timeout")
                try:
                    raw, seconds = await _timed_call(
                        generator.generate_proofs,
                        [root.text],
                        cfg.num_samples,
                        in_thread=cfg.generator_in_thread,
                        timeout=clock.remaining(),
                    )
                except TimeoutError:
                    raise _Stop("timeout", "timeout_in_generator") from None
                except Exception as exc:  # noqa: BLE001
                    raise _Stop(
                        "error",
                        "generator_error",
                        f"the proof generator raised {type(exc).__name__}: {exc}",
                    ) from exc
                c.generator_calls += 1
                c.generator_seconds += seconds
                state["rounds"] += 1
                try:
                    cands = _clean_candidates(raw, 1, cfg.num_samples, "generate_proofs()")[0]
                except ValueError as exc:
                    raise _Stop("error", "generator_output", str(exc)) from None
                fresh = []
                for cand in cands:
                    tactics = split_tactics(cand.tactic)
                    text = proof_text(tactics)
                    if text and text not in tried:
                        tried.add(text)
                        fresh.append((tactics, text))
                c.candidates += len(fresh)
                if await self._check_all(envs_, theorem, fresh, cfg, c, clock, crash, state):
                    raise _Stop("proved", "proved")
            raise _Stop(
                "failed",
                "max_expansions"
                if rounds == cfg.max_expansions and rounds < cfg.whole_proof_rounds
                else "rounds",
            )
        except _Stop as stop:
            return result(stop.status, stop.reason, stop.error)
        except EnvClosedError as exc:
            return result("error", "env_closed", f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001
            log.exception("whole-proof search of %s failed", theorem.full_name)
            return result("error", "exception", f"{type(exc).__name__}: {exc}")

    @staticmethod
    async def _check_all(
        envs: list[AsyncProofEnv],
        theorem: Theorem,
        proofs: list[tuple[list[str], str]],
        cfg: SearchConfig,
        c: _Counters,
        clock: _Clock,
        crash: Any,
        state: dict[str, Any],
    ) -> bool:
        """Verify ``proofs`` in order, one at a time per environment, the environments in
        parallel; stop starting new checks once one is accepted (the earliest in the
        generator's order among those accepted is kept)."""
        queue = list(enumerate(proofs))
        accepted: list[tuple[int, list[str], Verdict]] = []
        t = time.perf_counter()

        async def worker(i: int) -> None:
            while queue and not accepted:
                k, (tactics, text) = queue.pop(0)
                state["checked"] += 1
                verdict = await _verify_proof(envs, theorem, text, cfg, c, clock, crash, i)
                if verdict is not None and verdict.ok:
                    accepted.append((k, tactics, verdict))

        try:
            await asyncio.gather(*(worker(i) for i in range(len(envs))))
        finally:
            c.env_wall_seconds += time.perf_counter() - t
        if accepted:
            _, tactics, verdict = min(accepted, key=lambda a: a[0])
            state["proof"], state["verdict"] = tactics, verdict
            return True
        return False


# ------------------------------------------------------------------------ entry point


def search_theorem(
    generator: Any,
    env: ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv],
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: Any = None,
) -> SearchResult:
    """Search for a proof of ``theorem``: :class:`WholeProofSearch` when ``config.whole_proof``,
    else :class:`BestFirstSearch`. Blocking; see :func:`search_theorem_async` in a loop."""
    cfg = config if config is not None else SearchConfig()
    cls = WholeProofSearch if cfg.whole_proof else BestFirstSearch
    return cls(generator, cfg, progress_model).search(env, theorem)


async def search_theorem_async(
    generator: Any,
    envs: AsyncProofEnv | Sequence[AsyncProofEnv],
    theorem: Theorem,
    config: SearchConfig | None = None,
    progress_model: Any = None,
) -> SearchResult:
    """The coroutine flavour of :func:`search_theorem`."""
    cfg = config if config is not None else SearchConfig()
    cls = WholeProofSearch if cfg.whole_proof else BestFirstSearch
    return await cls(generator, cfg, progress_model).search_async(envs, theorem)


__all__ = [
    "BestFirstSearch",
    "SearchConfig",
    "SearchResult",
    "WholeProofSearch",
    "proof_text",
    "run_sync",
    "search_theorem",
    "search_theorem_async",
]
