"""The exceptions of LeanDojo v1's interaction API, with v1's names and meanings.

v1 code catches them by name (``except DojoInitError``), so the names and what raises each are
v1's; every class is also a :class:`V1Error` (and so a :class:`~lean_dojo_v2.errors.LeanDojoError`)
and every message says what to do. Where v1 raised a built-in exception for bad input
(``assert``, ``RuntimeError``), ours is a subclass of that built-in, so v1 code that caught it
still does.
"""

from __future__ import annotations

from ..errors import LeanDojoError


class V1Error(LeanDojoError):
    """Base class of the errors of :mod:`lean_dojo_v2.v1`."""


class DojoInitError(V1Error):
    """The theorem cannot be started: it is not in the replay dataset or the Lean project, its file
    lies outside the repository, or Lean failed while elaborating it (v1: same meaning)."""


class DojoCrashError(V1Error):
    """The Lean process died (v1: same meaning). The :class:`~lean_dojo_v2.v1.Dojo` is unusable
    afterwards, as in v1; open a new one."""

    def __init__(self, message: str = "", *, out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory

    def __reduce__(self) -> tuple[object, ...]:  # keep the flag through pickling (Ray)
        return (_rebuild_crash, (type(self), str(self), self.out_of_memory))

    @property
    def is_out_of_memory(self) -> bool:
        """True when the crash's message shows SIGKILL or exit status 137 (v1 read that as out of
        memory: the kernel's OOM killer sends that signal) or is v1's ``"OOM"``. Often unknown:
        a REPL that died is relaunched before the next call, which only learns that its states
        are gone."""
        return self.out_of_memory or str(self) == "OOM"


def _rebuild_crash(cls: type[DojoCrashError], message: str, oom: bool) -> DojoCrashError:
    return cls(message, out_of_memory=oom)


class UnknownStateError(DojoCrashError):
    """``run_tac`` got a :class:`~lean_dojo_v2.v1.TacticState` this Dojo did not make (another
    Dojo's, or one built by hand). v1's REPL died on an unknown state id, so this is a
    :class:`DojoCrashError`; unlike v1 the Dojo stays usable."""


class DojoTacticTimeoutError(V1Error):
    """One tactic ran longer than the Dojo's ``timeout`` (v1 4.x: same meaning)."""


class DojoHardTimeoutError(V1Error):
    """The whole session ran longer than the Dojo's ``hard_timeout`` (v1 2.0: same meaning)."""


class V1ArgumentError(V1Error, AssertionError):
    """An argument is wrong: a tactic that is not a ``str``, a ``Theorem`` file that is not a
    ``.lean`` file, a timeout that is not a positive number. v1 checked these with ``assert``, so
    this is an ``AssertionError`` too."""


class InvalidStateError(V1Error, RuntimeError):
    """``run_tac`` got something that is not a ``TacticState`` (a ``ProofFinished``, a
    ``LeanError``…), or the Dojo is not open. v1 raised ``RuntimeError`` for the first; this is
    one too."""


class UnsupportedV1NameError(V1Error, ImportError):
    """A name or module of LeanDojo v1 that :mod:`lean_dojo_v2.v1` does not provide (its tracing
    internals, its constants); the message names our equivalent. An ``ImportError``, so
    ``from lean_dojo import trace`` fails with this one line."""


__all__ = [
    "DojoCrashError",
    "DojoHardTimeoutError",
    "DojoInitError",
    "DojoTacticTimeoutError",
    "InvalidStateError",
    "UnknownStateError",
    "UnsupportedV1NameError",
    "V1ArgumentError",
    "V1Error",
]
