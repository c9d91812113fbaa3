"""Layer 3 (prover): parallel proving on Ray actors, each owning a ``ProofEnv`` and a generator.

Used by :func:`~lean_dojo_v2.prover.parallel.prove_theorems` with ``backend="ray"`` (install the
``ray`` extra: ``pip install 'lean-dojo-v2[ray]'``). Each :class:`ProverActor` builds its
environment and generator from the picklable factories once, then proves one theorem per call,
theorem after theorem until none is left. The generator may be local to the actor (an
``HFProverSpec``: each actor loads the model; ask for GPUs with ``num_gpus``) or a client of one
shared endpoint (an ``ExternalProverSpec`` pointing at a vLLM / OpenAI-compatible server: the
actors only hold Lean processes).

Actors are spread over the cluster's nodes (Ray's ``SPREAD`` strategy) and start together; each
result's ``stats["ray_node"]`` names the node that proved it. A node lost mid-run (its machine
fails, it is removed) loses only the theorems its actors were on: each goes back to the front of
the queue for the actors left, and a fresh actor is asked for in its place (``retries`` times
per theorem, then the theorem gets status ``"error"``). A replacement the cluster cannot place
holds nothing up; if no actor at all can start within ``start_timeout`` seconds (no node has the
resources asked, every node is gone) the run stops with a :class:`~.workers.WorkerStartError`,
and an actor that neither answers nor dies within ``2 × timeout + 120`` seconds of a theorem's
start is given up as lost: no wait is unbounded.

Ray is joined or started by :func:`~.ray_cluster.connect_ray`: a cluster's ``address`` is checked
first (one :class:`~.ray_cluster.RayClusterUnreachableError` in seconds when nothing answers).
A Ray instance this function started is shut down at the end; one that was running is left alone.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

from ..data.model import Theorem
from ..errors import LeanDojoError
from .ray_cluster import connect_ray, import_ray
from .workers import (
    MAX_START_FAILURES,
    ProofWorker,
    ResultCollector,
    TaskQueue,
    WorkerStartError,
    error_result,
)

if TYPE_CHECKING:
    from ray.actor import ActorClass

    from .search_config import SearchConfig
    from .search_types import EnvFactory, GeneratorFactory

logger = logging.getLogger(__name__)

__all__ = ["ACTOR_START_TIMEOUT", "ProverActor", "RayResources", "make_actor_class", "run_ray"]

ACTOR_START_TIMEOUT = 300.0
"""Seconds the run waits for a first actor to be placed and to build its environment and
generator (a model loads in that time) while no other actor is working."""

# How often the loop wakes to check its deadlines while nothing arrives.
_POLL_SECONDS = 1.0
# A theorem's search stops itself after SearchConfig.timeout; an actor that has said nothing
# after twice that (plus start-up slack) is hung, not slow.
_NO_ANSWER_FACTOR, _NO_ANSWER_SLACK = 2.0, 120.0
_DEFAULT_SEARCH_TIMEOUT = 600.0


class RayResources(TypedDict, total=False):
    """What each actor asks Ray for (``prove_theorems(ray_resources=...)``)."""

    num_cpus: float
    num_gpus: float


class ProverActor(ProofWorker):
    """The body of a Ray actor: a :class:`~.workers.ProofWorker` (environment and generator,
    built once; :meth:`prove` runs one search) that also tells where it runs. Wrapped with
    ``ray.remote`` by :func:`make_actor_class` (Ray is imported only when it is used)."""

    def pid(self) -> int:
        return os.getpid()

    def describe(self) -> dict[str, str | int]:
        """Its backend, the Ray node it runs on, and its process id."""
        import ray

        return {
            "backend": self.backend(),
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
        }


def make_actor_class(num_cpus: float = 1, num_gpus: float = 0) -> ActorClass[ProverActor]:
    """``ray.remote(ProverActor)`` with these resources per actor, spread over the nodes."""
    ray = import_ray()
    return ray.remote(
        num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0, scheduling_strategy="SPREAD"
    )(ProverActor)


@dataclass(eq=False)
class _Actor:
    """One actor as the run sees it. Its handle stays untyped: Ray types a remote method only
    where it is declared with @ray.method, and ProverActor's are the plain methods of the
    ProofWorker it shares."""

    handle: Any
    asked: float  # when it was created
    node: str = ""
    task: int | None = None
    since: float = 0.0  # when its theorem was given


def run_ray(
    theorems: Sequence[Theorem],
    make_env: EnvFactory,
    make_generator: GeneratorFactory,
    config: SearchConfig | None,
    workers: int,
    collector: ResultCollector,
    *,
    retries: int = 1,
    address: str | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    start_timeout: float = ACTOR_START_TIMEOUT,
) -> None:
    """Prove ``theorems`` on ``workers`` Ray actors, filling ``collector`` (see the module
    docstring)."""
    ray = import_ray()
    started = connect_ray(address)
    try:
        search_timeout = getattr(config, "timeout", None) or _DEFAULT_SEARCH_TIMEOUT
        _ActorRun(
            ray,
            theorems,
            (make_env, make_generator, config),
            make_actor_class(num_cpus, num_gpus),
            workers,
            TaskQueue(theorems, collector, retries),
            collector,
            start_timeout=start_timeout,
            no_answer=_NO_ANSWER_FACTOR * float(search_timeout) + _NO_ANSWER_SLACK,
            resources={"num_cpus": num_cpus, "num_gpus": num_gpus},
        ).run()
    finally:
        if started:
            ray.shutdown()


class _ActorRun:
    """The driver's loop: actors starting, working and idle; every wait bounded."""

    def __init__(
        self,
        ray: ModuleType,
        theorems: Sequence[Theorem],
        factories: tuple[EnvFactory, GeneratorFactory, SearchConfig | None],
        actor_cls: ActorClass[ProverActor],
        workers: int,
        pending: TaskQueue,
        collector: ResultCollector,
        *,
        start_timeout: float,
        no_answer: float,
        resources: dict[str, float],
    ) -> None:
        self.ray = ray
        self.theorems = theorems
        self.factories = factories
        self.actor_cls = actor_cls
        self.workers = workers
        self.pending = pending
        self.collector = collector
        self.start_timeout = start_timeout
        self.no_answer = no_answer
        self.resources = resources
        self.starting: dict[Any, _Actor] = {}  # ObjectRef of describe() -> actor
        self.running: dict[Any, _Actor] = {}  # ObjectRef of prove() -> actor
        self.idle: list[_Actor] = []
        self.backend = "unknown"
        self.start_failures = 0
        self.started_on: Counter[str] = Counter()  # node -> actors that started there
        self.died_on: dict[int, str] = {}  # theorem -> the node its last actor died on
        self.lost_nodes: set[str] = set()

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while not self.collector.done():
                self._top_up()
                refs = [*self.starting, *self.running]
                done, _ = self.ray.wait(refs, num_returns=1, timeout=_POLL_SECONDS)
                for ref in done:
                    if ref in self.starting:
                        self._started(ref, self.starting.pop(ref))
                    else:
                        self._finished(ref, self.running.pop(ref))
                self._check_deadlines()
        finally:
            self._close_all()

    def _top_up(self) -> None:
        """Ask for actors until there are as many as theorems left, at most ``workers``."""
        left = len(self.pending) + len(self.running)
        have = len(self.starting) + len(self.running) + len(self.idle)
        for _ in range(min(self.workers, left) - have):
            factories = self.factories
            actor = _Actor(self.actor_cls.remote(*factories), asked=time.monotonic())
            self.starting[actor.handle.describe.remote()] = actor

    def _give_work(self, actor: _Actor) -> None:
        """The next theorem for ``actor``; a theorem whose actor died on ``actor``'s node goes
        to an actor on another node while one is up (that node may be going down), else
        ``actor`` waits idle. An actor on a lost node gets nothing."""
        if actor.node in self.lost_nodes:
            self._kill(actor)
            return
        task = self.pending.pop_first(
            lambda i: self.died_on.get(i) == actor.node and self._up_elsewhere(actor.node)
        )
        if task is None:
            actor.task = None
            self.idle.append(actor)
            return
        actor.task = task
        actor.since = time.monotonic()
        self.running[actor.handle.prove.remote(self.theorems[task])] = actor

    def _up_elsewhere(self, node: str) -> bool:
        return any(a.node != node for a in [*self.running.values(), *self.idle])

    def _dispatch_idle(self) -> None:
        """A theorem put back in the queue goes to an idle actor first."""
        idle, self.idle = self.idle, []
        for actor in idle:
            self._give_work(actor)  # back to idle when nothing is for it

    # -- events ------------------------------------------------------------------------------------

    def _started(self, ref: Any, actor: _Actor) -> None:
        ray = self.ray
        try:
            info = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            init_error = _init_error(exc)
            if init_error is not None:
                raise init_error from None
            self.start_failures += 1
            logger.warning("a Ray prover actor died while starting: %s", _first_line(exc))
            # With actors at work, a replacement that died (placed on a node going down) is
            # asked for again; with none, the factories or the cluster cannot start one.
            if self.start_failures >= MAX_START_FAILURES and not (self.running or self.idle):
                raise WorkerStartError(
                    f"Ray prover actors died while starting {self.start_failures} times in a "
                    f"row ({_first_line(exc)}); check the cluster's nodes and memory (each "
                    "actor loads its own generator)"
                ) from None
            return
        self.start_failures = 0
        self.backend = str(info["backend"])
        actor.node = str(info["node"])
        if actor.node not in self.started_on:
            logger.info("a Ray prover actor started on node %s", actor.node)
        self.started_on[actor.node] += 1
        self._give_work(actor)

    def _finished(self, ref: Any, actor: _Actor) -> None:
        ray = self.ray
        assert actor.task is not None  # it was given one with this ref
        index, seconds = actor.task, time.monotonic() - actor.since
        try:
            result = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            self._lost(actor, index, f"the Ray actor died while proving this theorem "
                       f"({_first_line(exc)})", seconds)  # fmt: skip
            if (
                actor.node
                and actor.node not in self.lost_nodes
                and not self._node_alive(actor.node)
            ):
                self._drop_node(actor.node)
            self._dispatch_idle()
            return
        except ray.exceptions.RayError as exc:
            # The search itself never raises (search_one); this is Ray failing to bring the
            # result back (it could not be pickled, the object was lost).
            result = error_result(
                self.theorems[index], f"Ray could not return the result: {_first_line(exc)}",
                self.backend, seconds,
            )  # fmt: skip
        result.stats["ray_node"] = actor.node
        self.collector.put(index, result)
        self._give_work(actor)
        self._dispatch_idle()

    def _lost(self, actor: _Actor, index: int, error: str, seconds: float) -> None:
        """``actor`` is gone (its node died, it was killed, it stopped answering): its theorem
        goes back to the front of the queue (or gets an error result); the loop asks for a
        fresh actor."""
        self._kill(actor)
        how = f"on node {actor.node}" if actor.node else ""
        if actor.node:
            self.died_on[index] = actor.node
        self.pending.lost(index, who="Ray actor", how=how, error=error, backend=self.backend,
                          seconds=seconds)  # fmt: skip

    def _node_alive(self, node: str) -> bool:
        """Whether Ray still counts ``node`` alive (an actor died: its node, or itself?)."""
        try:
            nodes = self.ray.nodes()
        except Exception:  # noqa: BLE001 - cannot tell: count it alive
            return True
        return any(n.get("NodeID") == node and n.get("Alive") for n in nodes)

    def _drop_node(self, node: str) -> None:
        """``node`` is lost: every actor on it is given up now (the theorems of those that
        were working go back to the queue), before any of them is given another theorem."""
        self.lost_nodes.add(node)
        logger.warning("Ray node %s is lost; its actors' theorems go to the other nodes", node)
        for actor in [a for a in self.idle if a.node == node]:
            self.idle.remove(actor)
            self._kill(actor)
        for ref, actor in list(self.running.items()):
            if actor.node != node or actor.task is None:
                continue
            del self.running[ref]
            if self.ray.wait([ref], timeout=0)[0]:
                self._finished(ref, actor)  # what it sent before its node went is kept
            else:
                self._lost(actor, actor.task, f"its Ray node {node} was lost while it proved "
                           "this theorem", time.monotonic() - actor.since)  # fmt: skip

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        for ref, actor in list(self.running.items()):
            if now - actor.since > self.no_answer:
                del self.running[ref]
                assert actor.task is not None
                self._lost(
                    actor, actor.task,
                    f"the Ray actor gave no answer within {self.no_answer:.0f} s", now - actor.since,
                )  # fmt: skip
                self._dispatch_idle()
        working = self.running or self.idle
        waited = [now - a.asked for a in self.starting.values()]
        if not working and waited and min(waited) > self.start_timeout:
            available = self.ray.available_resources()
            raise WorkerStartError(
                f"no Ray prover actor started within {self.start_timeout:.0f} s: the cluster "
                f"cannot place an actor asking {self.resources} (free now: "
                f"{_resources_text(available)}), or its nodes are gone; add nodes, or lower "
                "ray_resources / --workers"
            )

    # -- the end -----------------------------------------------------------------------------------

    def _kill(self, actor: _Actor) -> None:
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception as exc:  # noqa: BLE001 - already gone
            logger.debug("killing a Ray actor failed: %s", exc)

    def _close_all(self) -> None:
        """Close the environments of the actors that started (together, a bounded wait), then
        kill every actor, placed or not."""
        ray = self.ray
        ready = [*self.running.values(), *self.idle]
        closing = [a.handle.close.remote() for a in ready]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for actor in [*ready, *self.starting.values()]:
            self._kill(actor)
        if self.started_on:
            logger.info(
                "%d Ray prover actor(s) ran on %d node(s): %s",
                sum(self.started_on.values()), len(self.started_on), dict(self.started_on),
            )  # fmt: skip


def _init_error(exc: BaseException) -> BaseException | None:
    """The factory's own error when the actor died in its constructor (``ActorDiedError``
    wraps the ``__init__`` exception; a :class:`WorkerStartError` when it is not one of ours),
    else None (the actor died for another reason: its node, its process)."""
    if not getattr(exc, "actor_init_failed", False):
        return None
    cause = getattr(exc, "cause", None) or getattr(exc, "__cause__", None)
    inner = getattr(cause, "cause", cause)
    if isinstance(inner, LeanDojoError):
        return inner
    return WorkerStartError(f"a Ray prover actor failed to start: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _resources_text(resources: dict[str, float]) -> str:
    shown = {k: v for k, v in resources.items() if k in ("CPU", "GPU")}
    return ", ".join(f"{k} {v:g}" for k, v in sorted(shown.items())) or "none"
