"""``AsyncPantographEnv`` / ``PantographEnv``: the :class:`ProofEnv` contract over a Pantograph REPL.

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

``PantographEnv`` (blocking) runs the async core on a private event loop in a daemon thread, so it
also works where an event loop is already running (Jupyter).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import queue
import re
import signal
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ...data.lean_lexer import (
    declaration_context,
    find_top_level_assign,
    header_end,
    index_of,
    proof_span,
    tactic_block,
)
from ...data.model import Theorem
from ...data.sorry import file_has_sorry
from ..base import AsyncProofEnv, ProofEnv, check_tactic_call, check_text, check_timeout
from ..types import (
    EnvClosedError,
    EnvCrashed,
    EnvCrashedError,
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
from .client import AsyncPantographClient
from .config import PantographConfig
from .locate import module_name
from .process import ReplTimeoutError
from .protocol import GoalInfo, Message, PantographError, canonical_goals, parse_goals

logger = logging.getLogger("lean_dojo_v2.interaction.pantograph")

BACKEND = "pantograph"
_ids = itertools.count(1)
T = TypeVar("T")


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
        return goals  # type: ignore[return-value]

    def __repr__(self) -> str:
        return (
            f"StateHandle(env_id={self.env_id!r}, generation={self.generation}, "
            f"state_id={self.state_id}, goal_names={self.goal_names!r}, route={self.label!r})"
        )


# ------------------------------------------------------------------------------ verify helpers


# The one Lean scanner lives in the data layer; the old private name stays for callers.
_find_top_level_assign = find_top_level_assign


def statement_from_source(text: str, start_line: int, start_column: int) -> str:
    """The declaration text from LeanDojo's 1-based ``(line, column)`` start up to (not
    including) the ``:=`` that begins its proof (see
    :func:`lean_dojo_v2.data.lean_lexer.find_top_level_assign`)."""
    try:
        start = index_of(text, start_line, start_column)
    except ValueError:
        num_lines = text.count("\n") + 1
        raise InteractionError(
            f"line {start_line} is outside the file ({num_lines} lines)"
        ) from None
    cut = find_top_level_assign(text, start)
    if cut < 0:
        raise InteractionError(
            f"no ':=' after line {start_line}, column {start_column}: the declaration there has "
            "no term/tactic proof to replace (pattern-matching or `where` definitions are not "
            "supported)"
        )
    return text[start:cut].rstrip()


def _normalize_statement(statement: str) -> str:
    """``theorem foo … : P`` text without a trailing ``:=``/``:= by``; a bare ``foo (x : α) : P``
    (miniF2F style) gets ``theorem`` in front."""
    s = statement.strip()
    cut = _find_top_level_assign(s)
    if cut >= 0:
        s = s[:cut].rstrip()
    if not _DECL_RE.search(s.split(":", 1)[0]):
        s = "theorem " + s
    return s


_DECL_RE = re.compile(r"(?<![\w.'])(theorem|lemma|example|def|abbrev|instance|opaque)(?![\w'])")
_NAMED_DECL_RE = re.compile(r"(?<![\w.'])(?:theorem|lemma)\s+(«[^»]*»|[^\s(\[{⦃⟨:]+)")
RENAME_SUFFIX = "_ldv2_check"


def _declared_name(statement: str) -> re.Match[str] | None:
    return _NAMED_DECL_RE.search(statement)


_OPTION_NAME_RE = re.compile(r"[A-Za-z_][\w.]*\Z")
_PLAIN_VALUE_RE = re.compile(r"(true|false|\d+)\Z")


def _option_items(options: Sequence[str] | Mapping[str, Any] | str | None) -> dict[str, Any]:
    """``{"maxHeartbeats": 400000}`` from a mapping or ``"key=value"`` items (``--key=value``,
    as :attr:`PantographConfig.core_options` takes them)."""
    if not options:
        return {}
    if isinstance(options, Mapping):
        return dict(options)
    items = [options] if isinstance(options, str) else list(options)
    out: dict[str, Any] = {}
    for item in items:
        text = str(item).strip().removeprefix("--")
        if not text:
            continue
        key, sep, value = text.partition("=")
        if not sep:
            raise InteractionError(f"core option {item!r} is not key=value (maxHeartbeats=400000)")
        out[key.strip()] = value.strip()
    return out


def set_option_prefix(options: Sequence[str] | Mapping[str, Any] | str | None) -> str:
    """``set_option k v in`` lines, one per core option, to put before a declaration: the REPL's
    ``frontend.process`` elaborates with empty options (``Frontend.createContextStateFromFile …
    {}``), so options given at launch do not reach checked text otherwise. Values: ``true``/
    ``false``, numbers, anything else as a Lean string."""
    lines = []
    for key, value in _option_items(options).items():
        if not _OPTION_NAME_RE.match(key):
            raise InteractionError(f"{key!r} is not a Lean option name (e.g. maxHeartbeats)")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        else:
            text = str(value)
            if not _PLAIN_VALUE_RE.match(text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines.append(f"set_option {key} {text} in\n")
    return "".join(lines)


def proof_file(
    statement: str,
    proof: str,
    full_name: str | None = None,
    rename: bool = False,
    *,
    options: Sequence[str] | Mapping[str, Any] | None = None,
) -> str:
    """The file that checks ``proof`` of ``statement``: ``statement := by`` and the proof
    indented under it (used when no file context is at hand; see :func:`file_check_text` and
    :func:`context_check_text` for the routes that keep it).

    With ``full_name`` ``A.B.c`` and a statement that declares ``c``, the declaration is put in
    ``namespace A.B`` (as in its source file, so names resolve alike). ``rename`` appends
    ``_ldv2_check`` to the declared name: a theorem that is already in the REPL's environment
    (its module is imported) cannot be declared again under its own name. ``options`` (core
    options) become ``set_option … in`` before the declaration.
    """
    decl = _normalize_statement(statement)
    namespace = None
    m = _declared_name(decl)
    if m is not None:
        name = m.group(1)
        if full_name and not name.startswith("_root_.") and full_name.endswith("." + name):
            namespace = full_name[: -len(name) - 1]
        if rename:
            decl = _renamed(decl, m)
    text = f"{set_option_prefix(options)}{decl} := {tactic_block(proof)}\n"
    if namespace:
        text = f"namespace {namespace}\n\n{text}\nend {namespace}\n"
    return text


def _renamed(decl: str, m: re.Match[str]) -> str:
    name = m.group(1)
    new = name[:-1] + RENAME_SUFFIX + "»" if name.endswith("»") else name + RENAME_SUFFIX
    return decl[: m.start(1)] + new + decl[m.end(1) :]


@dataclass(frozen=True)
class CheckedText:
    """Text for ``frontend.process`` that checks one proof. ``route``: ``"file"`` (the theorem's
    file up to the theorem, the proof in place), ``"context"`` (the context commands in effect
    at the theorem, then the theorem), ``"statement"`` (the statement alone) or ``"text"``
    (text as given). ``decl_start``:
    where the checked declaration (with its ``set_option … in`` lines) begins; messages of
    commands before it (the context) are reported but do not decide the verdict."""

    text: str
    route: str
    decl_start: int = 0

    @property
    def decl_start_byte(self) -> int:
        """``decl_start`` in UTF-8 bytes (``frontend.process`` unit boundaries are bytes)."""
        return len(self.text[: self.decl_start].encode("utf-8"))


_AFTER_PROOF_RE = re.compile(r"\s*(where|termination_by|decreasing_by)(?![\w'])")


def _blank(text: str) -> str:
    """``text`` with every character but line breaks turned into a space (lines and columns of
    what follows are kept)."""
    return re.sub(r"[^\n]", " ", text)


def _declaration(source: str, start: int) -> tuple[Any, tuple[int, int]]:
    """The lexer's context of the declaration at ``start`` and its proof span, or an
    :class:`InteractionError` saying why the proof cannot be put in place."""
    try:
        ctx = declaration_context(source, start)
    except ValueError:
        ctx = None
    span = proof_span(source, start) if ctx is not None else None
    if ctx is None or span is None:
        line = source.count("\n", 0, start) + 1
        raise InteractionError(
            f"no declaration with a ':=' proof at line {line}: the theorem's start does not "
            "point at a declaration with a term/tactic proof to replace (pattern-matching or "
            "`where` definitions are not supported); check Theorem.start and the file"
        )
    return ctx, span


def file_check_text(
    source: str,
    start: int,
    proof: str,
    options: Sequence[str] | Mapping[str, Any] | None = None,
) -> CheckedText:
    """The theorem's file ``source`` with ``proof`` in place of the proof of the declaration at
    index ``start`` (:func:`lean_dojo_v2.data.lean_lexer.proof_span`), every other byte of the
    text before it unchanged, except the header (``import`` lines) turned into blanks: the
    REPL has imported its modules already and ``frontend.process`` without ``readHeader``
    reads an ``import`` as a misplaced command. The text ends with the declaration (with its
    ``where``/``termination_by`` part; with its whole ``mutual`` block): later commands cannot
    change it. ``options`` go in as ``set_option … in`` right before its command."""
    ctx, (begin, end) = _declaration(source, start)
    command = ctx.command
    if ctx.mutual is not None:
        stop = len(source) if ctx.mutual[1] < 0 else ctx.mutual[1]
        cut = ctx.mutual[0]
    else:
        stop, cut = end, command.start
        if _AFTER_PROOF_RE.match(source, end, command.end):
            stop = command.end
    head = header_end(source)
    indent = " " * (command.start - source.rfind("\n", 0, command.start) - 1 + 2)
    prefix = _blank(source[:head]) + source[head:cut]
    decl = source[cut:begin] + tactic_block(proof, indent) + source[end:stop]
    set_options = set_option_prefix(options)
    return CheckedText(prefix + set_options + decl + "\n", "file", len(prefix))


def context_check_text(
    source: str,
    start: int,
    proof: str,
    options: Sequence[str] | Mapping[str, Any] | None = None,
    *,
    rename: bool = False,
) -> CheckedText:
    """The declaration at index ``start`` of ``source`` with ``proof``, after every context
    command still in effect there (``namespace``, ``section``, ``open``, ``variable``,
    ``universe``, ``set_option``, ``local`` notation, ``attribute [local …]``… found by
    :func:`lean_dojo_v2.data.lean_lexer.declaration_context`), for a REPL that has imported
    the theorem's own module (the file's declarations are in its environment already). The
    declaration keeps its ``open … in``/``set_option … in`` prefixes; its doc comment,
    attributes and modifiers are left out (an attribute such as ``@[to_additive foo]`` would
    declare ``foo`` again). ``rename`` declares it as ``<name>_ldv2_check``."""
    ctx, (begin, _end) = _declaration(source, start)
    if ctx.mutual is not None:
        raise InteractionError(
            "the theorem lies in a `mutual` block, which cannot be checked apart from its "
            "module: give the REPL the file's imports instead of its own module, so the whole "
            "file is checked"
        )
    command = ctx.command
    cut = find_top_level_assign(source, command.keyword_start)
    decl = source[command.keyword_start : cut].rstrip()
    m = _declared_name(decl)
    if rename and m is not None:
        decl = _renamed(decl, m)
    context = "".join(source[c.start : c.end] + "\n\n" for c in ctx.context)
    prefixes = "".join(source[a:b] + "\n" for a, b in command.prefixes)
    text = f"{set_option_prefix(options)}{prefixes}{decl} := {tactic_block(proof)}\n"
    return CheckedText(context + text, "context", len(context))


@dataclass(frozen=True)
class TheoremSource:
    """What there is to build a theorem's checked text from: its file (``source``, with the
    index ``start`` of its declaration) and/or its statement (``theorem_statement``).

    :meth:`text` is the one builder of "the theorem with its context" that ``verify`` (with the
    proof) and ``start`` (with ``sorry``, whose goal is LeanDojo's first state) both use."""

    full_name: str
    source: str | None = None
    start: int = 0
    statement: str | None = None

    def routes(
        self, declared: bool, *, rename: bool = False, statement_last: bool = False
    ) -> list[tuple[str, bool]]:
        """``(route, rename)`` to try in order. With the file: when the theorem is in the
        REPL's environment (``declared``: its module is imported), the context commands and
        the theorem renamed; otherwise the file up to the theorem, then the context commands
        (for a REPL that has the file's other declarations after all). Without it: the
        statement, then renamed. ``rename`` renames from the first try on where a route can;
        ``statement_last`` adds the statement route after the file routes."""
        plan: list[tuple[str, bool]] = []
        if self.source is not None:
            if declared:
                plan.append(("context", True))
            else:
                plan += [("file", False), ("context", rename), ("context", True)]
        if self.statement is not None and (self.source is None or statement_last):
            plan += [("statement", rename), ("statement", True)]
        return list(dict.fromkeys(plan))

    def text(
        self,
        route: str,
        proof: str,
        *,
        rename: bool = False,
        options: Sequence[str] | Mapping[str, Any] | None = None,
    ) -> CheckedText:
        """The text that checks ``proof`` of the theorem by ``route``: ``"file"``
        (:func:`file_check_text`), ``"context"`` (:func:`context_check_text`) or
        ``"statement"`` (:func:`proof_file`: the statement alone in its namespace)."""
        if route == "statement":
            if self.statement is None:
                raise InteractionError(f"{self.full_name} has no statement to check")
            text = proof_file(self.statement, proof, self.full_name, rename, options=options)
            return CheckedText(text, "statement")
        if self.source is None:
            raise InteractionError(f"{self.full_name} has no file to check it in")
        if route == "file":
            return file_check_text(self.source, self.start, proof, options)
        if route == "context":
            return context_check_text(self.source, self.start, proof, options, rename=rename)
        raise ValueError(f"unknown route {route!r} (file, context or statement)")


# ---------------------------------------------------------------------------------- async env


class AsyncPantographEnv(AsyncProofEnv):
    """:class:`AsyncProofEnv` over one Pantograph REPL (see the module docstring)."""

    backend = BACKEND

    def __init__(
        self,
        config: PantographConfig | None = None,
        *,
        env_id: str | None = None,
        **overrides: Any,
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

    def _make_state(
        self,
        state_id: int,
        goals: Sequence[GoalInfo | dict[str, Any]],
        theorem: Any,
        route: str = "tactic",
        source_route: str | None = None,
    ) -> ProofState:
        client = self.client
        names = tuple(g["name"] if type(g) is dict else g.name for g in goals)  # type: ignore[index,union-attr]
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
        declared = where.source is not None and await self._declared(name)
        options = _option_items(self.config.core_options)
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
        legacy = False
        try:
            targets = await self.client.frontend_distil(text, timeout=self.config.verify_timeout)
        except PantographError as exc:
            if not (exc.kind == "command" and "Unknown command" in exc.desc):
                raise
            legacy = True
        if legacy:
            units = await self.client.frontend_process(
                text, sorrys=True, timeout=self.config.verify_timeout
            )
            byte = checked.decl_start_byte
            found = [
                (u.goal_state_id, u.goals, u.boundary[1] > byte or not first)
                for u in units
                if u.goal_state_id is not None
            ]
        else:
            before = 0
            if first and file_has_sorry(text[:first]):
                earlier = await self.client.frontend_distil(
                    text[:first], timeout=self.config.verify_timeout
                )
                before = len(earlier)
                await self._free([t.state_id for t in earlier])
            found = [(t.state_id, t.goals, k >= before) for k, t in enumerate(targets)]
        ours = [(sid, goals) for sid, goals, own in found if own]
        spare = [sid for sid, _, own in found if not own] + [sid for sid, _ in ours[1:]]
        await self._free(spare)
        if not ours:
            return None
        sid, goals = ours[0]
        return self._make_state(sid, goals, theorem, "source", checked.route)

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
        try:
            targets = await self.client.frontend_distil(
                file_text, binder_name=binder_name, timeout=self.config.verify_timeout
            )
            return [
                self._make_state(t.state_id, t.goals, theorem, "source", "text") for t in targets
            ]
        except PantographError as exc:
            if not (exc.kind == "command" and "Unknown command" in exc.desc):
                raise
        units = await self.client.frontend_process(
            file_text, sorrys=True, timeout=self.config.verify_timeout
        )
        return [
            self._make_state(u.goal_state_id, u.goals, theorem, "source", "text")
            for u in units
            if u.goal_state_id is not None
        ]

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
        self, state: ProofState, timeout: float | None = None, **fields: Any
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
        self, handle: StateHandle, out: Any, theorem: Any, limit: float | None
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
    def statement_of(self, theorem: Theorem) -> str:
        """The theorem's statement: ``theorem_statement`` if present, else read from
        ``project_dir / file_path`` at ``theorem.start`` up to the proof's ``:=``."""
        if theorem.theorem_statement:
            return theorem.theorem_statement
        project = self.config.project_path
        if project is None:
            raise InteractionError(
                f"cannot verify {theorem.full_name}: it has no theorem_statement and no "
                "PantographConfig.project_dir to read its file from"
            )
        path = Path(project) / theorem.file_path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InteractionError(
                f"cannot verify {theorem.full_name}: reading its statement from {path} failed: "
                f"{exc}"
            ) from exc
        return statement_from_source(text, theorem.start.line_nb, theorem.start.column_nb)

    def theorem_source(self, theorem: Theorem, purpose: str = "verify") -> TheoremSource:
        """What :meth:`verify` and :meth:`start` build the theorem's text from: its file under
        ``project_dir`` (``file_path``) when there is one to read, else its
        ``theorem_statement``; an :class:`InteractionError` says why there is neither (or why
        the file does not fit the theorem). ``purpose`` names the caller in messages."""
        name = theorem.full_name
        statement = theorem.theorem_statement or None
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
        opts = {**_option_items(self.config.core_options), **_option_items(options)}
        where = self.theorem_source(theorem, "verify")
        declared = where.source is not None and await self._declared(theorem.full_name)
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
            verdict = await self._check_text(checked, timeout)
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

    async def _check_text(self, checked: CheckedText, timeout: float | None) -> Verdict:
        """``frontend.process`` of ``checked.text``: ok when no command from
        ``checked.decl_start`` on has an error or a ``declaration uses 'sorry'``."""
        limit = timeout if timeout is not None else self.config.verify_timeout
        try:
            units = await self.client.frontend_process(
                checked.text,
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
        judged = [m for u in units if u.boundary[1] > first or not first for m in u.messages]
        bad = [m for m in judged if m.is_error or m.is_sorry_warning]
        return Verdict(not bad, BACKEND, "lean", tuple(str(m) for m in messages))


def _already_declared(verdict: Verdict) -> bool:
    return any("has already been declared" in m for m in verdict.messages)


# ----------------------------------------------------------------------------- sync wrapper


class _LoopThread:
    """A private event loop running in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()
        # Drain what is left (cancelled tasks) before closing.
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for it (a SimpleQueue hand-off: cheaper than
        ``run_coroutine_threadsafe``). An interrupt while waiting cancels the coroutine."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("blocking PantographEnv call from inside its own event loop")
        loop = self.loop
        done: queue.SimpleQueue[asyncio.Task[T]] = queue.SimpleQueue()
        holder: list[asyncio.Task[T]] = []

        def start() -> None:
            task = loop.create_task(coro)
            holder.append(task)
            task.add_done_callback(done.put)

        if loop.is_closed() or not self.thread.is_alive():
            coro.close()
            raise EnvClosedError("this environment's event loop has stopped; create a new one")
        loop.call_soon_threadsafe(start)
        try:
            while True:
                try:
                    task = done.get(timeout=1.0)
                    break
                except queue.Empty:
                    # Never wait on a loop that is gone (it would be forever).
                    if not self.thread.is_alive():
                        raise EnvClosedError(
                            "this environment's event loop stopped during the call; create a "
                            "new one"
                        ) from None
        except BaseException:
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: holder and holder[0].cancel())
            raise
        return task.result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(10)


class PantographEnv(ProofEnv):
    """Blocking :class:`ProofEnv` over a Pantograph REPL; the async core runs on a private event
    loop in a background thread (safe inside Jupyter's running loop). ``close()`` stops both."""

    backend = BACKEND

    def __init__(self, config: PantographConfig | None = None, **overrides: Any) -> None:
        self._thread = _LoopThread("pantograph-env")
        self.aenv = AsyncPantographEnv(config, **overrides)
        self.config = self.aenv.config
        self._closed = False

    @property
    def client(self) -> AsyncPantographClient:
        """The async client (call its coroutines through :meth:`run_async`)."""
        return self.aenv.client

    def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of this environment (or its client) on the private loop."""
        if self._closed:
            coro.close()
            raise EnvClosedError("this PantographEnv is closed; create a new one")
        return self._thread.run(coro)

    def open(self) -> PantographEnv:
        self.run_async(self.aenv.open())
        return self

    def __enter__(self) -> PantographEnv:
        return self.open()

    def start(self, theorem: Theorem | str) -> ProofState:
        return self.run_async(self.aenv.start(theorem))

    def start_expr(self, expr: str, levels: list[str] | None = None) -> ProofState:
        return self.run_async(self.aenv.start_expr(expr, levels))

    def start_from_source(
        self, file_text: str, *, binder_name: str | None = None
    ) -> list[ProofState]:
        return self.run_async(self.aenv.start_from_source(file_text, binder_name=binder_name))

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return self.run_async(self.aenv.run_tactic(state, tactic, timeout))

    def run_tactic_raw(
        self, state: ProofState, timeout: float | None = None, **fields: Any
    ) -> TacticResult:
        return self.run_async(self.aenv.run_tactic_raw(state, timeout, **fields))

    def release(self, state: ProofState | ProofFinished) -> None:
        self.run_async(self.aenv.release(state))

    def goal_root(self, state: ProofState | ProofFinished) -> str | None:
        return self.run_async(self.aenv.goal_root(state))

    def verify(
        self,
        theorem: Theorem,
        proof: str,
        timeout: float | None = None,
        *,
        options: Sequence[str] | Mapping[str, Any] | None = None,
    ) -> Verdict:
        return self.run_async(self.aenv.verify(theorem, proof, timeout, options=options))

    def check_source(self, file_text: str, timeout: float | None = None) -> Verdict:
        return self.run_async(self.aenv.check_source(file_text, timeout))

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._thread.run(self.aenv.close())
        except Exception as exc:  # noqa: BLE001 - closing must not raise
            logger.warning("closing the Pantograph REPL failed: %s", exc)
        finally:
            self._closed = True
            self._thread.stop()

    def __del__(self) -> None:
        # A finaliser may run on any thread at any time, even after the loop thread is gone: it
        # must never wait. Kill the REPL's process group outright and let the daemon thread go.
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            pid = self.aenv.client.pid
            if pid is not None:
                os.killpg(pid, signal.SIGKILL)
        except Exception:  # noqa: BLE001 - nothing may escape a finaliser
            pass
        try:
            loop = self._thread.loop
            if loop.is_running():
                loop.call_soon_threadsafe(loop.stop)
        except Exception:  # noqa: BLE001
            pass


__all__ = [
    "AsyncPantographEnv",
    "CheckedText",
    "EnvCrashed",  # deprecated alias of EnvCrashedError
    "EnvCrashedError",
    "PantographEnv",
    "StateHandle",
    "TheoremSource",
    "context_check_text",
    "file_check_text",
    "proof_file",
    "set_option_prefix",
    "statement_from_source",
]
