"""Typed objects of the Pantograph wire protocol, parsed from the REPL's JSON, and goal rendering.

Parsing is tolerant of the versions in the protocol notes: object key order never matters, ``?``
fields may be missing, messages may be plain strings (≤ 0.3.3) or structured (≥ 0.3.4), a goal may
say ``isConversion`` (≤ 0.3.2) instead of ``fragment``, a failed tactic may carry
``tacticErrors`` (≤ 0.3.0) instead of ``messages``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...data.goals import NO_GOALS, erase_case_macro_scopes, goal_texts
from ..types import InteractionError

_WS = re.compile(r"\s+")


class PantographError(InteractionError):
    """The REPL answered ``{"error": kind, "desc": ...}``.

    ``kind`` is advisory (it changed across versions: ``internal``/``core`` became ``io``,
    ``arguments`` became ``command``); ``desc`` is Lean's text.
    """

    def __init__(self, kind: str, desc: str, command: str = "", stderr_tail: str = "") -> None:
        self.kind = kind
        self.desc = desc
        self.command = command
        self.stderr_tail = stderr_tail
        where = f"{command}: " if command else ""
        super().__init__(f"{where}{kind} error: {desc}")

    @property
    def is_interrupt(self) -> bool:
        """The REPL's own ``timeout`` option fired (the process is still usable)."""
        return self.desc.strip() == "interrupt"

    @property
    def is_frontend_interrupt(self) -> bool:
        """A ``frontend.process`` stopped by the REPL's ``timeout`` option. The interrupt escapes
        Lean's command elaborator: newer Lean answers ``{"error": "io", "desc": "unexpected
        internal error: ..."}`` (Repl.lean's ``execute`` turns the ``IO.Error`` into an ``io``
        object), never a bare ``interrupt``."""
        desc = self.desc.strip()
        return self.is_interrupt or (
            self.kind == "io" and desc.startswith("unexpected internal error")
        )

    @property
    def is_bad_state(self) -> bool:
        return self.kind == "index" and ("state index" in self.desc or "goal index" in self.desc)

    @property
    def is_unknown_symbol(self) -> bool:
        return "Symbol not found" in self.desc or "Unknown constant" in self.desc


def _pp(expr: object) -> str | None:
    """An Expression object's ``pp`` text (a bare string is accepted too)."""
    if expr is None:
        return None
    if isinstance(expr, str):
        return expr
    if isinstance(expr, dict):
        pp = expr.get("pp")
        if pp is None and "sexp" in expr:
            return expr["sexp"]
        return pp
    return str(expr)


def _one_line(text: str) -> str:
    return _WS.sub(" ", text).strip() if ("\n" in text or "  " in text or "\t" in text) else text


class Variable(NamedTuple):
    """A hypothesis of a goal."""

    name: str
    user_name: str
    type: str | None
    value: str | None = None
    is_inaccessible: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Variable:
        return cls(
            d.get("name", ""),
            d.get("userName", ""),
            _pp(d.get("type")),
            _pp(d.get("value")),
            bool(d.get("isInaccessible", False)),
        )


class GoalInfo(NamedTuple):
    """One goal as the REPL sends it: mvar ``name``, case tag ``user_name``, ``fragment``
    (``tactic``/``conv``/``calc``), ``target`` and hypotheses ``vars``."""

    name: str
    target: str
    vars: tuple[Variable, ...] = ()
    user_name: str | None = None
    fragment: str = "tactic"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GoalInfo:
        fragment = d.get("fragment")
        if fragment is None:
            fragment = "conv" if d.get("isConversion") else "tactic"
        user = d.get("userName")
        if user == "[anonymous]" or user == "":
            user = None
        return cls(
            d.get("name", ""),
            _pp(d.get("target")) or "",
            tuple(Variable.from_json(v) for v in d.get("vars") or ()),
            user,
            fragment,
        )

    def render(self) -> str:
        """The goal as Lean's ``ppGoal`` prints it: ``case tag``, hypotheses with consecutive
        same-type value-less ones grouped (``a b : ℕ``), ``⊢ target`` (``| target`` in conv mode).
        Line breaks inside expressions are made single spaces."""
        return _render(
            self.user_name,
            ((v.user_name, v.type, v.value) for v in self.vars),
            self.target,
            self.fragment,
        )


