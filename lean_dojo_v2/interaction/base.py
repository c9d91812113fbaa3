"""The ``ProofEnv`` contract: the one way the rest of the library talks to Lean.

Two flavours with the same methods: :class:`ProofEnv` (blocking) and :class:`AsyncProofEnv`
(coroutines, for search loops that keep several Lean processes busy). Both are context managers.
Beside the three abstract methods each declares what callers may ask of any backend, with a
default that suits a backend that says nothing: ``shares_states``, ``restarts`` and ``release``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from numbers import Real
from types import TracebackType

from ..data.model import Theorem
from .types import InvalidRequestError, ProofFinished, ProofState, TacticResult, Verdict


def check_text(text: object, what: str = "tactic") -> None:
    """Raise :class:`InvalidRequestError` unless ``text`` is a ``str`` that can be encoded as
    UTF-8 for Lean (a lone surrogate such as ``"\\ud800"``, e.g. from a badly decoded model
    output, cannot)."""
    if not isinstance(text, str):
        raise InvalidRequestError(f"the {what} must be a str, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(
            f"the {what} is not valid Unicode text ({text[exc.start : exc.end]!r} at index "
            f"{exc.start} is a lone surrogate) and cannot be sent to Lean; decode model output "
            "with errors='replace' or drop this candidate"
        ) from None


def check_timeout(timeout: object) -> None:
    """Raise :class:`InvalidRequestError` unless ``timeout`` is None (the environment's default
    limit) or a finite number of seconds greater than 0. ``inf`` is refused: every call is
    bounded (the contract is that it never hangs); raise the environment's configured default
    for long tactics instead."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, Real):
        raise InvalidRequestError(
            f"timeout must be a number of seconds or None, not {type(timeout).__name__} {timeout!r}"
        )
    seconds = float(timeout)
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidRequestError(
            f"timeout must be a finite number of seconds > 0 (or None for the environment's "
            f"default limit), got {timeout!r}"
        )


def check_tactic_call(tactic: object, timeout: object) -> None:
    """The argument checks of ``run_tactic``, shared by every backend: :func:`check_text` on
    ``tactic`` and :func:`check_timeout`. Raises :class:`InvalidRequestError` (a ``ValueError``)
    before anything is sent."""
    check_text(tactic)
    check_timeout(timeout)


class ProofEnv(ABC):
    """A Lean environment in which proofs are started, stepped and checked."""

    backend: str = "abstract"
    # Whether a state made here may be continued by another environment of the same kind: true
    # where a state carries its goals (replay), false where it is a handle into one process
    # (Pantograph). Search shares one tree across its environments only when all say so.
    shares_states: bool = False
    # How often the backend's process was restarted so far; None where it does not count them.
    # Search reports the change during a search as ``env_restarts``.
    restarts: int | None = None

    @abstractmethod
    def start(self, theorem: Theorem) -> ProofState:
        """The root goals of ``theorem``."""

    @abstractmethod
    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        """Apply ``tactic`` to ``state``; never hangs past ``timeout`` (seconds).

        ``timeout`` is None (the environment's default) or a finite number of seconds > 0;
        other values, and tactic text that is not a valid ``str``, raise
        :class:`InvalidRequestError` up front (:func:`check_tactic_call`)."""

    @abstractmethod
    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        """Re-check a whole proof (tactic text after ``by``) of ``theorem``."""

    def release(self, state: ProofState | ProofFinished) -> None:  # noqa: B027 - optional hook
        """Free ``state`` now: the caller will not use it again. The default does nothing (states
        cost nothing, or the backend frees them once they are garbage-collected)."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends need it
        """Free the backend's resources; afterwards every call raises :class:`EnvClosedError`."""

    def __enter__(self) -> ProofEnv:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncProofEnv(ABC):
    """The coroutine flavour of :class:`ProofEnv`."""

    backend: str = "abstract"
    shares_states: bool = False  # as in ProofEnv
    restarts: int | None = None  # as in ProofEnv

    @abstractmethod
    async def start(self, theorem: Theorem) -> ProofState: ...

    @abstractmethod
    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult: ...

    @abstractmethod
    async def verify(self, theorem: Theorem, proof: str) -> Verdict: ...

    async def release(self, state: ProofState | ProofFinished) -> None:  # noqa: B027
        """Free ``state`` now: the caller will not use it again. The default does nothing."""

    async def close(self) -> None:  # noqa: B027
        """Free the backend's resources."""

    async def __aenter__(self) -> AsyncProofEnv:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
