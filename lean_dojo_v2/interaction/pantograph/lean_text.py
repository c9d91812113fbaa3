"""Layer 1 (interaction): the Lean text that Pantograph elaborates to start or check a proof.

Pure string work, no REPL: a theorem's statement cut from its file
(:func:`statement_from_source`), core options as ``set_option … in`` lines
(:func:`set_option_prefix`), and the three texts a proof is checked in: the file up to the theorem
(:func:`file_check_text`), the context commands in effect at it (:func:`context_check_text`), or
the statement alone (:func:`proof_file`). :class:`TheoremSource` picks among them for
``AsyncPantographEnv.verify`` (with the proof) and ``start`` (with ``sorry``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...data.lean_lexer import (
    declaration_context,
    find_top_level_assign,
    header_end,
    index_of,
    proof_span,
    tactic_block,
    tactic_block_lines,
)
from ..messages import ProofSpan
from ..types import InteractionError


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
    cut = find_top_level_assign(s)
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


def option_items(options: Sequence[str] | Mapping[str, Any] | str | None) -> dict[str, Any]:
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
    for key, value in option_items(options).items():
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
    return _statement_check(statement, proof, full_name, rename, options)[0]


def _statement_check(
    statement: str,
    proof: str,
    full_name: str | None,
    rename: bool,
    options: Sequence[str] | Mapping[str, Any] | None,
) -> tuple[str, int]:
    """:func:`proof_file`'s text and the index of the ``by`` that opens the proof in it."""
    decl = _normalize_statement(statement)
    namespace = None
    m = _declared_name(decl)
    if m is not None:
        name = m.group(1)
        if full_name and not name.startswith("_root_.") and full_name.endswith("." + name):
            namespace = full_name[: -len(name) - 1]
        if rename:
            decl = _renamed(decl, m)
    head = f"{set_option_prefix(options)}{decl} := "
    opening = f"namespace {namespace}\n\n" if namespace else ""
    text = f"{opening}{head}{tactic_block(proof)}\n"
    if namespace:
        text += f"\nend {namespace}\n"
    return text, len(opening) + len(head)


def proof_span_in(text: str, by_index: int, proof: str, indent: int = 2) -> ProofSpan:
    """Where ``proof`` sits in ``text`` once :func:`tactic_block` put it there, its ``by`` at
    ``by_index``: its lines start on the line after the ``by``, indented by ``indent``."""
    first = text.count("\n", 0, by_index) + 2
    return ProofSpan(first, indent, len(tactic_block_lines(proof)))


def statement_name(statement: str, full_name: str) -> str | None:
    """The full name of what :func:`proof_file` declares for ``statement`` checked as
    ``full_name`` (already renamed when it is): ``full_name`` when the declared name is its last
    part (the declaration goes into its namespace) or all of it, else the declared name itself;
    None for an ``example`` or a statement without a name."""
    m = _declared_name(_normalize_statement(statement))
    if m is None:
        return None
    declared = m.group(1)
    renamed = full_name.endswith((RENAME_SUFFIX, RENAME_SUFFIX + "»"))
    base = full_name.replace(RENAME_SUFFIX, "") if renamed else full_name
    if not declared.startswith("_root_.") and (base == declared or base.endswith("." + declared)):
        return full_name
    declared = declared.removeprefix("_root_.")
    return renamed_name(declared) if renamed else declared


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
    # The checked declaration's full name as Lean knows it after the text (renamed or not);
    # None when the builder could not tell (then its axioms cannot be asked for).
    name: str | None = None
    # Where the proof's lines are in ``text``, to place Lean's messages in the proof; None for
    # text given as it is.
    span: ProofSpan | None = None

    @property
    def decl_start_byte(self) -> int:
        """``decl_start`` in UTF-8 bytes (``frontend.process`` unit boundaries are bytes)."""
        return len(self.text[: self.decl_start].encode("utf-8"))

    def with_axioms_query(self) -> tuple[str, int] | None:
        """The text followed by ``#print axioms <name>``, and where that command begins (in
        UTF-8 bytes): its answer names the axioms the declaration depends on. None without a
        name."""
        if not self.name:
            return None
        body = self.text if self.text.endswith("\n") else self.text + "\n"
        return f"{body}\n#print axioms {self.name}\n", len(body.encode("utf-8"))


# Lean's answer to ``#print axioms``: "'n' depends on axioms: [a, b]" or "'n' does not depend on
# any axioms" (the list may be broken over lines when long).
_DEPENDS_RE = re.compile(r"depends on axioms:\s*\[(?P<names>[^\]]*)\]", re.DOTALL)
_NO_AXIOMS_RE = re.compile(r"does not depend on any axioms")


def parse_axioms(message: str) -> tuple[str, ...] | None:
    """The axioms named by Lean's ``#print axioms`` message, or None for any other message."""
    m = _DEPENDS_RE.search(message)
    if m is not None:
        return tuple(a.strip() for a in m.group("names").split(",") if a.strip())
    if _NO_AXIOMS_RE.search(message):
        return ()
    return None


def renamed_name(full_name: str) -> str:
    """``full_name`` with its last component renamed as :func:`_renamed` renames a declaration
    (``A.b`` → ``A.b_ldv2_check``, ``A.«b c»`` → ``A.«b c_ldv2_check»``)."""
    if full_name.endswith("»"):
        return full_name[:-1] + RENAME_SUFFIX + "»"
    return full_name + RENAME_SUFFIX


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
    text = prefix + set_options + decl + "\n"
    span = proof_span_in(text, len(prefix + set_options) + begin - cut, proof, len(indent))
    return CheckedText(text, "file", len(prefix), span=span)


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
    head = f"{context}{set_option_prefix(options)}{prefixes}{decl} := "
    text = f"{head}{tactic_block(proof)}\n"
    return CheckedText(text, "context", len(context), span=proof_span_in(text, len(head), proof))


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
        name = renamed_name(self.full_name) if rename else self.full_name
        if route == "statement":
            if self.statement is None:
                raise InteractionError(f"{self.full_name} has no statement to check")
            text, by_index = _statement_check(
                self.statement, proof, self.full_name, rename, options
            )
            return CheckedText(
                text,
                "statement",
                name=statement_name(self.statement, name),
                span=proof_span_in(text, by_index, proof),
            )
        if self.source is None:
            raise InteractionError(f"{self.full_name} has no file to check it in")
        if route == "file":
            checked = file_check_text(self.source, self.start, proof, options)
        elif route == "context":
            checked = context_check_text(self.source, self.start, proof, options, rename=rename)
        else:
            raise ValueError(f"unknown route {route!r} (file, context or statement)")
        return replace(checked, name=name)


__all__ = [
    "RENAME_SUFFIX",
    "CheckedText",
    "TheoremSource",
    "context_check_text",
    "file_check_text",
    "option_items",
    "parse_axioms",
    "proof_file",
    "renamed_name",
    "statement_name",
    "set_option_prefix",
    "statement_from_source",
]