def _render(
    user_name: str | None,
    hyps: Iterable[tuple[str, str | None, str | None]],
    target: str,
    fragment: str,
) -> str:
    lines: list[str] = []
    if user_name is not None:
        lines.append("case " + user_name)
    names: list[str] = []
    group_type: str | None = None
    for user, vtype, value in hyps:
        if vtype is None:
            raise InteractionError(
                f"hypothesis {user} came without a type (is the REPL option noRepeat on? the "
                "ProofEnv layer needs it off)"
            )
        vtype = _one_line(vtype)
        if value is None:
            if names and vtype == group_type:
                names.append(user)
                continue
            if names:
                lines.append(f"{' '.join(names)} : {group_type}")
            names = [user]
            group_type = vtype
        else:
            if names:
                lines.append(f"{' '.join(names)} : {group_type}")
                names = []
            lines.append(f"{user} : {vtype} := {_one_line(value)}")
    if names:
        lines.append(f"{' '.join(names)} : {group_type}")
    lines.append(("| " if fragment == "conv" else "⊢ ") + _one_line(target))
    return "\n".join(lines)


def render_goal_json(d: dict[str, Any]) -> str:
    """:meth:`GoalInfo.render` straight from the REPL's JSON (no objects built; the hot path of
    every tactic)."""
    lines: list[str] = []
    user = d.get("userName")
    if user and user != "[anonymous]":
        lines.append("case " + user)
    names: list[str] = []
    group_type: str | None = None
    for v in d.get("vars") or ():
        t = v.get("type")
        vtype = t.get("pp") if type(t) is dict else _pp(t)
        if vtype is None:
            raise InteractionError(
                f"hypothesis {v.get('userName')} came without a type (is the REPL option noRepeat "
                "on? the ProofEnv layer needs it off)"
            )
        if "\n" in vtype or "  " in vtype or "\t" in vtype:
            vtype = _WS.sub(" ", vtype).strip()
        val = v.get("value")
        if val is None:
            if names and vtype == group_type:
                names.append(v.get("userName", ""))
                continue
            if names:
                lines.append(f"{' '.join(names)} : {group_type}")
            names = [v.get("userName", "")]
            group_type = vtype
        else:
            if names:
                lines.append(f"{' '.join(names)} : {group_type}")
                names = []
            value = val.get("pp") if type(val) is dict else _pp(val)
            lines.append(f"{v.get('userName', '')} : {vtype} := {_one_line(value or '')}")
    if names:
        lines.append(f"{' '.join(names)} : {group_type}")
    fragment = d.get("fragment")
    if fragment is None and d.get("isConversion"):
        fragment = "conv"
    target = d.get("target")
    text = (target.get("pp") if type(target) is dict else _pp(target)) or ""
    lines.append(("| " if fragment == "conv" else "⊢ ") + _one_line(text))
    return "\n".join(lines)


def _render_any(g: GoalInfo | dict[str, Any]) -> str:
    return g.render() if isinstance(g, GoalInfo) else render_goal_json(g)


def render_goals(goals: Sequence[GoalInfo | dict[str, Any]]) -> str:
    """A whole state as LeanDojo prints it: goals separated by a blank line, ``no goals`` when
    there are none. Goals may be :class:`GoalInfo` or the REPL's goal JSON."""
    if not goals:
        return NO_GOALS
    return "\n\n".join(_render_any(g) for g in goals)


def _already_canonical(text: str) -> bool:
    """True when :func:`goal_texts` would return this one rendered goal unchanged (checked
    conservatively, so the common case skips re-parsing)."""
    return (
        text[:1] not in ("", " ", "/")
        and not text[0].isdigit()
        and "  " not in text
        and "\n " not in text
        and " \n" not in text
        and "\t" not in text
        and "\n\n" not in text
        and "<a>" not in text
        and "</a>" not in text
        and text[-1] != " "
        and text.count("⊢") == 1
        and text.find("⊢ ") == text.rfind("\n") + 1
        and not text.startswith("case\n")
    )


def canonical_goals(goals: Sequence[GoalInfo | dict[str, Any]]) -> tuple[str, ...]:
    """Each goal's canonical text (:func:`lean_dojo_v2.data.goal_texts`), comparable with traced
    LeanDojo states. Goals may be :class:`GoalInfo` or the REPL's goal JSON.

    Pantograph keeps macro scopes in case tags (``case h._@.Foo._hyg.12``) where LeanDojo's
    tracer erased them: they are erased here as :func:`~lean_dojo_v2.data.canonical_state`
    does. A residual difference is not normalised: Pantograph prints goals after
    ``instantiateAll`` (auxiliary lemmas and ``match`` applications unfolded), LeanDojo after
    ``instantiateMVars``, so a goal holding a ``match`` may print differently."""
    texts = _canonical_goals(goals)
    if any("_@" in t for t in texts):
        return tuple(erase_case_macro_scopes(t) for t in texts)
    return texts


def _canonical_goals(goals: Sequence[GoalInfo | dict[str, Any]]) -> tuple[str, ...]:
    if not goals:
        return ()
    rendered = [_render_any(g) for g in goals]
    if all(_already_canonical(r) for r in rendered):
        return tuple(rendered)
    texts = goal_texts("\n\n".join(rendered))
    if len(texts) != len(goals):  # a goal rendered oddly: canonicalise one by one
        out: list[str] = []
        for r in rendered:
            t = goal_texts(r)
            out.append(t[0] if t else r)
        return tuple(out)
    return tuple(texts)


