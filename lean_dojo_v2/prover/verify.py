"""Layer 3 (prover): re-checking a whole proof, with retries when the environment fails.

:func:`verify_proof` (blocking) and :func:`verify_proof_async` are how everything re-checks a
proof before it counts: both search modes, and (to come) GRPO's rewards and the agents. A proof
is the tactics (``proof_text`` joins them) or the tactic block itself. The answer is the
environment's :class:`~lean_dojo_v2.interaction.Verdict`, or None when the proof could not be
checked: every attempt failed with an environment error (a crash, a refused request). A closed
environment (:class:`~lean_dojo_v2.interaction.EnvClosedError`) raises, since retrying cannot
help; so does anything that is not an :class:`~lean_dojo_v2.interaction.InteractionError`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..data.model import Theorem
from ..errors import ConfigError
from ..interaction import AsyncProofEnv, ProofEnv
from ..interaction.async_adapter import as_async_envs
from ..interaction.types import EnvClosedError, InteractionError, Verdict
from .result import proof_text
from .threads import run_sync

Envs = ProofEnv | AsyncProofEnv | Sequence[ProofEnv | AsyncProofEnv]


class VerifyObserver:
    """What :func:`verify_proof_async` reports while it works; every hook does nothing here.

    A caller that keeps counters (search does) subclasses it."""

    def before_attempt(self) -> None:
        """Called before each attempt; may raise to give up (search: its time is up)."""

    def attempt_done(self, seconds: float) -> None:
        """One ``verify`` call returned or raised after ``seconds``."""

    def env_failed(self, exc: InteractionError) -> None:
        """An attempt failed with an environment error; the next one (if any) follows."""

    def verdict(self, verdict: Verdict) -> None:
        """The environment's verdict, accepted or not (then it is the answer)."""


_QUIET = VerifyObserver()


async def verify_proof_async(
    env: Envs,
    theorem: Theorem,
    tactics: Sequence[str] | str,
    *,
    retries: int = 1,
    first_env: int = 0,
    observer: VerifyObserver | None = None,
) -> Verdict | None:
    """``env.verify(theorem, proof)``, tried ``1 + retries`` times while the environment fails.

    ``env`` is one environment or a list of them (blocking ones run in worker threads); attempt
    ``k`` runs on environment ``(first_env + k) % len(envs)``, so a retry moves on to the next
    environment when there are several. ``tactics`` is a list of tactics (joined by
    :func:`~lean_dojo_v2.prover.result.proof_text`) or the proof's tactic block as one string.
    Returns the verdict, or None when every attempt failed (see the module docstring)."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be a whole number >= 0, got {retries!r}")
    envs = as_async_envs(env)
    text = tactics if isinstance(tactics, str) else proof_text(tactics)
    obs = observer if observer is not None else _QUIET
    for attempt in range(retries + 1):
        obs.before_attempt()
        target = envs[(first_env + attempt) % len(envs)]
        t = time.perf_counter()
        try:
            verdict = await target.verify(theorem, text)
        except EnvClosedError:
            raise
        except InteractionError as exc:
            obs.env_failed(exc)
            continue
        finally:
            obs.attempt_done(time.perf_counter() - t)
        obs.verdict(verdict)
        return verdict
    return None


def verify_proof(
    env: Envs, theorem: Theorem, tactics: Sequence[str] | str, *, retries: int = 1
) -> Verdict | None:
    """Blocking :func:`verify_proof_async` (also inside a running event loop, e.g. Jupyter).

    Give it blocking environments (``PantographEnv``, ``ReplayEnv``); an ``AsyncPantographEnv``
    belongs to the loop that opened it: await :func:`verify_proof_async` there instead."""
    return run_sync(verify_proof_async(env, theorem, tactics, retries=retries))


__all__ = ["VerifyObserver", "verify_proof", "verify_proof_async"]
