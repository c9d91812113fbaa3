"""Layer 1 (interaction): ``AsyncPantographEnv``, the :class:`AsyncProofEnv` contract over one
Pantograph REPL.

- ``start(theorem)`` → the theorem with ``by sorry`` in its file context through
  ``frontend.distil`` (or ``frontend.process`` with ``sorrys``): the goal at the ``sorry``;
  ``goal.start {"copyFrom": full_name}`` as the labelled fallback;
- ``run_tactic`` → ``goal.tactic``: goals left → :class:`ProofState`, none → :class:`ProofFinished`,
  ``hasSorry``/``hasUnsafe`` → the state is deleted and ``TacticError(kind="sorry")``, a failure or
  parse error → ``TacticError(kind="tactic"|"parse")`` with Lean's text, the REPL's ``interrupt``
  → :class:`TacticTimeout` (process kept), the client watchdog → :class:`TacticTimeout` (process
  killed and relaunched, earlier states stale), a crash → :class:`EnvCrashedError`;
- ``verify`` → ``frontend.process`` of the proof in its file context: the theorem's file up to
  the theorem with the proof in place, or (its module imported) the declaration after the
  context commands still in effect at it, or (no file) the statement; core options go in as
  ``set_option … in`` (see :meth:`AsyncPantographEnv.verify`). ``start`` elaborates the same
  text with ``by sorry`` (:class:`TheoremSource` builds it for both).

Goal text is rendered as Lean's ``ppGoal`` prints it and made canonical, so it compares equal to
traced LeanDojo states. A state's ``handle`` is a :class:`StateHandle` naming the environment,
the process generation and the REPL state id; a state from before a restart (or from another
environment) raises :class:`StaleStateError`. Dropped states are freed with batched
``goal.delete`` (a weakref finalizer on the handle queues them).

The Lean text it elaborates is built in :mod:`.lean_text`; the blocking ``PantographEnv`` over it
lives in :mod:`.blocking`.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Unpack

from ...data.lean_lexer import index_of
from ...data.model import Theorem
from ...data.sorry import file_has_sorry
from ..base import AsyncProofEnv, check_tactic_call, check_text, check_timeout
from ..messages import LeanMessage, ProofSpan
from ..standalone import declared_name, standalone_header, standalone_source
from ..types import (
    InteractionError,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticResult,
    TacticTimeout,
    UnknownTheoremError,
    Verdict,
)
from .client import AsyncPantographClient, GoalTacticFields
from .config import PantographConfig
from .lean_text import CheckedText, TheoremSource, option_items, parse_axioms
from .locate import module_name
from .process import ReplTimeoutError
from .protocol import (
    CompilationUnit,
    GoalInfo,
    Message,
    PantographError,
    Position,
    TacticOutcome,
    canonical_goals,
    parse_goals,
)

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")

BACKEND = "pantograph"
_ids = itertools.count(1)


class StateHandle:
    """What a :class:`ProofState` from Pantograph carries: which environment made it
    (``env_id``), in which process generation, its REPL ``state_id`` and the goals' mvar names
    (``goal_names``; ``goals`` gives the structured goals). ``route`` says how a first state was
    made: ``"source"`` (the theorem elaborated with ``by sorry``: LeanDojo's first state, binders
    introduced), ``"copyFrom"`` (the fallback: one goal whose target is the constant's whole
    type), ``"expr"``, or ``"tactic"`` for a state a tactic made. For ``"source"``,
    ``source_route`` says which text was elaborated: ``"file"`` (the theorem's file up to it),
    ``"context"`` (the context commands in effect at it, then the theorem), ``"statement"`` (the
    statement alone: no ``open``/``variable`` of its file) or ``"text"`` (text given to
    ``start_from_source``); None otherwise. :attr:`label` joins both (``"source/file"``). Treat
    it as immutable; while it is alive the REPL keeps the state, once it is garbage-collected
    the state is freed."""

    __slots__ = (
        "env_id",
        "generation",
        "state_id",
        "goal_names",
        "route",
        "source_route",
        "_goals",
        "__weakref__",
    )

    def __init__(
        self,
        env_id: str,
        generation: int,
        state_id: int,
        goal_names: tuple[str, ...],
        goals: Sequence[GoalInfo | dict[str, Any]] = (),
        route: str = "tactic",
        source_route: str | None = None,
    ) -> None:
        self.env_id = env_id
        self.generation = generation
        self.state_id = state_id
        self.goal_names = goal_names
        self.route = route
        self.source_route = source_route
        self._goals = goals

    @property
    def label(self) -> str:
        """``route``, with ``source_route`` after a slash where there is one (``source/file``)."""
        return f"{self.route}/{self.source_route}" if self.source_route else self.route

    @property
    def goals(self) -> tuple[GoalInfo, ...]:
        goals = self._goals
        if not isinstance(goals, tuple) or (goals and not isinstance(goals[0], GoalInfo)):
            goals = self._goals = parse_goals(goals)
        return goals

    def __repr__(self) -> str:
        return (
            f"StateHandle(env_id={self.env_id!r}, generation={self.generation}, "
            f"state_id={self.state_id}, goal_names={self.goal_names!r}, route={self.label!r})"
        )


class _SorryGoal(NamedTuple):
    """A ``sorry`` of elaborated text, made a REPL state. ``end``: the UTF-8 byte at which the
    command holding it ends (``frontend.process``); None from ``frontend.distil``, which gives
    no positions."""

    state_id: int
    goals: tuple[GoalInfo, ...]
    end: int | None


class AsyncPantographEnv(AsyncProofEnv):
    """:class:`AsyncProofEnv` over one Pantograph REPL (see the module docstring)."""

    backend = BACKEND
    # A state is a REPL state id of this one process: no other environment can continue it.
    shares_states = False

    def __init__(
        self,
        config: PantographConfig | None = None,
        *,
        env_id: str | None = None,
        **overrides: object,
    ) -> None:
        self.client = AsyncPantographClient(config, **overrides)
        self.config = self.client.config
        self.env_id = env_id or f"pantograph-{os.getpid()}-{next(_ids)}"

    # ------------------------------------------------------------------------- plumbing
    async def open(self) -> AsyncPantographEnv:
        """Launch the REPL now (otherwise the first call does)."""
        await self.client.start()
        return self

    async def __aenter__(self) -> AsyncPantographEnv:
        return await self.open()

    async def close(self) -> None:
        await self.client.close()

    @property
    def generation(self) -> int:
        return self.client.generation

    @property
    def restarts(self) -> int:  # type: ignore[override]  # the contract's attribute, read-only here
        """How often the client relaunched the REPL (crash, watchdog, memory guard) so far."""
        return self.client.restarts

    def _make_state(
        self,
        state_id: int,
        goals: Sequence[GoalInfo | dict[str, Any]],
        theorem: Theorem | None,
        route: str = "tactic",
        source_route: str | None = None,
    ) -> ProofState:
        client = self.client
        names = tuple(g.name if isinstance(g, GoalInfo) else g["name"] for g in goals)
        handle = StateHandle(
            self.env_id, client.generation, state_id, names, goals, route, source_route
        )
        client.track(handle, state_id)
        return ProofState(canonical_goals(goals), BACKEND, handle=handle, theorem=theorem)

    def _finished(self, state_id: int | None, messages: tuple[Message, ...]) -> ProofFinished:
        handle = None
        if state_id is not None:
            client = self.client
            handle = StateHandle(self.env_id, client.generation, state_id, ())
            client.track(handle, state_id)
        return ProofFinished(BACKEND, handle, tuple(m.data for m in messages))

    def _check(self, state: ProofState | ProofFinished | StateHandle) -> StateHandle:
        handle = state if isinstance(state, StateHandle) else getattr(state, "handle", None)
        if not isinstance(handle, StateHandle):
            raise StaleStateError(
                f"this state was not made by a Pantograph environment (handle {handle!r})"
            )
        if handle.env_id != self.env_id:
            raise StaleStateError(
                f"this state belongs to environment {handle.env_id}, not {self.env_id}"
            )
        if handle.generation != self.client.generation:
            raise StaleStateError(
                f"this state (REPL state {handle.state_id}) is from process generation "
                f"{handle.generation}; the REPL was restarted since (now generation "
                f"{self.client.generation}) and its states are gone"
            )
        return handle

    def owns(self, state: ProofState | ProofFinished) -> bool:
        handle = getattr(state, "handle", None)
        return isinstance(handle, StateHandle) and handle.env_id == self.env_id

    # ---------------------------------------------------------------------------- start
    async def start(self, theorem: Theorem | str, *, recycle: bool = True) -> ProofState:
        """LeanDojo's first state of ``theorem`` (a :class:`Theorem` or a full name): inside
        ``by``, the binders before the colon introduced as hypotheses.

        Route ``"source"``: the theorem with ``:= by sorry`` in its context, built as
        :meth:`verify` builds its text (:class:`TheoremSource`): with its file under
        ``project_dir``, the file up to the theorem (``source_route`` ``"file"``; theorem not in
        the REPL's environment) or the context commands in effect at it and the theorem under a
        fresh name (``"context"``; its module imported), so the file's ``open``, ``namespace``,
        ``variable``, ``universe`` and ``set_option`` apply; without a file, the statement
        (``theorem_statement``) in its namespace (``"statement"``). The text goes through
        ``frontend.distil`` (newer servers) or ``frontend.process`` with ``sorrys`` (≤ 0.3.4),
        and the goal at the theorem's ``sorry`` is the first state. Route ``"copyFrom"``
        (fallback, when none of these gives a state): ``goal.start {"copyFrom"}``, whose single
        goal's target is the whole type (``⊢ ∀ (a b : ℕ), …``, no hypotheses), so LeanDojo's
        first tactic may not apply. ``state.handle.route``/``source_route`` say which was used.
        With ``recycle`` the memory guard may restart the REPL first (states of other theorems
        become stale)."""
        if recycle:
            await self.client.recycle_if_needed()
        thm = theorem if isinstance(theorem, Theorem) else None
        if thm is not None:
            state = await self._start_in_context(thm)
            if state is not None:
                return state
        name = theorem if isinstance(theorem, str) else theorem.full_name
        try:
            started, printed = await self.client.goal_start_print(
                copy_from=name, timeout=self.config.tactic_timeout
            )
        except PantographError as exc:
            if exc.is_unknown_symbol or exc.kind == "index":
                raise UnknownTheoremError(self._unknown_message(theorem, exc)) from exc
            raise
        return self._make_state(started.state_id, printed.goals, thm, "copyFrom")

    async def _start_in_context(self, theorem: Theorem) -> ProofState | None:
        """The source route of :meth:`start`: the first route whose text gives the theorem's
        ``sorry`` a state, or None (logged) when none does."""
        name = theorem.full_name
        try:
            where = self.theorem_source(theorem, "start")
        except InteractionError as exc:
            if not theorem.theorem_statement:
                logger.debug("start(%s): no statement or file (%s); using copyFrom", name, exc)
                return None
            logger.info("start(%s): %s; starting from its statement alone", name, exc)
            where = TheoremSource(name, statement=theorem.theorem_statement)
        declared = where.source is not None and await self._declared(where.full_name)
        options = option_items(self.config.core_options)
        for route, rename in where.routes(declared, rename=True, statement_last=True):
            try:
                checked = where.text(route, "sorry", rename=rename, options=options)
                state = await self._state_of_declaration(checked, theorem)
            except (InteractionError, PantographError) as exc:
                logger.info("start(%s): the %s route failed (%s)", name, route, exc)
                continue
            if state is not None:
                return state
            logger.info("start(%s): the %s route gave no state for its sorry", name, route)
        logger.info("start(%s): no source route gave a state; falling back to copyFrom", name)
        return None

    async def _state_of_declaration(
        self, checked: CheckedText, theorem: Theorem | None
    ) -> ProofState | None:
        """The state of the first ``sorry`` of the declaration that ``checked`` checks (at
        ``checked.decl_start``). States of ``sorry``s before it (earlier declarations of the
        file) and after it are freed. ``frontend.distil`` gives no positions: when the text
        before the declaration has a ``sorry``, that part alone is distilled first to count its
        targets (elaborating it twice; files without ``sorry`` pay nothing)."""
        text, first = checked.text, checked.decl_start
        sorrys, positioned = await self._sorry_goals(text)
        if positioned:
            byte = checked.decl_start_byte
            own = [not first or (s.end is not None and s.end > byte) for s in sorrys]
        else:
            before = 0
            if first and file_has_sorry(text[:first]):
                earlier = await self.client.frontend_distil(
                    text[:first], timeout=self.config.verify_timeout
                )
                before = len(earlier)
                await self._free([t.state_id for t in earlier])
            own = [k >= before for k in range(len(sorrys))]
        ours = [s for s, mine in zip(sorrys, own, strict=True) if mine]
        spare = [s.state_id for s, mine in zip(sorrys, own, strict=True) if not mine]
        await self._free(spare + [s.state_id for s in ours[1:]])
        if not ours:
            return None
        return self._make_state(ours[0].state_id, ours[0].goals, theorem, "source", checked.route)

    async def _sorry_goals(
        self, text: str, *, binder_name: str | None = None
    ) -> tuple[list[_SorryGoal], bool]:
        """One REPL state per ``sorry`` of ``text`` (its file context included), and whether
        they carry positions. ``frontend.distil`` where the server has it (no positions);
        servers up to v0.3.4 answer it "Unknown command", and there ``frontend.process`` with
        ``sorrys`` gives the states, each in the unit (with its byte boundary) it belongs to."""
        timeout = self.config.verify_timeout
        try:
            targets = await self.client.frontend_distil(
                text, binder_name=binder_name, timeout=timeout
            )
        except PantographError as exc:
            if not (exc.kind == "command" and "Unknown command" in exc.desc):
                raise
        else:
            return [_SorryGoal(t.state_id, t.goals, None) for t in targets], False
        units = await self.client.frontend_process(text, sorrys=True, timeout=timeout)
        found = [
            _SorryGoal(u.goal_state_id, u.goals, u.boundary[1])
            for u in units
            if u.goal_state_id is not None
        ]
        return found, True

    async def _free(self, state_ids: Sequence[int]) -> None:
        """``goal.delete`` of states never handed out (ignored when the REPL restarted)."""
        if state_ids:
            try:
                await self.client.goal_delete(list(state_ids), generation=self.generation)
            except (PantographError, StaleStateError):
                pass

    def _unknown_message(self, theorem: Theorem | str, exc: PantographError) -> str:
        name = theorem if isinstance(theorem, str) else theorem.full_name
        imports = ", ".join(self.config.imports) or "(none)"
        msg = (
            f"{name} is not in the Pantograph REPL's environment ({exc.desc}); imports: {imports}."
        )
        if isinstance(theorem, Theorem) and theorem.file_path:
            mod = module_name(theorem.file_path)
            msg += (
                f" It is defined in {theorem.file_path}: add the module {mod!r} to "
                "PantographConfig.imports (modules must be imported when the REPL starts)."
            )
        return msg

    async def start_expr(
        self, expr: str, levels: list[str] | None = None, *, recycle: bool = True
    ) -> ProofState:
        """Root goal of the type ``expr`` (``goal.start {"expr": ...}``)."""
        if recycle:
            await self.client.recycle_if_needed()
        started, printed = await self.client.goal_start_print(
            expr, levels=levels, timeout=self.config.tactic_timeout
        )
        return self._make_state(started.state_id, printed.goals, None, "expr")

    async def start_from_source(
        self,
        file_text: str,
        *,
        binder_name: str | None = None,
        recycle: bool = True,
        theorem: Theorem | None = None,
    ) -> list[ProofState]:
        """One state per ``sorry`` of ``file_text`` (its file context included), via
        ``frontend.distil`` (newer servers) or, where that command is unknown (≤ 0.3.4),
        ``frontend.process`` with ``sorrys``."""
        if recycle:
            await self.client.recycle_if_needed()
        sorrys, _ = await self._sorry_goals(file_text, binder_name=binder_name)
        return [self._make_state(s.state_id, s.goals, theorem, "source", "text") for s in sorrys]

    # ------------------------------------------------------------------------ tactics
    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        check_tactic_call(tactic, timeout)
        handle = self._check(state)
        limit = timeout if timeout is not None else self.config.tactic_timeout
        try:
            out = await self.client.goal_tactic(
                handle.state_id, tactic, timeout=limit, generation=handle.generation
            )
        except ReplTimeoutError as exc:
            return TacticTimeout(str(exc), BACKEND, timeout=limit)
        return await self._result(
            handle, out, state.theorem if isinstance(state, ProofState) else None, limit
        )

    async def run_tactic_raw(
        self, state: ProofState, timeout: float | None = None, **fields: Unpack[GoalTacticFields]
    ) -> TacticResult:
        """Like :meth:`run_tactic` with the other ``goal.tactic`` fields (``mode``, ``expr``,
        ``have``, ``let``, ``draft``, ``binder_name``, ``goal_id``, ``auto_resume``)."""
        check_timeout(timeout)
        for name, value in fields.items():
            if isinstance(value, str):
                check_text(value, name)
        handle = self._check(state)
        limit = timeout if timeout is not None else self.config.tactic_timeout
        try:
            out = await self.client.goal_tactic(
                handle.state_id, timeout=limit, generation=handle.generation, **fields
            )
        except ReplTimeoutError as exc:
            return TacticTimeout(str(exc), BACKEND, timeout=limit)
        return await self._result(handle, out, state.theorem, limit)

    async def _result(
        self, handle: StateHandle, out: TacticOutcome, theorem: Theorem | None, limit: float | None
    ) -> TacticResult:
        shape = out.shape
        if shape == "success":
            if out.has_sorry or out.has_unsafe:
                if out.next_state_id is not None:
                    try:
                        await self.client.goal_delete(
                            [out.next_state_id], generation=handle.generation
                        )
                    except (PantographError, StaleStateError):
                        pass
                what = "sorry" if out.has_sorry else "unsafe code"
                return TacticError(f"the tactic closed goals with {what}", BACKEND, "sorry")
            if not out.raw_goals:
                return self._finished(out.next_state_id, out.messages)
            if out.next_state_id is None:
                raise PantographError(
                    "protocol",
                    "the REPL answered goals without a nextStateId; use a Pantograph REPL this "
                    "client supports",
                    "goal.tactic",
                )
            return self._make_state(out.next_state_id, out.raw_goals, theorem)
        if shape == "parse":
            return TacticError(out.error_text(), BACKEND, "parse")
        if shape == "failure":
            return TacticError(out.error_text(), BACKEND, "tactic")
        # a protocol error object
        if out.interrupted:
            return TacticTimeout(
                f"the tactic ran longer than {limit:g} s (interrupted by the REPL)"
                if limit is not None
                else "the tactic was interrupted by the REPL",
                BACKEND,
                timeout=limit,
            )
        if out.error_kind == "index":
            raise StaleStateError(
                f"the REPL does not know state {handle.state_id} ({out.error_desc}); it was "
                "deleted or belongs to another REPL"
            )
        if out.error_kind in ("command", "arguments"):
            raise PantographError(out.error_kind or "", out.error_desc or "", "goal.tactic")
        return TacticError(out.error_text(), BACKEND, "tactic")

    async def release(self, state: ProofState | ProofFinished) -> None:
        """Free ``state`` in the REPL now (search calls this for states it drops; otherwise
        states are freed in batches once garbage-collected)."""
        handle = getattr(state, "handle", None)
        if (
            isinstance(handle, StateHandle)
            and handle.env_id == self.env_id
            and handle.generation == self.client.generation
        ):
            try:
                await self.client.goal_delete([handle.state_id], generation=handle.generation)
            except StaleStateError:
                pass  # restarted meanwhile: the state is gone anyway

    async def goal_root(self, state: ProofState | ProofFinished) -> str | None:
        """The proof term assembled so far (``goal.print {"rootExpr": true}``)."""
        handle = self._check(state)
        printed = await self.client.goal_print(
            handle.state_id, goals=False, root_expr=True, generation=handle.generation
        )
        return printed.root

    # ------------------------------------------------------------------------- verify

    def theorem_source(self, theorem: Theorem, purpose: str = "verify") -> TheoremSource:
        """What :meth:`verify` and :meth:`start` build the theorem's text from: its file under
        ``project_dir`` (``file_path``) when there is one to read, else its
        ``theorem_statement``; an :class:`InteractionError` says why there is neither (or why
        the file does not fit the theorem). ``purpose`` names the caller in messages."""
        name = theorem.full_name
        statement = theorem.theorem_statement or None
        header = standalone_header(theorem)
        if header is not None and statement is not None:
            # A benchmark's statement: no file, its header is its context.
            source, start = standalone_source(header, statement)
            return TheoremSource(declared_name(statement) or name, source, start, statement)
        project = self.config.project_path
        if project is None or not theorem.file_path:
            if statement is not None:
                return TheoremSource(name, statement=statement)
            raise InteractionError(
                f"cannot {purpose} {name}: it has no theorem_statement and no file to read it "
                "from (set PantographConfig.project_dir and Theorem.file_path)"
            )
        path = Path(project) / theorem.file_path
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            if statement is not None:
                logger.info(
                    "%s(%s): reading %s failed (%s); using the statement alone",
                    purpose,
                    name,
                    path,
                    exc,
                )
                return TheoremSource(name, statement=statement)
            raise InteractionError(
                f"cannot {purpose} {name}: reading its statement from {path} failed: {exc}"
            ) from exc
        try:
            start = index_of(source, theorem.start.line_nb, theorem.start.column_nb)
        except ValueError:
            raise InteractionError(
                f"cannot {purpose} {name}: its start (line {theorem.start.line_nb}) is outside "
                f"{theorem.file_path}; is project_dir at the traced commit?"
            ) from None
        return TheoremSource(name, source, start, statement)

    async def _declared(self, name: str) -> bool:
        """Whether ``name`` is in the REPL's environment (its module is imported)."""
        try:
            await self.client.env_inspect(name)
        except PantographError:
            return False
        return True

    async def verify(
        self,
        theorem: Theorem,
        proof: str,
        timeout: float | None = None,
        *,
        options: Sequence[str] | Mapping[str, Any] | None = None,
    ) -> Verdict:
        """Re-check ``proof`` (tactic text after ``by``) of ``theorem`` with Lean's frontend, in
        the theorem's file context.

        With the theorem's file at hand (``project_dir / file_path``): when the theorem is not in
        the REPL's environment, the file up to the theorem with the proof in place
        (:func:`file_check_text`); when it is (its module is imported, so the file's
        declarations exist already), the context commands still in effect at the theorem and
        the theorem under a fresh name (:func:`context_check_text`). Without a file: the
        statement (``theorem_statement``) in its namespace (:func:`proof_file`), under its own
        name, then renamed when Lean says it is already declared. The text is built by
        :meth:`TheoremSource.text` (:meth:`theorem_source`), as :meth:`start` builds its own.

        ``frontend.process`` elaborates with empty options, so the core options of
        ``PantographConfig.core_options`` and ``options`` (which win; e.g.
        ``{"maxHeartbeats": 400000}``) go into the text as ``set_option … in`` before the
        declaration. Only messages of the declaration decide the verdict; those of the context
        before it are reported with it."""
        opts = {**option_items(self.config.core_options), **option_items(options)}
        where = self.theorem_source(theorem, "verify")
        declared = where.source is not None and await self._declared(where.full_name)
        verdict: Verdict | None = None
        previous = ""
        for route, rename in where.routes(declared):
            if verdict is not None:
                logger.info(
                    "verify(%s): Lean says a declaration of the %s route exists already (its "
                    "module is imported); checking by the %s route%s",
                    theorem.full_name,
                    previous,
                    route,
                    " renamed" if rename else "",
                )
            checked = where.text(route, proof, rename=rename, options=opts)
            verdict = await self._check_text(checked, timeout, axioms=True)
            if not _already_declared(verdict):
                return verdict
            previous = route
        assert verdict is not None  # routes() is never empty: a source or a statement is there
        return verdict

    async def check_source(self, file_text: str, timeout: float | None = None) -> Verdict:
        """``frontend.process`` of ``file_text`` in the REPL's environment (no header, nothing
        kept): ok when Lean reports no error and no ``declaration uses 'sorry'``. The text is
        elaborated with empty options (put ``set_option … in`` into it, see
        :func:`set_option_prefix`)."""
        return await self._check_text(CheckedText(file_text, "text"), timeout)

    async def _check_text(
        self, checked: CheckedText, timeout: float | None, *, axioms: bool = False
    ) -> Verdict:
        """``frontend.process`` of ``checked.text``: ok when no command from
        ``checked.decl_start`` on has an error or a ``declaration uses 'sorry'``.

        ``axioms``: the text is followed by ``#print axioms`` of the checked declaration (when
        its name is known), whose answer fills ``Verdict.axioms``; that command's own messages
        never decide the verdict (an unresolvable name leaves the axioms unknown)."""
        limit = timeout if timeout is not None else self.config.verify_timeout
        query = checked.with_axioms_query() if axioms else None
        text, query_start = query if query is not None else (checked.text, None)
        try:
            units = await self.client.frontend_process(
                text,
                read_header=False,
                inherit_env=False,
                new_constants=False,
                timeout=limit,
            )
        except ReplTimeoutError as exc:
            return Verdict(False, BACKEND, "lean", (f"timeout: {exc}",))
        except PantographError as exc:
            if exc.is_frontend_interrupt:
                return Verdict(False, BACKEND, "lean", (f"timeout after {limit} s ({exc.desc})",))
            raise
        messages = [m for u in units for m in u.messages]
        if limit is not None and any(m.is_interrupt for m in messages):
            return Verdict(
                False,
                BACKEND,
                "lean",
                (f"timeout after {limit} s", *(str(m) for m in messages)),
            )
        first = checked.decl_start_byte

        def is_query(unit: CompilationUnit) -> bool:
            return query_start is not None and unit.boundary[0] >= query_start

        asked = [u for u in units if is_query(u)]
        checked_units = [u for u in units if not is_query(u)]
        judged = [
            m for u in checked_units if u.boundary[1] > first or not first for m in u.messages
        ]
        bad = [m for m in judged if m.is_error or m.is_sorry_warning]
        found = [a for u in asked for m in u.messages if (a := parse_axioms(m.data)) is not None]
        if query_start is not None and not found:
            logger.debug("no answer to #print axioms %s: %s", checked.name,
                         [str(m) for u in asked for m in u.messages])  # fmt: skip
        return Verdict(
            not bad,
            BACKEND,
            "lean",
            tuple(str(m) for u in checked_units for m in u.messages),
            axioms=found[0] if found else None,
            lean_messages=_placed(judged, checked.span),
        )


def _placed(messages: Sequence[Message], span: ProofSpan | None) -> tuple[LeanMessage, ...]:
    """Lean's messages about the checked declaration, placed in the proof (``span``; None: text
    given as it is, positions kept)."""
    where = span if span is not None else ProofSpan(1, 0, 1 << 30)

    def pos(p: Position | None) -> tuple[int, int] | None:
        return (p.line, p.column) if p is not None and (p.line or p.column) else None

    return tuple(where.message(m.severity, m.data, pos(m.pos), pos(m.end_pos)) for m in messages)


def _already_declared(verdict: Verdict) -> bool:
    return any("has already been declared" in m for m in verdict.messages)


__all__ = ["BACKEND", "AsyncPantographEnv", "StateHandle"]