def parse_goals(goals: Sequence[GoalInfo | dict[str, Any]]) -> tuple[GoalInfo, ...]:
    return tuple(g if isinstance(g, GoalInfo) else GoalInfo.from_json(g) for g in goals)


@dataclass(frozen=True, slots=True)
class Position:
    line: int
    column: int


_INTERRUPT_MESSAGE = re.compile(r"^\s*(?:internal exception: )?interrupt(?:ed)?\s*$")


@dataclass(frozen=True, slots=True)
class Message:
    """A Lean message (``SerialMessage``); ≤ 0.3.3 REPLs send bare strings, kept as ``data``."""

    data: str
    severity: str = "error"
    pos: Position | None = None
    end_pos: Position | None = None
    kind: str | None = None
    file_name: str | None = None
    caption: str = ""

    @classmethod
    def from_json(cls, d: str | Mapping[str, Any]) -> Message:
        if isinstance(d, str):
            return cls(d)
        pos = d.get("pos")
        end = d.get("endPos")
        kind = d.get("kind")
        return cls(
            d.get("data", ""),
            d.get("severity", "error"),
            Position(pos["line"], pos["column"]) if isinstance(pos, dict) else None,
            Position(end["line"], end["column"]) if isinstance(end, dict) else None,
            None if kind in (None, "[anonymous]") else kind,
            d.get("fileName"),
            d.get("caption", ""),
        )

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def is_interrupt(self) -> bool:
        """An error message saying the command was interrupted: how older Lean reports a
        ``frontend.process`` stopped by the REPL's ``timeout`` (inside the unit's messages)."""
        return self.is_error and _INTERRUPT_MESSAGE.search(self.data) is not None

    @property
    def is_sorry_warning(self) -> bool:
        return self.kind == "hasSorry" or "declaration uses 'sorry'" in self.data

    def __str__(self) -> str:
        if self.pos is not None and (self.pos.line or self.pos.column):
            return f"{self.pos.line}:{self.pos.column}: {self.severity}: {self.data}"
        return self.data


def _messages(items: Iterable[str | Mapping[str, Any]] | None) -> tuple[Message, ...]:
    return tuple(Message.from_json(m) for m in items or ())


class TacticOutcome:
    """The result of ``goal.tactic``, in one of its four shapes (``shape``):

    - ``"success"``: ``next_state_id`` and ``goals`` (empty: solved), maybe info/warning messages;
    - ``"failure"``: the tactic failed; ``messages`` say why;
    - ``"parse"``: ``parse_error`` (the text did not parse);
    - ``"error"``: a protocol error ``{"error": kind, "desc": ...}`` (``error_kind``, ``error_desc``).

    ``goals`` and ``messages`` are parsed from ``raw_goals``/``raw_messages`` on first access.
    """

    __slots__ = (
        "shape",
        "next_state_id",
        "raw_goals",
        "raw_messages",
        "parse_error",
        "has_sorry",
        "has_unsafe",
        "error_kind",
        "error_desc",
        "_goals",
        "_messages",
    )

    def __init__(
        self,
        shape: str,
        next_state_id: int | None = None,
        raw_goals: list[Any] | tuple[Any, ...] = (),
        raw_messages: list[Any] | tuple[Any, ...] = (),
        parse_error: str | None = None,
        has_sorry: bool = False,
        has_unsafe: bool = False,
        error_kind: str | None = None,
        error_desc: str | None = None,
    ) -> None:
        self.shape = shape
        self.next_state_id = next_state_id
        self.raw_goals = raw_goals
        self.raw_messages = raw_messages
        self.parse_error = parse_error
        self.has_sorry = has_sorry
        self.has_unsafe = has_unsafe
        self.error_kind = error_kind
        self.error_desc = error_desc
        self._goals: tuple[GoalInfo, ...] | None = None
        self._messages: tuple[Message, ...] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TacticOutcome:
        if "error" in d:
            return cls("error", error_kind=str(d["error"]), error_desc=str(d.get("desc", "")))
        has_sorry = bool(d.get("hasSorry", False))
        has_unsafe = bool(d.get("hasUnsafe", False))
        parse_error = d.get("parseError")
        if parse_error is not None:
            return cls(
                "parse", parse_error=str(parse_error), has_sorry=has_sorry, has_unsafe=has_unsafe
            )
        goals = d.get("goals")
        if goals is not None:
            return cls(
                "success",
                d.get("nextStateId"),
                goals,
                d.get("messages") or (),
                has_sorry=has_sorry,
                has_unsafe=has_unsafe,
            )
        msgs = d.get("messages") or d.get("tacticErrors") or ()
        return cls("failure", raw_messages=msgs, has_sorry=has_sorry, has_unsafe=has_unsafe)

    @property
    def goals(self) -> tuple[GoalInfo, ...]:
        if self._goals is None:
            self._goals = parse_goals(self.raw_goals)
        return self._goals

    @property
    def messages(self) -> tuple[Message, ...]:
        if self._messages is None:
            self._messages = _messages(self.raw_messages)
        return self._messages

    @property
    def is_solved(self) -> bool:
        return self.shape == "success" and not self.raw_goals

    @property
    def interrupted(self) -> bool:
        return self.shape == "error" and (self.error_desc or "").strip() == "interrupt"

    def error_text(self) -> str:
        """Lean's text for a non-success outcome (error messages first)."""
        if self.shape == "parse":
            return self.parse_error or "parse error"
        if self.shape == "error":
            return f"{self.error_kind}: {self.error_desc}"
        msgs = self.messages
        errors = [m.data for m in msgs if m.is_error] or [m.data for m in msgs]
        return "\n".join(errors) if errors else "tactic failed"

    def __repr__(self) -> str:
        extra = {
            "success": f"next_state_id={self.next_state_id}, goals={len(self.raw_goals)}",
            "failure": f"error={self.error_text()[:200]!r}",
            "parse": f"parse_error={self.parse_error!r}",
            "error": f"{self.error_kind}: {self.error_desc!r}",
        }[self.shape]
        return f"TacticOutcome({self.shape}, {extra})"


