"""A pool of ``ProofEnv``s for reward checks: one environment per thread at a time, and the
prompt's state reached once per environment.

:meth:`EnvPool.map` runs jobs on worker threads, each holding one environment for the length of
a job (Pantograph environments are not shareable mid-call; their states belong to one process).
:meth:`EnvPool.state_at` reaches the state before recorded tactic ``step`` of a theorem the way
any backend can: ``env.start(theorem)``, then the recorded tactics ``0..step-1``. The states
along the way are kept per environment (a group of completions shares one prompt, and a
theorem's later steps build on its earlier ones), and dropped when the environment restarted.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar, runtime_checkable

from ....data.goals import goal_texts
from ....data.model import Theorem
from ....interaction.base import ProofEnv
from ....interaction.types import (
    ProofFinished,
    ProofState,
    TacticError,
    TacticTimeout,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class UnreachableStateError(Exception):
    """Internal, not a library error: the prompt's state could not be reached in this
    environment. The scorers catch it and give an error reward; it never leaves this package."""


def theorem_key(theorem: Theorem) -> str:
    """The dataset rows' ``theorem_key`` of ``theorem``."""
    return f"{theorem.file_path}::{theorem.full_name}"


class _EnvStates:
    """The states one environment reached along each theorem's recorded tactics."""

    def __init__(self) -> None:
        self.restarts: int | None = None
        # theorem key -> [state before recorded tactic 0, before tactic 1, ...]
        self.chains: dict[str, list[ProofState | ProofFinished]] = {}


class EnvPool:
    """Environments lent to one job at a time; see the module docstring."""

    def __init__(self, envs: Sequence[ProofEnv], tactic_timeout: float | None = None) -> None:
        if not envs:
            raise ValueError("an EnvPool needs at least one environment")
        self.envs = list(envs)
        self.tactic_timeout = tactic_timeout
        self._free: queue.SimpleQueue[ProofEnv] = queue.SimpleQueue()
        for env in self.envs:
            self._free.put(env)
        self._states = {id(env): _EnvStates() for env in self.envs}
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.envs)

    # ------------------------------------------------------------------------- running jobs
    def run(self, job: Callable[[ProofEnv], R]) -> R:
        """Run ``job`` with an environment nobody else holds meanwhile."""
        env = self._free.get()
        try:
            return job(env)
        finally:
            self._free.put(env)

    def map(self, job: Callable[[ProofEnv, T], R], items: Sequence[T]) -> list[R]:
        """``job(env, item)`` for every item, in order; in parallel over the pool when it holds
        several environments and there are several items, else in the caller's thread."""

        def bound(item: T) -> Callable[[ProofEnv], R]:
            return lambda env: job(env, item)

        if len(self.envs) == 1 or len(items) <= 1:
            return [self.run(bound(item)) for item in items]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=len(self.envs), thread_name_prefix="lean-dojo-v2-reward"
                )
            executor = self._executor
        futures = [executor.submit(self.run, bound(item)) for item in items]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the worker threads (the environments are closed by their owner)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    # ------------------------------------------------------------------------ reaching states
    def forget(self, env: ProofEnv) -> None:
        """Drop the states ``env`` reached (after a crash or a stale state they are invalid)."""
        self._states[id(env)] = _EnvStates()

    def _chains(self, env: ProofEnv) -> dict[str, list[ProofState | ProofFinished]]:
        states = self._states[id(env)]
        restarts = getattr(env, "restarts", None)
        if restarts != states.restarts:
            # A restarted process has lost every state it handed out.
            states.chains.clear()
            states.restarts = restarts
        return states.chains

    def state_at(
        self, env: ProofEnv, theorem: Theorem | None, step: int, state_text: str = ""
    ) -> tuple[ProofState, bool]:
        """The state before recorded tactic ``step`` of ``theorem`` in ``env``, and whether its
        goals are those of ``state_text`` (the row's recorded state; True when none is given).

        A recorded tactic that fails on the way is skipped: LeanDojo also records the tactics
        nested inside an earlier one (a ``have … := by``, a ``match`` arm), which that tactic
        already ran. Where this does not arrive at the recorded goals, a ``ReplayEnv`` (whose
        state is its goals) starts from the recorded state itself; another backend uses the
        state it reached. Raises :class:`UnreachableStateError` when no state is reached (the
        proof ended before ``step``, or there is no theorem and no replay), and lets the
        environment's own errors (crash, timeout as :class:`UnreachableStateError`) through."""
        wanted = goal_texts(state_text) if state_text else None
        reached: ProofState | None = None
        if theorem is not None:
            reached = self._replay_prefix(env, theorem, step)
        if reached is not None and (wanted is None or list(reached.goals) == wanted):
            return reached, True
        direct = replay_state(env, wanted, theorem)
        if direct is not None:
            return direct, True
        if reached is not None:
            return reached, False
        if theorem is None:
            raise UnreachableStateError(
                "the row's theorem_key names no theorem of the reward context, and this "
                f"{getattr(env, 'backend', 'unknown')} environment cannot start from goal text"
            )
        raise UnreachableStateError(
            f"replaying the recorded tactics of {theorem.full_name} ended before step {step}"
        )

    def _replay_prefix(self, env: ProofEnv, theorem: Theorem, step: int) -> ProofState | None:
        chains = self._chains(env)
        key = theorem_key(theorem)
        chain = chains.get(key)
        if chain is None:
            chain = [env.start(theorem)]
            chains[key] = chain
        tactics = theorem.traced_tactics
        while len(chain) <= step and len(chain) <= len(tactics):
            current = chain[-1]
            if not isinstance(current, ProofState):
                break
            result = env.run_tactic(current, tactics[len(chain) - 1].tactic, self.tactic_timeout)
            if isinstance(result, TacticTimeout):
                # Not a nested tactic: the environment ran out of time. Keep nothing.
                raise UnreachableStateError(
                    f"recorded tactic {len(chain) - 1} of {theorem.full_name} timed out"
                )
            chain.append(current if isinstance(result, TacticError) else result)
        if step < len(chain) and isinstance(chain[step], ProofState):
            return chain[step]  # type: ignore[return-value]
        return None


@runtime_checkable
class MakesReplayStates(Protocol):
    """An environment that stands in front of another and makes :func:`replay_state`'s states
    where that one lives (:class:`~.ray_envs.RemoteProofEnv`: in its Ray actor)."""

    def replay_state(self, goals: list[str], theorem: Theorem | None) -> ProofState | None: ...


def replay_state(
    env: ProofEnv, goals: list[str] | None, theorem: Theorem | None
) -> ProofState | None:
    """A ``ReplayEnv`` state made from recorded goals (its states are their goals), or None for
    any other backend. A replay environment in a Ray actor makes it there."""
    from ....interaction.replay import ReplayEnv

    if goals and isinstance(env, MakesReplayStates):
        return env.replay_state(goals, theorem)
    if not goals or not isinstance(env, ReplayEnv):
        return None
    return ProofState(tuple(goals), env.backend, handle=tuple(goals), theorem=theorem)
