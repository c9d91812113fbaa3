"""Detect ``sorry`` in Lean 4 source text without running Lean.

Why a lexer instead of ``"sorry" in text``: benchmark files and proofs mention
``sorry`` in comments, doc strings and identifiers (``sorry_proof`` in SciLean,
``sorryAx``), and answers hidden in comments (PutnamBench puts the expected
solution in a ``--`` comment after ``abbrev ..._solution := sorry``) must not
leak into prompts.  A small linear scanner that understands comments, strings,
char literals and identifiers gets this right for the files we handle.

Conventions (all positions are 1-based ``(line, column)``, columns counted in
Unicode code points, i.e. Python ``str`` indices):

* ``Declaration.start`` is the first character of the whole *command*: an
  ``open ... in`` / ``set_option ... in`` prefix, a doc comment, ``@[...]``
  attributes or modifiers (``private``, ``noncomputable``...) when present,
  otherwise the declaration keyword.  This mirrors Lean's own syntax, where
  all of these belong to the declaration command.
* ``Declaration.end`` is *inclusive*: the last character of the last code token
  of the declaration.  Comments trailing a declaration (before the next
  command) are not part of it.
* Top-level commands are recognised only at column 1, which is how Lean files
  are written in practice.  A line starting at column 1 that is not a known
  command keyword (a continuation line such as ``m = 13 ∧ ... := by``) does not
  end the current declaration.
* ``«sorry»`` is an ordinary (quoted) identifier, not the ``sorry`` term; so are
  ``foo.sorry``, ``.sorry``, ``sorry_lemma`` and the name literal `` `sorry``.
  ``sorry`` inside string interpolation (``s!"{sorry}"``) is not detected.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .lean_lexer import (
    COMMENT_KINDS,
    DECL_KINDS,
    Positions,
    Token,
    is_command_start,
    iter_tokens,
    skip_group,
    skip_header,
    tokenize,
)

# fmt: off
__all__ = [
    "Declaration", "file_has_sorry", "find_declarations", "find_sorry_tokens",
    "sorry_declarations", "strip_comments",
]
# fmt: on


@dataclass(frozen=True)
class Declaration:
    """A top-level declaration command and the ``sorry`` tokens inside it."""

    kind: str
    name: str | None
    start: tuple[int, int]
    end: tuple[int, int]
    has_sorry: bool
    sorry_positions: list[tuple[int, int]] = field(default_factory=list)


def _is_sorry(token: Token, source: str) -> bool:
    """``sorry`` as a term: the bare identifier, not ``x.sorry`` / ``.sorry``."""
    return (
        token.kind == "ident"
        and token.text == "sorry"
        and source[token.start - 1 : token.start] != "."
    )


def strip_comments(source: str) -> str:
    """Blank out every comment, keeping line/column positions of all code.

    Comment characters become spaces; newlines inside block comments are kept.
    """
    parts: list[str] = []
    last = 0
    for token in tokenize(source):
        if token.kind in COMMENT_KINDS:
            parts.append(source[last : token.start])
            parts.append(re.sub(r"[^\r\n]", " ", token.text))
            last = token.end
    parts.append(source[last:])
    return "".join(parts)


def find_sorry_tokens(source: str) -> list[tuple[int, int]]:
    """1-based (line, column) of every real ``sorry`` token in ``source``."""
    position = Positions(source)
    return [position(t.start) for t in tokenize(source) if _is_sorry(t, source)]


def file_has_sorry(source: str) -> bool:
    """Whether ``source`` contains at least one real ``sorry`` token."""
    return any(_is_sorry(t, source) for t in iter_tokens(source))


def _commands(code: list[Token], source: str) -> list[list[Token]]:
    """Split code tokens into commands; header-only or ``... in`` segments
    (doc comment, ``@[simp]``, ``open Foo in`` on their own lines) are merged
    into the command that follows, as Lean parses them."""
    starts = [i for i, t in enumerate(code) if is_command_start(t, source)]
    commands: list[list[Token]] = []
    pending: list[Token] = []
    # With no command start the second list still has one element: not strict on purpose.
    for begin, stop in zip(starts, starts[1:] + [len(code)], strict=False):
        pending += code[begin:stop]
        if skip_header(pending, 0) < len(pending):
            commands.append(pending)
            pending = []
    if pending:
        commands.append(pending)
    return commands


def _declaration_name(code: list[Token], k: int, kind: str) -> str | None:
    """Name written after the keyword at ``code[k - 1]``, if any."""
    if kind == "instance" and k < len(code) and code[k].text == "(":
        k = skip_group(code, k, ("(",), ")")  # ``instance (priority := low) foo``
    if kind == "example" or k >= len(code) or code[k].kind != "ident":
        return None
    return code[k].text


def _full_name(name: str | None, scopes: list[tuple[str | None, int]]) -> str | None:
    """Prefix ``name`` with the enclosing namespaces (``_root_.`` opts out)."""
    if name is None:
        return None
    if name.startswith("_root_."):
        return name[len("_root_.") :]
    return ".".join([s for s, _ in scopes if s] + [name])


def _update_scopes(command: list[Token], k: int, scopes: list[tuple[str | None, int]]) -> None:
    """Track ``namespace``/``section``/``mutual`` ... ``end`` nesting.

    Entries are ``(namespace or None, number of name components)`` so that
    ``end A.B`` closes both ``namespace A`` and ``namespace B``.
    """
    keyword = command[k].text
    arg = command[k + 1].text if k + 1 < len(command) and command[k + 1].kind == "ident" else None
    if keyword == "namespace" and arg:
        scopes.append((arg, arg.count(".") + 1))
    elif keyword in ("section", "mutual"):
        scopes.append((None, arg.count(".") + 1 if arg else 0))
    elif keyword == "end":
        to_close = arg.count(".") + 1 if arg else 0
        closed = 0
        while scopes and (closed < to_close or not closed):
            closed += max(scopes.pop()[1], 1)


def find_declarations(source: str) -> list[Declaration]:
    """Split ``source`` into top-level declarations (see module docstring)."""
    tokens = tokenize(source)
    code = [t for t in tokens if t.kind not in ("line", "block")]
    sorry_starts = [t.start for t in tokens if _is_sorry(t, source)]
    position = Positions(source)
    scopes: list[tuple[str | None, int]] = []
    declarations: list[Declaration] = []
    for command in _commands(code, source):
        k = skip_header(command, 0)
        if k >= len(command) or command[k].text not in DECL_KINDS:
            if k < len(command):
                _update_scopes(command, k, scopes)
            continue
        kind = command[k].text
        if kind == "class" and k + 1 < len(command) and command[k + 1].text == "inductive":
            kind, k = "class inductive", k + 1
        name = _full_name(_declaration_name(command, k + 1, kind), scopes)
        first, last = command[0].start, command[-1].end - 1
        lo, hi = bisect.bisect_left(sorry_starts, first), bisect.bisect_right(sorry_starts, last)
        sorries = [position(s) for s in sorry_starts[lo:hi]]
        declarations.append(
            Declaration(kind, name, position(first), position(last), bool(sorries), sorries)
        )
    return declarations


def sorry_declarations(source: str) -> list[Declaration]:
    """Declarations (of any kind) whose text contains a real ``sorry`` token."""
    return [d for d in find_declarations(source) if d.has_sorry]