@dataclass(frozen=True, slots=True)
class StartedGoal:
    """``goal.start``'s answer: the state id and the root mvar (no goals are sent)."""

    state_id: int
    root: str | None


@dataclass(frozen=True, slots=True)
class GoalPrint:
    goals: tuple[GoalInfo, ...] = ()
    root: str | None = None
    parent_exprs: tuple[str | None, ...] = ()
    extra_mvars: tuple[str | None, ...] = ()
    root_has_sorry: bool = False
    root_has_unsafe: bool = False
    root_has_mvar: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GoalPrint:
        return cls(
            tuple(GoalInfo.from_json(g) for g in d.get("goals") or ()),
            _pp(d.get("root")),
            tuple(_pp(e) for e in d.get("parentExprs") or ()),
            tuple(_pp(e) for e in d.get("extraMVars") or ()),
            bool(d.get("rootHasSorry", False)),
            bool(d.get("rootHasUnsafe", False)),
            bool(d.get("rootHasMVar", False)),
        )


@dataclass(frozen=True, slots=True)
class ContinuedGoal:
    next_state_id: int
    goals: tuple[GoalInfo, ...]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ContinuedGoal:
        return cls(d["nextStateId"], tuple(GoalInfo.from_json(g) for g in d.get("goals") or ()))


@dataclass(frozen=True, slots=True)
class CompilationUnit:
    """One top-level command of a file given to ``frontend.process``; ``boundary`` is in UTF-8
    bytes. ``goal_state_id``/``goals`` only come from ≤ 0.3.4 REPLs asked for ``sorrys``."""

    boundary: tuple[int, int]
    messages: tuple[Message, ...] = ()
    new_constants: tuple[str, ...] | None = None
    n_invocations: int | None = None
    goal_state_id: int | None = None
    goals: tuple[GoalInfo, ...] = ()
    invocations: tuple[dict[str, Any], ...] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CompilationUnit:
        b = d.get("boundary") or (0, 0)
        nc = d.get("newConstants")
        inv = d.get("invocations")
        return cls(
            (int(b[0]), int(b[1])),
            _messages(d.get("messages")),
            None if nc is None else tuple(nc),
            d.get("nInvocations"),
            d.get("goalStateId"),
            tuple(GoalInfo.from_json(g) for g in d.get("goals") or ()),
            tuple(inv) if isinstance(inv, list) else None,
        )

    @property
    def errors(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.is_error)


@dataclass(frozen=True, slots=True)
class DistilTarget:
    """A ``sorry`` of a file turned into a goal state by ``frontend.distil``."""

    state_id: int
    goals: tuple[GoalInfo, ...]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DistilTarget:
        return cls(d["stateId"], tuple(GoalInfo.from_json(g) for g in d.get("goals") or ()))


@dataclass(frozen=True, slots=True)
class InspectResult:
    """``env.inspect``: the constant's type (pp), and everything else raw in ``data``."""

    type: str | None
    value: str | None
    module: str | None
    is_unsafe: bool
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> InspectResult:
        return cls(
            _pp(d.get("type")), _pp(d.get("value")), d.get("module"), bool(d.get("isUnsafe")), d
        )
