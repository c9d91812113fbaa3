"""Results and errors of the Lean boundary, shared by every backend.

A search talks to Lean only through these: ``run_tactic`` returns a :class:`ProofState` (goals
remain), :class:`ProofFinished` (no goals left) or a :class:`TacticError` (Lean rejected the
tactic; :class:`TacticTimeout` is the case where it ran out of time). A backend that dies raises
:class:`EnvCrashedError`. Every result says which backend produced it, so a report can never pass
off a replayed result as one checked by Lean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data.goals import NO_GOALS
from ..errors import InteractionError  # noqa: F401  (re-exported: the Lean boundary's base error)
from ..errors import LeanNotFoundError as _LeanNotFoundError
from .messages import LeanMessage, parse_lean_messages

if TYPE_CHECKING:
    from ..data.model import Theorem

# The public results and errors of the Lean boundary (re-exported by ``lean_dojo_v2.interaction``).
__all__ = [
    "EnvClosedError",
    "EnvCrashedError",
    "InteractionError",
    "InvalidRequestError",
    "LeanNotFoundError",
    "ProofFinished",
    "ProofState",
    "STANDARD_AXIOMS",
    "StaleStateError",
    "TacticError",
    "TacticResult",
    "TacticTimeout",
    "UnknownTheoremError",
    "Verdict",
    "VersionMismatchError",
]


@dataclass(frozen=True)
class ProofState:
    """Open goals after some tactics.

    ``goals`` holds each goal's canonical text (:func:`lean_dojo_v2.data.canonical_state` form), in
    order; ``text`` is the whole state as a model sees it. ``handle`` is the backend's own reference
    (a Pantograph state id, a replay position); callers pass the state back unchanged.
    """

    goals: tuple[str, ...]
    backend: str
    handle: object = field(default=None, compare=False)
    theorem: Theorem | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        return "\n\n".join(self.goals) if self.goals else NO_GOALS

    @property
    def num_goals(self) -> int:
        return len(self.goals)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ProofFinished:
    """The tactic closed every goal."""

    backend: str
    handle: object = field(default=None, compare=False)
    messages: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return NO_GOALS


@dataclass(frozen=True)
class TacticError:
    """Lean rejected the tactic. ``kind`` is ``"tactic"`` (it failed), ``"parse"`` (it did not
    parse), ``"sorry"`` (it closed goals with ``sorry``/unsafe code, which a proof may not do),
    ``"not_recorded"`` (replay: no recorded transition) or ``"timeout"``."""

    message: str
    backend: str
    kind: str = "tactic"


@dataclass(frozen=True)
class TacticTimeout(TacticError):
    """The tactic ran longer than its time limit; the environment is usable afterwards."""

    kind: str = "timeout"
    timeout: float | None = None


TacticResult = ProofState | ProofFinished | TacticError


@dataclass(frozen=True)
class Verdict:
    """Result of re-checking a whole proof.

    ``ok`` is true only when the checker accepted the proof with no error and no ``sorry``.
    ``checked_by`` says what did the checking: ``"lean"`` (a real Lean frontend) or ``"replay"``
    (only recorded transitions, which proves nothing new and says so).
    """

    ok: bool
    backend: str
    checked_by: str
    messages: tuple[str, ...] = ()
    # The axioms the checked declaration depends on, as Lean's ``#print axioms`` names them, or
    # None when the backend cannot say (replay; a check that failed before Lean answered).
    axioms: tuple[str, ...] | None = None
    # Lean's messages about the proof, placed in it (see LeanMessage); empty where the backend
    # gives none (replay, recorded), and then ``errors`` reads them from ``messages``.
    lean_messages: tuple[LeanMessage, ...] = ()
    # Served from a verdict cache: this answer cost no call to the backend.
    cached: bool = False

    def __bool__(self) -> bool:
        return self.ok

    @property
    def errors(self) -> tuple[LeanMessage, ...]:
        """Lean's error messages about the proof, in Lean's order (the first error first)."""
        found = self.lean_messages or tuple(parse_lean_messages(self.messages))
        return tuple(m for m in found if m.is_error)

    @property
    def first_error(self) -> LeanMessage | None:
        """The first error (its position in the proof, its text, the goal there), or None."""
        errors = self.errors
        return errors[0] if errors else None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (what a verdict cache stores); :meth:`from_dict` reads it back."""
        return {
            "ok": self.ok,
            "backend": self.backend,
            "checked_by": self.checked_by,
            "messages": list(self.messages),
            "axioms": None if self.axioms is None else list(self.axioms),
            "lean_messages": [m.to_dict() for m in self.lean_messages],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Verdict:
        def strings(value: object) -> tuple[str, ...]:
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        axioms = d.get("axioms")
        found = d.get("lean_messages")
        return cls(
            bool(d.get("ok")),
            str(d.get("backend", "")),
            str(d.get("checked_by", "")),
            strings(d.get("messages")),
            strings(axioms) if isinstance(axioms, list) else None,
            tuple(LeanMessage.from_dict(m) for m in found or () if isinstance(m, Mapping))
            if isinstance(found, list)
            else (),
        )

    @property
    def nonstandard_axioms(self) -> tuple[str, ...]:
        """The axioms the proof depends on beyond :data:`STANDARD_AXIOMS` (``sorryAx``, one a
        project declares, ``Lean.ofReduceBool`` from ``native_decide``…); empty when they are
        unknown (``axioms`` is None)."""
        return tuple(a for a in self.axioms or () if a not in STANDARD_AXIOMS)


# The axioms of Lean's foundations that mathlib's proofs rest on: anything beyond them (a
# project's own ``axiom``, ``sorryAx``, ``Lean.ofReduceBool`` of ``native_decide``) means the
# proof trusts more than the kernel.
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})


class EnvClosedError(InteractionError, RuntimeError):
    """The environment was closed (``close()``, or its context manager exited); open a new one.
    Every backend raises this (or a subclass) for a call after ``close()``. It is also a
    ``RuntimeError``, which ``ReplayEnv`` raised before."""


class InvalidRequestError(InteractionError, ValueError):
    """A call's arguments cannot be sent to Lean (tactic text that is not a ``str`` or holds a
    lone surrogate, a timeout that is not a finite number of seconds > 0). Nothing was sent; the
    environment is unchanged. The message says which argument to fix."""


class EnvCrashedError(InteractionError):
    """The backend process died or answered garbage. States it handed out are invalid; the
    environment restarts itself on the next call where it can."""


# No Lean / no Pantograph binary: one class for the whole library (tracing raises it too).
LeanNotFoundError = _LeanNotFoundError


class VersionMismatchError(InteractionError):
    """The Pantograph binary was built for a different Lean version than the project uses."""


class StaleStateError(InteractionError):
    """A state from before a restart (or from another environment) was passed back."""


class UnknownTheoremError(InteractionError):
    """The environment cannot start this theorem (not in the project, or no recorded proof)."""
