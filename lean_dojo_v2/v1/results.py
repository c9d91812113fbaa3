"""What ``Dojo.run_tac`` returns, with v1's names, fields, equality and hashing.

- :class:`TacticState` ``(pp, id, message)``: goals remain. Two states are equal (and hash
  alike) when their ``pp`` is, whatever their ids: v1 search code keys its nodes by state.
- :class:`ProofFinished` ``(tactic_state_id, message)``: no goals remain (equal by id).
- :class:`LeanError` ``(error)``: Lean rejected the tactic (equal by text).
- :class:`ProofGivenUp`: the tactic closed a goal with ``sorry``/``admit`` (all equal).

All are frozen dataclasses and pickle (v1 code sends them through Ray). Older v1 releases'
names are kept: ``TacticError`` (v1 1.x) is :class:`LeanError` itself, so ``type(r) in
(TacticError, …)`` still matches; :class:`TimeoutError` and :class:`IncompleteSolve1` (results
v1 returned only on Lean 3) exist for such checks and imports but are never returned: a tactic
that runs out of time raises :class:`~lean_dojo_v2.v1.DojoTacticTimeoutError`, as in v1 4.x.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .goals import Goal, parse_goals


@dataclass(frozen=True)
class TacticState:
    """Open goals: ``pp`` is the state as Lean prints it (goals separated by a blank line), ``id``
    the Dojo's number for it (0 for the initial state), ``message`` what Lean printed besides
    (``None`` for the initial state)."""

    pp: str
    id: int = field(compare=False)
    message: str | None = field(default=None, compare=False)
    goals: list[Goal] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "goals", parse_goals(self.pp))

    @property
    def num_goals(self) -> int:
        return len(self.goals)


@dataclass(frozen=True)
class ProofFinished:
    """The tactic closed the last goal; ``tactic_state_id`` numbers the finished state."""

    tactic_state_id: int
    message: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ProofGivenUp:
    """The tactic closed a goal with ``sorry`` or ``admit``: no proof can follow from here."""


@dataclass(frozen=True)
class LeanError:
    """Lean rejected the tactic; ``error`` is its message."""

    error: str


# v1 1.x called Lean's rejection TacticError; one class, so isinstance and type() checks agree.
TacticError = LeanError


@dataclass(frozen=True)
class TimeoutError:  # noqa: A001 - v1's name, shadowing the builtin only inside this module
    """v1's result of a tactic stopped by Lean 3's ``try_for_time``. Never returned here: a tactic
    that runs out of time raises ``DojoTacticTimeoutError`` (v1 4.x)."""

    error: str


@dataclass(frozen=True)
class IncompleteSolve1:
    """A result of LeanDojo's Lean 3 releases, kept so that code importing it runs. Never
    returned."""


@dataclass(frozen=True)
class CommandState:
    """v1's state of command mode (``Dojo((repo, path, line))``), which is not supported here; the
    class exists for imports and ``isinstance`` checks."""

    id: int = field(compare=False)
    message: str | None = field(default=None, compare=False)


TacticResult = TacticState | ProofFinished | LeanError | ProofGivenUp
CommandResult = CommandState | LeanError
State = CommandState | TacticState

__all__ = [
    "CommandResult",
    "CommandState",
    "IncompleteSolve1",
    "LeanError",
    "ProofFinished",
    "ProofGivenUp",
    "State",
    "TacticError",
    "TacticResult",
    "TacticState",
    "TimeoutError",
]
