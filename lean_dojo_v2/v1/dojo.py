"""v1's ``Dojo`` (``lean_dojo.interaction.dojo``) on a :class:`~lean_dojo_v2.interaction.ProofEnv`.

``with Dojo(theorem, timeout=600) as (dojo, init_state):`` starts the theorem in the environment
:mod:`.backend` chooses (Pantograph, or replay of a traced dataset), and
``dojo.run_tac(state, tactic)`` steps it, with v1's semantics (LeanDojo v1 4.20.0,
``interaction/dojo.py`` and its ``Lean4Repl.lean``):

- state ids: 0 for the initial state, then one more for each tactic that succeeds (a finished
  proof takes an id too); a failing tactic takes none;
- any state this Dojo returned may be continued again (search backtracks), in any order;
- ``ProofFinished`` when no goals remain (``is_successful`` becomes True); ``LeanError`` with
  Lean's message when the tactic fails; ``ProofGivenUp`` when it closes a goal with ``sorry`` or
  ``admit`` (v1 said so once the last goal was closed; a proof through ``sorry`` can never finish,
  so no proof is lost by saying it at once);
- a tactic past ``timeout`` seconds raises ``DojoTacticTimeoutError`` (``has_timedout``); a
  session past ``hard_timeout`` seconds (v1 2.0) raises ``DojoHardTimeoutError`` (given only
  ``hard_timeout``, as v1 2.0 code does, a tactic is limited by the session's time left alone,
  as there); a Lean process
  that dies raises ``DojoCrashError`` (``is_crashed``), and every later ``run_tac`` does too;
- ``run_tac`` on anything but a ``TacticState`` raises ``InvalidStateError`` (a ``RuntimeError``,
  as in v1), on a ``TacticState`` this Dojo did not make ``UnknownStateError`` (a
  ``DojoCrashError``: v1's REPL died on an unknown id); a tactic that is not a ``str`` raises
  ``V1ArgumentError`` (an ``AssertionError``, as in v1);
- ``__exit__`` closes the environment (the Lean process is stopped) and never swallows an
  exception.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from numbers import Real
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from ..interaction import types as boundary
from ..interaction.types import (
    EnvCrashedError,
    InteractionError,
    InvalidRequestError,
    ProofState,
    StaleStateError,
    TacticTimeout,
)
from .errors import (
    DojoCrashError,
    DojoHardTimeoutError,
    DojoInitError,
    DojoTacticTimeoutError,
    InvalidStateError,
    UnknownStateError,
    V1ArgumentError,
)
from .repo import LeanGitRepo, Pos, Theorem

if TYPE_CHECKING:  # pragma: no cover
    from ..interaction.pantograph import PantographEnv
    from ..interaction.replay import ReplayEnv
from .results import (
    CommandResult,
    CommandState,
    IncompleteSolve1,
    LeanError,
    ProofFinished,
    ProofGivenUp,
    State,
    TacticError,
    TacticResult,
    TacticState,
    TimeoutError,
)

DEFAULT_TIMEOUT = 600.0  # v1 4.x's default per-tactic limit (seconds)


def _check_seconds(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise V1ArgumentError(f"{what} must be a number of seconds > 0, not {value!r}")
    if value <= 0:
        raise V1ArgumentError(f"{what} must be a number of seconds > 0, not {value!r}")
    return float(value)


def _check_imports(imports: object) -> tuple[str, ...]:
    if isinstance(imports, str) or not isinstance(imports, Sequence | set | frozenset):
        raise V1ArgumentError(
            f"additional_imports must be a list of module names such as ['Mathlib.Tactic'], "
            f"not {imports!r}"
        )
    # ReProver passes [module], None without --module; v1 wrote every entry into an `import`
    # line unchecked. None names no module, so it is dropped rather than refused.
    names = tuple(m for m in imports if m is not None)
    bad = [
        m for m in names if not isinstance(m, str) or not m.strip() or any(c.isspace() for c in m)
    ]
    if bad:
        raise V1ArgumentError(
            f"additional_imports must hold module names such as 'Mathlib.Tactic', not {bad[0]!r}"
        )
    return names


def _crash_message(exc: BaseException) -> tuple[str, bool]:
    text = " ".join(str(exc).split()) or type(exc).__name__
    # v1 read exit status 137 (SIGKILL, what the kernel's OOM killer sends) as out of memory.
    oom = any(s in text for s in ("code -9", "code 137", "signal 9", "SIGKILL"))
    return text, oom


class Dojo:
    """Gym-like interaction with one theorem through tactics, as LeanDojo v1's ``Dojo``.

    ``Dojo(theorem, timeout=600, additional_imports=[], build_deps=True, *, hard_timeout=None)``:
    ``timeout`` limits each tactic (seconds; 600 unless only ``hard_timeout`` is given),
    ``hard_timeout`` the whole session (v1 2.0's argument; None: no limit),
    ``additional_imports`` are modules the Lean process imports besides the theorem's own
    (``None`` entries are ignored).
    ``build_deps`` is accepted for v1's signature; nothing is built here (a project is used only
    when it is built already). See the module docstring for the semantics; ``backend`` says
    which environment runs the theorem (``"pantograph"`` or ``"replay"``) once the Dojo is open.
    """

    def __init__(
        self,
        entry: Theorem | tuple[LeanGitRepo, Any, int],
        timeout: int | float | None = None,
        additional_imports: Sequence[str | None] = (),
        build_deps: bool = True,
        *,
        hard_timeout: float | None = None,
    ) -> None:
        if isinstance(entry, tuple):
            raise DojoInitError(
                "command mode (Dojo((repo, file_path, line))) is not supported by "
                "lean_dojo_v2.v1; run commands through PantographEnv.check_source "
                "(docs/interaction.md), or pass a Theorem for tactic mode"
            )
        if not isinstance(entry, Theorem):
            raise V1ArgumentError(
                f"Dojo's entry must be a Theorem(repo, file_path, full_name), not "
                f"{type(entry).__name__}"
            )
        self.entry = entry
        self.hard_timeout = (
            None if hard_timeout is None else _check_seconds(hard_timeout, "Dojo's hard_timeout")
        )
        if timeout is None:
            # v1 2.0 had no tactic limit on Lean 4: a hung tactic ran into the hard timeout.
            timeout = self.hard_timeout if self.hard_timeout is not None else DEFAULT_TIMEOUT
        self.timeout = _check_seconds(timeout, "Dojo's timeout")
        self.additional_imports = list(_check_imports(additional_imports))
        self.build_deps = build_deps
        self.repo: LeanGitRepo = entry.repo
        self.file_path = entry.file_path
        self.is_successful: bool = False
        self.is_crashed = False
        self.has_timedout = False
        self.backend: str | None = None
        self.env: PantographEnv | ReplayEnv | None = None
        self.start_time: float | None = None
        # id -> (pp, the environment's state); a finished proof keeps its id with "no goals".
        self._states: dict[int, tuple[str, ProofState | boundary.ProofFinished]] = {}
        self._crash: str | None = None

    @property
    def uses_tactics(self) -> bool:
        return True

    @property
    def uses_commands(self) -> bool:
        return False

    # -- the session ------------------------------------------------------------------------

    def __enter__(self) -> tuple[Dojo, TacticState]:
        if self.env is not None:
            raise InvalidStateError(
                "this Dojo is open already; open a new Dojo for another session"
            )
        from .backend import open_env

        opened = open_env(self.entry, self.timeout, tuple(self.additional_imports))
        try:
            state = opened.env.start(opened.target)
        except BaseException as exc:
            opened.env.close()
            if isinstance(exc, InteractionError):
                raise DojoInitError(
                    f"{self.entry.full_name} cannot be started ({opened.backend}): "
                    f"{' '.join(str(exc).split())}"
                ) from exc
            raise
        self.env, self.backend = opened.env, opened.backend
        self._states = {0: (state.text, state)}
        self.start_time = time.monotonic()
        return self, TacticState(state.text, 0)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        env, self.env = self.env, None
        self._states = {}
        if env is not None:
            env.close()

    # -- tactics ----------------------------------------------------------------------------

    def run_tac(self, state: TacticState, tactic: str) -> TacticResult:
        """Run ``tactic`` on ``state``: a ``TacticState``, ``ProofFinished``, ``LeanError`` or
        ``ProofGivenUp`` (see the module docstring for what raises)."""
        if not isinstance(state, TacticState):
            raise InvalidStateError(
                f"Attempting to run a tactic on an invalid state {state!r}: run_tac takes a "
                "TacticState returned by this Dojo (a ProofFinished or an error has no goals "
                "left to act on)"
            )
        if not isinstance(tactic, str):
            raise V1ArgumentError(
                f"Invalid tactic {tactic!r}: a tactic is a str of Lean, such as 'simp'"
            )
        env = self.env
        if env is None:
            raise InvalidStateError(
                "this Dojo is not open: run tactics inside `with Dojo(theorem) as (dojo, "
                "init_state):`"
            )
        if self._crash is not None:
            raise DojoCrashError(
                f"the Lean process of this Dojo died earlier ({self._crash}); open a new Dojo"
            )
        env_state = self._lookup(state)
        limit, hard = self._limit()
        try:
            result = env.run_tactic(env_state, tactic, timeout=limit)
        except InvalidRequestError as exc:
            raise V1ArgumentError(f"Invalid tactic: {exc}") from None
        except StaleStateError as exc:
            # The process restarted (after a timeout kill): every state this Dojo made is gone.
            self._crashed(f"its states are gone ({' '.join(str(exc).split())})")
        except EnvCrashedError as exc:
            self._crashed(*_crash_message(exc))
        if isinstance(result, TacticTimeout):
            self.has_timedout = True
            if hard:
                raise DojoHardTimeoutError(
                    f"the session ran past its hard_timeout of {self.hard_timeout:g} s; open a "
                    "new Dojo (with a larger hard_timeout) to go on"
                )
            raise DojoTacticTimeoutError(
                f"the tactic ran longer than the Dojo's timeout of {limit:g} s: {tactic!r}"
            )
        if isinstance(result, boundary.TacticError):
            if result.kind == "sorry":
                return ProofGivenUp()
            return LeanError(result.message.strip())
        new_id = len(self._states)
        if isinstance(result, boundary.ProofFinished):
            self._states[new_id] = ("no goals", result)
            self.is_successful = True
            return ProofFinished(new_id, "\n".join(result.messages))
        self._states[new_id] = (result.text, result)
        return TacticState(result.text, new_id, "")

    def _lookup(self, state: TacticState) -> ProofState:
        known = self._states.get(state.id)
        if known is None or known[0] != state.pp or not isinstance(known[1], ProofState):
            why = "has other goals here" if known else "is not one of them"
            raise UnknownStateError(
                f"state {state.id} was not made by this Dojo (it made states 0 to "
                f"{len(self._states) - 1}, and state {state.id} {why}): pass a TacticState "
                "returned by this Dojo's run_tac, or its initial state"
            )
        return known[1]

    def _limit(self) -> tuple[float, bool]:
        """This tactic's time limit, and whether it is the session's remaining time."""
        limit = self.timeout
        if self.hard_timeout is None or self.start_time is None:
            return limit, False
        left = self.hard_timeout - (time.monotonic() - self.start_time)
        if left <= 0:
            self.has_timedout = True
            raise DojoHardTimeoutError(
                f"the session ran past its hard_timeout of {self.hard_timeout:g} s; open a new "
                "Dojo (with a larger hard_timeout) to go on"
            )
        return (left, True) if left <= limit else (limit, False)

    def _crashed(self, reason: str, oom: bool = False) -> NoReturn:
        self.is_crashed = True
        self._crash = reason
        raise DojoCrashError(f"the Lean process died: {reason}", out_of_memory=oom) from None

    def run_cmd(self, state: CommandState, command: str) -> CommandResult:
        """v1's command mode, which is not supported (see ``Dojo``'s constructor)."""
        raise InvalidStateError(
            "command mode is not supported by lean_dojo_v2.v1; use PantographEnv.check_source "
            "(docs/interaction.md)"
        )


def check_proof(thm: Theorem, proof: str) -> bool:
    """Whether ``proof`` (tactic text, with or without a leading ``by``) proves ``thm``: Lean's
    verdict with Pantograph, else a replay of recorded tactics (which accepts only a recorded
    path; see the replay notice)."""
    if not isinstance(thm, Theorem):
        raise V1ArgumentError(f"check_proof takes a Theorem, not {type(thm).__name__}")
    if not isinstance(proof, str):
        raise V1ArgumentError(f"check_proof takes the proof as a str, not {type(proof).__name__}")
    from .backend import open_env

    opened = open_env(thm, 600.0, ())
    try:
        target = opened.target
        if isinstance(target, str):
            raise DojoInitError(
                f"cannot check a proof of {thm.full_name}: it is not declared by name in "
                f"{thm.file_path}"
            )
        try:
            return bool(opened.env.verify(target, proof).ok)
        except EnvCrashedError as exc:
            raise DojoCrashError(f"the Lean process died: {_crash_message(exc)[0]}") from None
    finally:
        opened.env.close()


__all__ = [
    "CommandResult",
    "CommandState",
    "Dojo",
    "DojoCrashError",
    "DojoHardTimeoutError",
    "DojoInitError",
    "DojoTacticTimeoutError",
    "IncompleteSolve1",
    "LeanError",
    "LeanGitRepo",
    "Pos",
    "ProofFinished",
    "ProofGivenUp",
    "State",
    "TacticError",
    "TacticResult",
    "TacticState",
    "Theorem",
    "TimeoutError",
    "check_proof",
]
