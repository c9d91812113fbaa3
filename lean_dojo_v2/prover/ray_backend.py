"""Layer 3 (prover): parallel proving on Ray actors, each owning a ``ProofEnv`` and a generator.

Used by :func:`~lean_dojo_v2.prover.parallel.prove_theorems` with ``backend="ray"`` (install the
``ray`` extra: ``pip install 'lean-dojo-v2[ray]'``). Each :class:`ProverActor` builds its
environment and generator from the picklable factories once, then proves one theorem per call.
The generator may be local to the actor (an ``HFProverSpec``: each actor loads the model; ask
for GPUs with ``num_gpus``) or a client of one shared endpoint (an ``ExternalProverSpec`` pointing
at a vLLM / OpenAI-compatible server: the actors only hold Lean processes).

An actor that dies (its node fails, it is killed, it runs out of memory) loses only the theorem
it was on: that theorem is retried on a fresh actor (``retries``) or gets status ``"error"``;
the other actors go on. Ray is started locally (``ray.init()``) unless it is running already or
an ``address`` of a cluster is given (``"auto"`` inside a cluster node, ``"ray://head:10001"``
from outside; see ``docs/proving.md``). A Ray instance this function started is shut down at the
end; one that was running is left alone.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

from ..data.model import Theorem
from ..errors import LeanDojoError
from .workers import ProofWorker, ResultCollector, TaskQueue, WorkerStartError

if TYPE_CHECKING:
    from ray.actor import ActorClass

    from .search_config import SearchConfig
    from .search_types import EnvFactory, GeneratorFactory

logger = logging.getLogger(__name__)

__all__ = ["ProverActor", "RayNotInstalledError", "RayResources", "make_actor_class", "run_ray"]


class RayResources(TypedDict, total=False):
    """What each actor asks Ray for (``prove_theorems(ray_resources=...)``)."""

    num_cpus: float
    num_gpus: float


class RayNotInstalledError(LeanDojoError, ImportError):
    """``backend="ray"`` (``--parallel ray``) was asked for but Ray is not installed."""


class ProverActor(ProofWorker):
    """The body of a Ray actor: a :class:`~.workers.ProofWorker` (environment and generator,
    built once; :meth:`prove` runs one search) that also tells its process id. Wrapped with
    ``ray.remote`` by :func:`make_actor_class` (Ray is imported only when it is used)."""

    def pid(self) -> int:
        return os.getpid()


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise RayNotInstalledError(
            "Ray is not installed: pip install 'lean-dojo-v2[ray]' (or use the default process "
            "workers)"
        ) from None
    return ray


def make_actor_class(num_cpus: float = 1, num_gpus: float = 0) -> ActorClass[ProverActor]:
    """``ray.remote(ProverActor)`` with these resources per actor."""
    ray = _import_ray()
    return ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0)(ProverActor)


def _ensure_ray(ray: ModuleType, address: str | None) -> bool:
    """Connect to (or start) Ray; True when this call started it (and should shut it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
    if address is None:
        # A local instance: its workers import our factories by module name, so they get this
        # process's import path (tests, scripts run from a checkout).
        path = os.pathsep.join(p for p in sys.path if p)
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
    else:
        kwargs["address"] = address
    ray.init(**kwargs)
    return True


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
) -> None:
    """Prove ``theorems`` on ``workers`` Ray actors, filling ``collector`` (see the module
    docstring)."""
    ray = _import_ray()
    started = _ensure_ray(ray, address)
    actor_cls = make_actor_class(num_cpus, num_gpus)
    pending = TaskQueue(theorems, collector, retries)
    # Actor handles stay untyped: Ray types a remote method only where it is declared with
    # @ray.method, and ProverActor's are plain methods of the ProofWorker it shares.
    actors: list[Any] = []
    running: dict[Any, tuple[Any, int, float]] = {}  # ObjectRef -> (actor, theorem index, start)
    backend = "unknown"

    def new_actor() -> Any:
        actor = actor_cls.remote(make_env, make_generator, config)
        actors.append(actor)
        return actor

    def assign(actor: Any) -> None:
        if pending:
            i = pending.pop()
            running[actor.prove.remote(theorems[i])] = (actor, i, time.perf_counter())

    try:
        for _ in range(workers):
            actor = new_actor()
            try:
                backend = ray.get(actor.backend.remote())
            except ray.exceptions.RayActorError as exc:
                raise _start_error(exc) from None
            assign(actor)
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            ref = done[0]
            actor, i, t0 = running.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                actors.remove(actor)
                pending.lost(
                    i,
                    who="Ray actor",
                    error=f"the Ray actor died while proving this theorem ({_first_line(exc)})",
                    backend=backend,
                    seconds=time.perf_counter() - t0,
                )
                if pending:
                    assign(new_actor())
                continue
            collector.put(i, result)
            assign(actor)
    finally:
        for actor in actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - dead or slow actors are killed below
                pass
            ray.kill(actor)
        if started:
            ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _start_error(exc: BaseException) -> BaseException:
    """The factory's own error when Ray carries it (``ActorDiedError`` wraps the
    ``__init__`` exception), else a :class:`WorkerStartError`."""
    cause = getattr(exc, "cause", None) or getattr(exc, "__cause__", None)
    inner = getattr(cause, "cause", cause)
    if isinstance(inner, LeanDojoError):
        return inner
    return WorkerStartError(f"a Ray prover actor failed to start: {_first_line(exc)}")
