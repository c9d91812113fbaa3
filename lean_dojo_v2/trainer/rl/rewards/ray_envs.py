"""Reward environments on Ray actors (``reward_workers_backend: ray``): each
:class:`RemoteProofEnv` is a ``ProofEnv`` whose calls run in its own Ray actor, which owns the real
environment (a ``PantographEnv`` or a ``ReplayEnv``, built there from a picklable factory). The
reward pool (:class:`~.env_pool.EnvPool`) and the scorers use it as they use a local environment,
so the rewards are the same; the environments may sit on any machine of a Ray cluster.

States stay in the actor. A state handed to this process carries a token of it: Pantograph frees
a state once its handle is garbage-collected, so the actor keeps each state until this process
lets go of the token (a token garbage-collected here is released with the next call).

An actor that dies (its node is lost, it is killed) fails the call it was in with
:class:`~lean_dojo_v2.interaction.EnvCrashedError`, which the scorers score as a crash (not
cached); the next call starts a fresh actor, and ``restarts`` changes, so the pool forgets the
states the dead one handed out. A call without an answer within ``call_timeout`` seconds, or an
actor that cannot start within ``start_timeout``, is a crash too: no wait is unbounded.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ....data.model import Theorem
from ....interaction.base import ProofEnv
from ....interaction.types import (
    EnvClosedError,
    EnvCrashedError,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticResult,
    Verdict,
)

if TYPE_CHECKING:
    from ray.actor import ActorClass

logger = logging.getLogger("lean_dojo_v2.trainer.rl.rewards")

__all__ = [
    "CALL_TIMEOUT",
    "START_TIMEOUT",
    "EnvHost",
    "RemoteProofEnv",
    "ray_proof_envs",
    "replay_env_factory",
]

CALL_TIMEOUT = 300.0
"""Seconds one call (a tactic, a whole-proof check) may go without an answer before the actor is
given up (a tactic's own limit, ``tactic_timeout``, is far shorter)."""
START_TIMEOUT = 120.0
"""Seconds an actor may take to be placed and to build its environment (a Lean REPL loading its
imports)."""

EnvMaker = Callable[[], ProofEnv]


class EnvHost:
    """The body of a Ray actor: one environment and the states it handed out, by token."""

    def __init__(self, make_env: EnvMaker) -> None:
        self.env = make_env()
        self.states: dict[int, ProofState | ProofFinished] = {}
        self.tokens = itertools.count(1)

    def describe(self) -> dict[str, Any]:
        """The environment's backend and ``shares_states``, the node and process it runs in."""
        import ray

        return {
            "backend": self.env.backend,
            "shares_states": bool(self.env.shares_states),
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
        }

    def call(
        self, method: str, args: tuple[Any, ...], released: list[int]
    ) -> tuple[Any, int | None]:
        """One ``ProofEnv`` call (``start``, ``run_tactic``, ``verify``, ``replay_state``) after
        letting go of the ``released`` states, with the environment's restart count: one round
        trip each."""
        for token in released:
            state = self.states.pop(token, None)
            if state is not None:
                self.env.release(state)
        if method not in _CALLS:
            raise ValueError(f"not a ProofEnv call: {method!r}")
        value = getattr(self, method)(*args)
        return value, self.env.restarts

    def start(self, theorem: Theorem) -> ProofState:
        state = self._keep(self.env.start(theorem))
        assert isinstance(state, ProofState)
        return state

    def run_tactic(self, token: int, tactic: str, timeout: float | None) -> TacticResult:
        state = self.states.get(token)
        if not isinstance(state, ProofState):
            raise StaleStateError(
                "this state was released or is finished; pass a state this environment handed out"
            )
        return self._keep(self.env.run_tactic(state, tactic, timeout))

    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        return self.env.verify(theorem, proof)

    def replay_state(self, goals: list[str], theorem: Theorem | None) -> ProofState | None:
        """The state a replay environment makes from recorded goals, made here where it lives."""
        from .env_pool import replay_state

        state = replay_state(self.env, goals, theorem)
        return None if state is None else self._keep(state)  # type: ignore[return-value]

    def close(self) -> None:
        self.states.clear()
        self.env.close()

    def _keep(self, result: TacticResult) -> TacticResult:
        """``result`` as it travels: a state's handle becomes a token of it, kept here."""
        if isinstance(result, ProofState):
            token = next(self.tokens)
            self.states[token] = result
            return dataclasses.replace(result, handle=token, theorem=None)
        if isinstance(result, ProofFinished):
            token = next(self.tokens)
            self.states[token] = result
            return dataclasses.replace(result, handle=token)
        return result


_CALLS = frozenset({"start", "run_tactic", "verify", "replay_state"})


class _Held:
    """This process's hold on a state kept in an actor: the token, and which actor made it."""

    __slots__ = ("token", "generation", "__weakref__")

    def __init__(self, token: int, generation: int) -> None:
        self.token = token
        self.generation = generation


class _Connection:
    """The Ray connection the environments of one :func:`ray_proof_envs` call share: Ray is
    shut down when the last of them closes, if that call started it."""

    def __init__(self, started: bool) -> None:
        self.started = started
        self.users = 0
        self.lock = threading.Lock()

    def join(self) -> None:
        with self.lock:
            self.users += 1

    def leave(self) -> None:
        with self.lock:
            self.users -= 1
            last = self.users == 0
        if last and self.started:
            import ray

            ray.shutdown()


class RemoteProofEnv(ProofEnv):
    """A ``ProofEnv`` whose calls run in a Ray actor (see the module docstring). Made by
    :func:`ray_proof_envs`; one thread at a time, as every ``ProofEnv``."""

    backend: str = "ray"  # the actor's environment's, once it has started

    def __init__(
        self,
        make_env: EnvMaker,
        actor_cls: ActorClass[EnvHost],
        connection: _Connection,
        *,
        call_timeout: float = CALL_TIMEOUT,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self._make_env = make_env
        self._actor_cls = actor_cls
        self._connection = connection
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.node = ""
        self._generation = 0
        self._restarts = 0  # as of the last call
        self._base = 0  # added to the current actor's own restart count
        # (token, generation) of the states let go of; garbage collection appends from any thread
        self._released: deque[tuple[int, int]] = deque()
        self._closed = False
        self._actor: Any = None  # a Ray actor handle (untyped: its methods are plain methods)
        self._ready: Any = self._spawn()
        connection.join()

    # -- the actor -----------------------------------------------------------------------------

    def _spawn(self) -> Any:
        """Ask Ray for a fresh actor; the reference its ``describe()`` will fill."""
        self._generation += 1
        self._actor = self._actor_cls.remote(self._make_env)
        return self._actor.describe.remote()

    def _await_start(self) -> None:
        """Wait (``start_timeout`` at most) for the actor asked for last to be up."""
        import ray

        if self._ready is None:
            return
        ref, self._ready = self._ready, None
        try:
            info = ray.get(ref, timeout=self.start_timeout)
        except ray.exceptions.GetTimeoutError:
            self._lost(kill=True)
            raise EnvCrashedError(
                f"a Ray actor for a reward environment did not start within "
                f"{self.start_timeout:.0f} s (no node can place it, or its environment is slow to "
                "build); the next call asks again"
            ) from None
        except ray.exceptions.RayError as exc:
            self._lost(kill=True)
            raise _cause(exc) from None
        self.backend = str(info["backend"])
        self.shares_states = bool(info["shares_states"])
        self.node = str(info["node"])

    def _lost(self, *, kill: bool) -> None:
        """The actor is gone: the next call starts a fresh one, and ``restarts`` moves on."""
        import ray

        if kill and self._actor is not None:
            try:
                ray.kill(self._actor, no_restart=True)
            except Exception as exc:  # noqa: BLE001 - already gone
                logger.debug("killing a reward actor failed: %s", exc)
        self._actor = None
        self._ready = None
        self._base = self._restarts = self._restarts + 1

    def _call(self, method: str, *args: object) -> Any:
        import ray

        if self._closed:
            raise EnvClosedError("this RemoteProofEnv is closed; open a new reward context")
        if self._actor is None:
            self._ready = self._spawn()
        self._await_start()
        ref = self._actor.call.remote(method, args, self._released_tokens())
        try:
            value, own_restarts = ray.get(ref, timeout=self.call_timeout)
        except ray.exceptions.GetTimeoutError:
            self._lost(kill=True)
            raise EnvCrashedError(
                f"the Ray actor holding a {self.backend} reward environment gave no answer "
                f"within {self.call_timeout:.0f} s; the next call starts a fresh one"
            ) from None
        except ray.exceptions.RayActorError as exc:
            self._lost(kill=False)
            raise EnvCrashedError(
                f"the Ray actor holding a {self.backend} reward environment died "
                f"({_first_line(exc)}); the next call starts a fresh one"
            ) from None
        except ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None
        self._restarts = self._base + int(own_restarts or 0)
        return value

    # -- states --------------------------------------------------------------------------------

    def _hold(self, result: TacticResult, theorem: Theorem | None) -> TacticResult:
        """A result from the actor, its token held here (released when collected)."""
        if isinstance(result, ProofState | ProofFinished) and isinstance(result.handle, int):
            held = _Held(result.handle, self._generation)
            weakref.finalize(held, self._released.append, (held.token, held.generation))
            if isinstance(result, ProofState):
                return dataclasses.replace(result, handle=held, theorem=theorem)
            return dataclasses.replace(result, handle=held)
        return result

    def _token(self, state: ProofState | ProofFinished) -> int:
        held = state.handle
        if not isinstance(held, _Held) or held.generation != self._generation:
            raise StaleStateError(
                "this state is not one this environment's current Ray actor handed out (it is "
                "from an actor that has since died, or from another environment)"
            )
        return held.token

    def _released_tokens(self) -> list[int]:
        """The current actor's states let go of since the last call (sent with the next)."""
        tokens = []
        while self._released:
            token, generation = self._released.popleft()
            if generation == self._generation:
                tokens.append(token)
        return tokens

    # -- the ProofEnv contract -----------------------------------------------------------------

    @property
    def restarts(self) -> int | None:  # type: ignore[override]  # the actor's, plus replacements
        # As of the last call: the environment restarts only during a call.
        return self._restarts

    def start(self, theorem: Theorem) -> ProofState:
        state = self._hold(self._call("start", theorem), theorem)
        assert isinstance(state, ProofState)
        return state

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        token = self._token(state)
        return self._hold(self._call("run_tactic", token, tactic, timeout), state.theorem)

    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        verdict: Verdict = self._call("verify", theorem, proof)
        return verdict

    def replay_state(self, goals: list[str], theorem: Theorem | None) -> ProofState | None:
        """:func:`~.env_pool.replay_state` in the actor's environment (None unless it replays)."""
        if self.backend != "replay":
            return None
        state = self._call("replay_state", goals, theorem)
        return None if state is None else self._hold(state, theorem)  # type: ignore[return-value]

    def release(self, state: ProofState | ProofFinished) -> None:
        held = state.handle
        if isinstance(held, _Held):
            self._released.append((held.token, held.generation))

    def close(self) -> None:
        import ray

        if self._closed:
            return
        self._closed = True
        if self._actor is not None and self._ready is None:  # started: close its env first
            try:
                ray.get(self._actor.close.remote(), timeout=10)
            except Exception as exc:  # noqa: BLE001 - killed next anyway
                logger.debug("closing a reward actor failed: %s", exc)
        if self._actor is not None:
            self._lost(kill=True)
        self._connection.leave()


def ray_proof_envs(
    make_env: EnvMaker,
    count: int,
    *,
    address: str | None = None,
    num_cpus: float = 1,
    call_timeout: float = CALL_TIMEOUT,
    start_timeout: float = START_TIMEOUT,
) -> list[RemoteProofEnv]:
    """``count`` environments, each in its own Ray actor (spread over the cluster's nodes) built
    from ``make_env`` (picklable, no arguments), all started before this returns. ``address``:
    the cluster to join (see :func:`~lean_dojo_v2.prover.ray_cluster.connect_ray`; None starts
    a local Ray instance, which the last environment's ``close()`` shuts down). Raises
    :class:`~lean_dojo_v2.prover.workers.WorkerStartError` when they cannot all start within
    ``start_timeout`` seconds, or the factory's own error when it fails."""
    from ....prover.ray_cluster import connect_ray, import_ray
    from ....prover.workers import WorkerStartError

    ray = import_ray()
    started = connect_ray(address)
    actor_cls = ray.remote(num_cpus=num_cpus, max_restarts=0, scheduling_strategy="SPREAD")(EnvHost)
    connection = _Connection(started)
    envs: list[RemoteProofEnv] = []
    try:
        for _ in range(count):
            envs.append(
                RemoteProofEnv(
                    make_env,
                    actor_cls,
                    connection,
                    call_timeout=call_timeout,
                    start_timeout=start_timeout,
                )
            )
        deadline = time.monotonic() + start_timeout
        for env in envs:
            env.start_timeout = max(1.0, deadline - time.monotonic())
            try:
                env._await_start()
            except EnvCrashedError as exc:
                raise WorkerStartError(
                    f"{count} reward environment(s) on Ray could not start: {exc}"
                ) from None
            env.start_timeout = start_timeout
    except BaseException:
        connection.join()  # held while the environments close, so Ray goes down once
        for env in envs:
            env.close()
        connection.leave()
        raise
    nodes = {env.node for env in envs}
    logger.info("%d reward environment(s) on %d Ray node(s)", count, len(nodes))
    return envs


def _cause(exc: BaseException) -> BaseException:
    """The exception raised in the actor (a factory's error, an environment's
    ``InteractionError``), as itself."""
    cause = getattr(exc, "cause", None)
    inner = getattr(cause, "cause", cause)  # an actor's __init__ error is wrapped twice
    return inner if isinstance(inner, BaseException) else exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def replay_env_factory(theorems: Sequence[Theorem]) -> EnvMaker:
    """A picklable factory of a ``ReplayEnv`` over the recorded transitions of ``theorems``."""
    import functools

    return functools.partial(_replay_env, tuple(theorems))


def _replay_env(theorems: tuple[Theorem, ...]) -> ProofEnv:
    from ....interaction.replay import ReplayEnv, TransitionTable

    return ReplayEnv(TransitionTable.from_theorems(theorems))
