"""Layer 3 (prover): best-first proof search over :class:`AsyncProofEnv` s.

:class:`BestFirstSearch` keeps a frontier of open proof states ordered by *priority*:

    priority(state) = cumulative log-prob of the tactic path to it
                      + progress_weight * (- predicted steps remaining)      (when weight > 0)

with the progress model given, or the one ``SearchConfig.progress_model_path`` or
``LEANPROGRESS_MODEL`` names (``progress_weight`` None applies ``DEFAULT_PROGRESS_WEIGHT`` then).

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

What both search modes share (clock, counters, generator call, re-check, result) is
:class:`~.search_run.SearchRun`; this module holds only the tree search.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv
from ..interaction.async_adapter import as_async_envs, shares_states
from ..interaction.types import (
    EnvClosedError,
    EnvCrashedError,
    InteractionError,
    InvalidRequestError,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticResult,
    TacticTimeout,
    UnknownTheoremError,
)
from .attempt import Attempt
from .result import SearchResult, proof_text
from .search_config import SearchConfig
from .search_run import (
    BlockingSearch,
    SearchRun,
    SearchStop,
    check_theorem,
    own_config,
    usage_source,
)
from .search_tree import DROPPED, EXPANDED, OPEN, TOO_DEEP, Node, SearchTree
from .threads import in_daemon_thread

if TYPE_CHECKING:
    from ..models.candidates import Scored
    from ..models.generator import TacticGenerator
    from ..models.progress import ProgressModel
    from .search_types import ProgressPredictor

# What running one (state, tactic) job gave: the environment's answer, or why there is none.
JobResult: TypeAlias = TacticResult | Literal["crash", "stale", "skipped"]

_LOADED_PROGRESS: dict[tuple[str, str], ProgressModel] = {}
_LOADING = threading.Lock()


def load_progress_model(path: str | None = None, *, device: str = "auto") -> ProgressModel:
    """The progress model in directory ``path`` (None: ``$LEANPROGRESS_MODEL``), loaded once per
    process and device: a proving worker builds one search per theorem, and reloading a model for
    each would cost more than most searches. A path that holds no progress model raises
    :class:`~lean_dojo_v2.errors.ModelNotFoundError` / :class:`~lean_dojo_v2.errors.ModelError`
    (never ignored); nothing given raises :class:`ConfigError`."""
    import os

    try:
        from ..models.progress import ENV_MODEL, ProgressModel
    except ImportError as exc:
        raise ConfigError(
            "SearchConfig.progress_weight > 0 needs a progress model, but "
            f"lean_dojo_v2.models.progress cannot be imported ({exc}); pass progress_model= or "
            "set progress_weight=0"
        ) from exc
    if path is None:
        path = os.environ.get(ENV_MODEL, "").strip() or None
    if path is None:
        raise ConfigError(
            "SearchConfig.progress_weight > 0 needs a progress model: pass progress_model= to "
            "the search, set progress_model_path, or set LEANPROGRESS_MODEL to a trained model's "
            "directory (or set progress_weight=0)"
        )
    key = (os.path.realpath(os.path.expanduser(path)), device)
    with _LOADING:
        model = _LOADED_PROGRESS.get(key)
        if model is None:
            model = _LOADED_PROGRESS[key] = ProgressModel.load(path, device=device)
    return model


@dataclass
class _Job:
    node: Node
    tactic: str
    logprob: float
    index: int
    env_index: int | None = None
    result: JobResult | None = None


class BestFirstSearch(BlockingSearch):
    """Best-first search over proof states; see the module docstring.

    ``last_tree`` is the :class:`SearchTree` of the latest search (expansion order, nodes, edges),
    for inspection and tests."""

    def __init__(
        self,
        generator: TacticGenerator,
        config: SearchConfig | None = None,
        progress_model: ProgressPredictor | None = None,
    ) -> None:
        self.generator = generator
        self.config = own_config(config)
        if not callable(getattr(generator, "generate", None)):
            raise ConfigError(
                f"{type(generator).__name__} is not a TacticGenerator: it has no generate()"
            )
        self.progress_model = progress_model
        if progress_model is None and self.config.progress_weight != 0:
            # LEANPROGRESS_MODEL (or progress_model_path) set means "use it" (as upstream
            # LeanDojo-v2 promises); a weight > 0 without any model is an error, not a silent 0.
            source = self.config.progress_model_source()
            if source is not None or self.config.progress_weight is not None:
                self.progress_model = load_progress_model(source)
        self.progress_weight = self.config.effective_progress_weight(
            self.progress_model is not None
        )
        self.last_tree: SearchTree | None = None

    async def search_async(
        self, envs: AsyncProofEnv | Sequence[AsyncProofEnv], theorem: Theorem
    ) -> SearchResult:
        run = _BestFirstRun(self, as_async_envs(envs), check_theorem(theorem))
        try:
            return await run.execute()
        finally:
            self.last_tree = run.search_tree


class _BestFirstRun(SearchRun):
    """The state of one best-first search of one theorem: the tree on top of the shared run."""

    def __init__(self, owner: BestFirstSearch, envs: list[AsyncProofEnv], theorem: Theorem) -> None:
        super().__init__(owner.config, envs, theorem)
        self.owner = owner
        self.search_tree = SearchTree()
        self.shared = all(shares_states(e) for e in envs)
        self.start_seconds = 0.0

    # ----------------------------------------------------------------------- driver
    async def _search(self) -> None:
        generator = self.owner.generator.for_theorem(self.theorem)
        await self._start()
        await self._loop(generator)

    async def _start(self) -> None:
        """The root: started on the first environment (shared states) or on every one."""
        targets = [0] if self.shared else list(range(len(self.envs)))
        t = time.perf_counter()
        outcomes = await asyncio.gather(
            *(self.envs[i].start(self.theorem) for i in targets), return_exceptions=True
        )
        self.c.env_wall_seconds += time.perf_counter() - t
        self.c.start_calls += len(targets)
        self.start_seconds += time.perf_counter() - t
        states: dict[int, ProofState] = {}
        first_error: BaseException | None = None
        for i, out in zip(targets, outcomes, strict=True):
            if isinstance(out, ProofState):
                states[i] = out
            elif isinstance(out, BaseException):
                if isinstance(out, UnknownTheoremError):
                    raise SearchStop("error", "unknown_theorem", str(out))
                if not isinstance(out, Exception):
                    raise out
                first_error = first_error or out
                if isinstance(out, EnvCrashedError):
                    self._crash(out)
            elif isinstance(out, ProofFinished):
                raise SearchStop(
                    "error", "no_goals", "the environment says the theorem has no goals"
                )
        if not states:
            assert first_error is not None
            raise SearchStop(
                "error",
                "start_failed",
                f"starting {self.theorem.full_name} failed: "
                f"{type(first_error).__name__}: {first_error}",
            )
        first = min(states)
        root = self.search_tree.add_root(states[first], first)
        root.handles.update(states)
        self.search_tree.push(root)

    async def _loop(self, generator: TacticGenerator) -> None:
        cfg = self.cfg
        tree = self.search_tree
        while True:
            if self.clock.remaining() <= 0:
                raise SearchStop("timeout", "timeout")
            if self.expansions >= cfg.max_expansions:
                raise SearchStop("failed", "max_expansions")
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
                raise SearchStop("failed", "exhausted")
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
    async def _generate(self, generator: TacticGenerator, states: list[str]) -> list[list[Scored]]:
        raw = await self._call_generator(
            generator.generate, states, "tactic generator", generator=usage_source(generator)
        )
        return self._candidates(raw, len(states), "generate()")

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

    async def _run_one(self, i: int, job: _Job) -> JobResult:
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

    async def _tactic(self, i: int, state: ProofState, tactic: str) -> JobResult:
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
            current = self.search_tree.nodes[current.parent] if current.parent is not None else None
        chain.reverse()
        t = time.perf_counter()
        self.c.start_calls += 1
        try:
            state = await self.envs[i].start(self.theorem)
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
        tree = self.search_tree
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
                raise SearchStop("proved", "proved")

    def _priority(self, node: Node) -> float:
        w = self.owner.progress_weight
        if w > 0 and node.progress is not None:
            return node.logprob - w * node.progress
        return node.logprob

    async def _score(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        model = self.owner.progress_model
        if self.owner.progress_weight > 0 and model is not None:
            goals = [n.key for n in nodes]
            prefixes = ["\n".join(self.search_tree.path(n)) for n in nodes]
            t = time.perf_counter()
            try:
                preds = await in_daemon_thread(
                    lambda: model.predict(goals=goals, prefixes=prefixes)
                )
            except Exception as exc:  # noqa: BLE001
                raise SearchStop(
                    "error",
                    "progress_error",
                    f"the progress model raised {type(exc).__name__}: {exc}",
                ) from exc
            self.c.progress_calls += 1
            self.c.progress_seconds += time.perf_counter() - t
            if isinstance(preds, (int, float)):
                preds = [preds]
            if len(preds) != len(nodes):
                raise SearchStop(
                    "error",
                    "progress_output",
                    f"the progress model returned {len(preds)} predictions for {len(nodes)} states",
                )
            for n, p in zip(nodes, preds, strict=True):
                n.progress = float(p)
        for n in nodes:
            n.priority = self._priority(n)

    # --------------------------------------------------------------------- the record
    def _final_attempts(self, status: str, error: str | None) -> list[Attempt]:
        """One attempt for the whole search: the proof found (or none) and everything the
        search used; the tree too when the config asks for it."""
        if self.cfg.record_tree:
            self.tree = self.search_tree.report_nodes(self.proof if status == "proved" else None)
        c = self.c
        proved = status == "proved" and self.proof is not None
        verdict = self.verdict if proved else None
        return [
            Attempt(
                index=0,
                round=0,
                proof=proof_text(self.proof) if proved and self.proof is not None else "",
                ok=proved,
                checked_by=verdict.checked_by if verdict is not None else "",
                messages=list(verdict.messages) if verdict is not None else list(c.rejections),
                tokens_in=c.tokens_in,
                tokens_out=c.tokens_out,
                generator_seconds=c.generator_seconds,
                gpu_seconds=c.gpu_seconds,
                lean_calls=c.start_calls + c.tactic_calls + c.verify_calls,
                lean_seconds=self.start_seconds + c.env_seconds + c.verify_seconds,
                cached=bool(getattr(verdict, "cached", False)),
                error=error,
            )
        ]

    def _stats(self, reason: str, seconds: float) -> dict[str, Any]:
        stats: dict[str, Any] = {"stop_reason": reason}
        stats.update(self.search_tree.stats())
        stats.update(self.c.as_dict())
        stats["envs"] = len(self.envs)
        stats["progress_weight"] = self.owner.progress_weight
        stats["shared_states"] = self.shared
        stats["env_restarts"] = self._env_restarts()
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
        return stats


__all__ = ["BestFirstSearch", "load_progress_model"]
