"""What Lean-checked rewards need beyond a completion: the theorems, a pool of environments, a
cache of checks, and counters.

:func:`open_reward_context` opens one (Pantograph where a REPL is found, else replay over the
theorems); :class:`RewardContext` is also built directly from environments a caller owns.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ....data.model import Theorem
from ....errors import ConfigValueError
from ....interaction.base import ProofEnv
from .env_pool import EnvPool, theorem_key

if TYPE_CHECKING:
    from ....interaction.pantograph.config import PantographConfig
    from .ray_envs import RemoteProofEnv

logger = logging.getLogger("lean_dojo_v2.trainer.rl.rewards")

BACKENDS: tuple[str, ...] = ("auto", "replay", "lean")
WORKERS: tuple[str, ...] = ("local", "ray")
STAT_KEYS: tuple[str, ...] = ("checks", "cache_hits", "rejected", "errors", "timeouts", "crashes")


@dataclass(eq=False)
class RewardContext:
    """The shared state of Lean-checked scorers during a run.

    ``theorems``: by ``theorem_key`` (``"file_path::full_name"``); ``envs``: the pool (each used
    by one thread at a time); ``backend``: ``"replay"`` or ``"lean"``; ``tactic_timeout``:
    seconds per tactic (None: the environment's default); ``max_proof_steps``: how many
    tactics of a completion the tactic reward applies (1: only the first); ``cache_size``: how
    many (state, tactic) results are kept; ``owns_envs``: whether :meth:`close` closes the
    environments."""

    theorems: Mapping[str, Theorem]
    envs: list[ProofEnv]
    backend: str = "replay"
    tactic_timeout: float | None = 10.0
    max_proof_steps: int = 1
    cache_size: int = 100_000
    owns_envs: bool = True
    last_backend: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.max_proof_steps, int) or self.max_proof_steps < 1:
            raise ConfigValueError(
                f"max_proof_steps must be a whole number >= 1, got {self.max_proof_steps!r}"
            )
        self.theorems = dict(self.theorems)
        self.pool = EnvPool(self.envs, self.tactic_timeout)
        self._lock = threading.Lock()
        self._cache: OrderedDict[Hashable, object] = OrderedDict()
        self._counts = dict.fromkeys(STAT_KEYS, 0)
        self._announced = False
        self._closed = False

    # ----------------------------------------------------------------------------- look-ups
    def theorem(self, key: str | None) -> Theorem | None:
        return self.theorems.get(key) if key else None

    def cached(self, key: Hashable) -> object | None:
        """A cached check result (counted as a cache hit), or None."""
        with self._lock:
            value = self._cache.get(key)
            if value is not None:
                self._cache.move_to_end(key)
                self._counts["cache_hits"] += 1
            return value

    def store(self, key: Hashable, value: object) -> None:
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    # ------------------------------------------------------------------------------ counters
    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def scored_by(self, backend: str, scorer: str) -> None:
        """Record which backend scored; say it once per context (a log line)."""
        self.last_backend = backend
        if not self._announced:
            self._announced = True
            logger.info(
                "%s rewards are checked by %s (%d environment(s))", scorer, backend, len(self.envs)
            )

    def stats(self) -> dict[str, str | int]:
        """``backend`` (of the last check, else the context's), and the counters: ``checks``
        (run in an environment), ``cache_hits`` (answered without one, duplicates in a batch
        included), ``rejected`` (Lean or replay refused the tactic or proof), ``errors`` (an
        environment error, or a state that could not be reached), ``timeouts``, ``crashes``."""
        with self._lock:
            counts = dict(self._counts)
        return {"backend": self.last_backend or self.backend, **counts}

    # ------------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Stop the pool's threads; close the environments when this context opened them."""
        if self._closed:
            return
        self._closed = True
        self.pool.close()
        if self.owns_envs:
            for env in self.envs:
                try:
                    env.close()
                except Exception as exc:  # noqa: BLE001 - closing must not raise
                    logger.warning("closing a reward environment failed: %s", exc)

    def __enter__(self) -> RewardContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def theorems_by_key(theorems: Mapping[str, Theorem] | Iterable[Theorem]) -> dict[str, Theorem]:
    """``theorems`` keyed by ``theorem_key`` (a mapping is taken as it is)."""
    if isinstance(theorems, Mapping):
        return dict(theorems)
    out: dict[str, Theorem] = {}
    for thm in theorems:
        out.setdefault(theorem_key(thm), thm)
    return out


def open_reward_context(
    theorems: Mapping[str, Theorem] | Iterable[Theorem],
    *,
    backend: str = "auto",
    num_envs: int = 4,
    pantograph: PantographConfig | Mapping[str, Any] | None = None,
    tactic_timeout: float | None = 10.0,
    max_proof_steps: int = 1,
    cache_size: int = 100_000,
    workers: str = "local",
    ray_address: str | None = None,
) -> RewardContext:
    """A :class:`RewardContext` with ``num_envs`` environments of its own.

    ``backend``: ``"lean"`` — ``PantographEnv``s (``pantograph``: a ``PantographConfig``, a
    mapping of its fields, or None for the defaults; the REPL is found by
    :func:`~lean_dojo_v2.interaction.pantograph.locate.locate_repl`; none found raises
    :class:`~lean_dojo_v2.errors.LeanNotFoundError`); ``"replay"`` — ``ReplayEnv``s over the
    recorded transitions of ``theorems``; ``"auto"`` — Lean when a REPL is found, else replay.
    ``theorems``: a mapping by ``theorem_key`` or an iterable of theorems. ``workers``:
    ``"local"`` — the environments live in this process (a Pantograph REPL is a child process of
    it); ``"ray"`` — each lives in its own Ray actor (:mod:`.ray_envs`), on the cluster at
    ``ray_address`` (None: a local Ray instance), with the same rewards."""
    if workers not in WORKERS:
        raise ConfigValueError(
            f"unknown reward workers backend {workers!r}; valid: {', '.join(WORKERS)}"
        )
    if backend not in BACKENDS:
        raise ConfigValueError(
            f"unknown reward backend {backend!r}; valid backends: {', '.join(BACKENDS)}"
        )
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ConfigValueError(f"num_envs must be a whole number >= 1, got {num_envs!r}")
    by_key = theorems_by_key(theorems)
    lean: PantographConfig | None = None
    if backend in ("auto", "lean"):
        lean = _pantograph_config(pantograph, tactic_timeout, required=backend == "lean")
    chosen = "lean" if lean is not None else "replay"
    envs: list[ProofEnv]
    if workers == "ray":
        envs = list(_ray_envs(lean, by_key.values(), num_envs, ray_address))
    elif lean is not None:
        from ....interaction.pantograph import PantographEnv

        envs = [PantographEnv(lean) for _ in range(num_envs)]
    else:
        envs = _replay_envs(by_key.values(), num_envs)
    logger.info("reward context: %s backend, %d environment(s) (%s)", chosen, len(envs), workers)
    return RewardContext(
        by_key,
        envs,
        backend=chosen,
        tactic_timeout=tactic_timeout,
        max_proof_steps=max_proof_steps,
        cache_size=cache_size,
        owns_envs=True,
    )


def _replay_envs(theorems: Iterable[Theorem], num_envs: int) -> list[ProofEnv]:
    from ....interaction.replay import ReplayEnv, TransitionTable

    table = TransitionTable.from_theorems(theorems)  # read-only once built: shared safely
    return [ReplayEnv(table) for _ in range(num_envs)]


def _ray_envs(
    lean: PantographConfig | None,
    theorems: Iterable[Theorem],
    num_envs: int,
    address: str | None,
) -> list[RemoteProofEnv]:
    """``num_envs`` environments in Ray actors: Pantograph with ``lean``, else replay."""
    import functools

    from .ray_envs import ray_proof_envs, replay_env_factory

    if lean is not None:
        from ....interaction.pantograph import PantographEnv

        return ray_proof_envs(functools.partial(PantographEnv, lean), num_envs, address=address)
    return ray_proof_envs(replay_env_factory(list(theorems)), num_envs, address=address)


def _pantograph_config(
    pantograph: PantographConfig | Mapping[str, Any] | None,
    tactic_timeout: float | None,
    *,
    required: bool,
) -> PantographConfig | None:
    """The config of the reward environments' REPLs, or None where none is found (and not
    ``required``)."""
    from ....errors import LeanNotFoundError
    from ....interaction.pantograph import PantographConfig
    from ....interaction.pantograph.locate import locate_repl

    if pantograph is None:
        config = PantographConfig()
    elif isinstance(pantograph, PantographConfig):
        config = pantograph
    elif isinstance(pantograph, Mapping):
        config = PantographConfig(**pantograph)
    else:
        raise ConfigValueError(
            "pantograph must be a PantographConfig, a mapping of its fields or None, not "
            f"{type(pantograph).__name__}"
        )
    try:
        located = locate_repl(config.command)
    except LeanNotFoundError:
        if required:
            raise
        logger.info("no Pantograph REPL found; Lean-checked rewards use replay")
        return None
    changes: dict[str, object] = {"command": list(located.command)}
    if tactic_timeout is not None:
        changes["tactic_timeout"] = tactic_timeout
    return config.with_(**changes)


__all__ = ["BACKENDS", "WORKERS", "RewardContext", "open_reward_context", "theorems_by_key"]
