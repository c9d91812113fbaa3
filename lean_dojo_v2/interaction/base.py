"""The ``ProofEnv`` contract: the one way the rest of the library talks to Lean.

Two flavours with the same methods: :class:`ProofEnv` (blocking) and :class:`AsyncProofEnv`
(coroutines, for search loops that keep several Lean processes busy). Both are context managers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType

from ..data.model import Theorem
from .types import ProofState, TacticResult, Verdict


class ProofEnv(ABC):
    """A Lean environment in which proofs are started, stepped and checked."""

    backend: str = "abstract"

    @abstractmethod
    def start(self, theorem: Theorem) -> ProofState:
        """The root goals of ``theorem``."""

    @abstractmethod
    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        """Apply ``tactic`` to ``state``; never hangs past ``timeout`` (seconds)."""

    @abstractmethod
    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        """Re-check a whole proof (tactic text after ``by``) of ``theorem``."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends need it
        """Free the backend's resources; the environment is unusable afterwards."""

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

    @abstractmethod
    async def start(self, theorem: Theorem) -> ProofState: ...

    @abstractmethod
    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult: ...

    @abstractmethod
    async def verify(self, theorem: Theorem, proof: str) -> Verdict: ...

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
