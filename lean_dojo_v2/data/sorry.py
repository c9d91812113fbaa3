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
from typing import NamedTuple

# fmt: off
__all__ = [
    "Declaration", "file_has_sorry", "find_declarations", "find_sorry_tokens",
    "sorry_declarations", "strip_comments",
]
# fmt: on

# One identifier component: «quoted» or a letter/underscore followed by word
# characters, primes, ``!`` and ``?``.  λ, Π and Σ are binder tokens in Lean.
_COMPONENT = r"(?:«[^»]*»|(?![λΠΣ])[^\W\d][\w'!?]*)"
_TOKEN_RE = re.compile(
    rf"""
    \s*(?:
     (?P<line>--[^\n]*)
    |(?P<block>/-)
    |(?P<raw>r\#*")
    |(?P<string>"(?:[^"\\]|\\.)*(?:"|\Z))
    |(?P<char>'(?:\\(?:u\{{[0-9a-fA-F]+\}}|x[0-9a-fA-F]{{2}}|.)|[^\\'\n])')
    |(?P<namelit>`{{1,2}}{_COMPONENT}(?:\.{_COMPONENT})*)
    |(?P<ident>{_COMPONENT}(?:\.{_COMPONENT})*)
    |(?P<number>[0-9][0-9a-zA-Z_]*)
    |(?P<attr>@\[)
    |(?P<hash>\#[A-Za-z_]\w*)
    |(?P<other>[^\s\w"'`«/\-@\#()\[\]]+|\S)
    )""",
    re.VERBOSE | re.DOTALL,
)

# fmt: off
DECL_KINDS = frozenset({
    "theorem", "lemma", "def", "abbrev", "instance", "example", "opaque", "axiom",
    "structure", "inductive", "class",
})
MODIFIERS = frozenset({
    "private", "protected", "noncomputable", "unsafe", "partial", "nonrec", "scoped", "local",
})
COMMANDS = frozenset({
    "namespace", "section", "end", "open", "variable", "universe", "set_option", "import",
    "attribute", "mutual", "export", "notation", "infix", "infixl", "infixr", "prefix",
    "postfix", "macro", "macro_rules", "syntax", "elab", "elab_rules", "initialize", "deriving",
    "omit", "include",
})
# fmt: on
_STARTERS = DECL_KINDS | MODIFIERS | COMMANDS
_COMMAND_KINDS = frozenset({"doc", "moddoc", "attr", "hash"})  # start a command at column 1


class _Token(NamedTuple):
    """A lexed token; ``kind`` is a group name of ``_TOKEN_RE`` or doc/moddoc."""

    kind: str
    start: int
    end: int  # exclusive
    text: str


@dataclass(frozen=True)
class Declaration:
    """A top-level declaration command and the ``sorry`` tokens inside it."""

    kind: str
    name: str | None
    start: tuple[int, int]
    end: tuple[int, int]
    has_sorry: bool
    sorry_positions: list[tuple[int, int]] = field(default_factory=list)


def _block_comment_end(source: str, start: int) -> int:
    """Return the index just past the block comment opened at ``start``.

    Lean 4 block comments nest, so we count ``/-`` and ``-/``; strings are not
    special inside comments.  An unterminated comment runs to end of file.
    """
    pos = start + (3 if source[start + 2 : start + 3] in ("-", "!") else 2)
    depth = 1
    while depth:
        close = source.find("-/", pos)
        if close < 0:
            return len(source)
        opened = source.find("/-", pos, close)
        if opened >= 0:
            depth, pos = depth + 1, opened + 2
        else:
            depth, pos = depth - 1, close + 2
    return pos


def _raw_string_end(source: str, start: int, opener: str) -> int:
    """Return the index just past ``r#"..."#`` (raw strings have no escapes)."""
    closer = '"' + "#" * (len(opener) - 2)
    close = source.find(closer, start + len(opener))
    return len(source) if close < 0 else close + len(closer)


def _tokens(source: str) -> list[_Token]:
    """Lex ``source`` linearly, keeping comments but dropping whitespace.

    ``finditer`` does the bulk of the work; block comments and raw strings,
    which a regular expression cannot delimit, restart it after their end.
    """
    tokens: list[_Token] = []
    pos = 0
    while True:
        for match in _TOKEN_RE.finditer(source, pos):
            kind = match.lastgroup or "other"
            start, end = match.start(kind), match.end()
            if kind == "block":
                end = _block_comment_end(source, start)
                kind = {"/--": "doc", "/-!": "moddoc"}.get(source[start : start + 3], "block")
            elif kind == "raw":
                end, kind = _raw_string_end(source, start, match.group(kind)), "string"
            tokens.append(_Token(kind, start, end, source[start:end]))
            if end != match.end():
                pos = end
                break
        else:
            return tokens


_COMMENT_KINDS = frozenset({"line", "block", "doc", "moddoc"})


def _is_sorry(token: _Token, source: str) -> bool:
    """``sorry`` as a term: the bare identifier, not ``x.sorry`` / ``.sorry``."""
    return (
        token.kind == "ident"
        and token.text == "sorry"
        and source[token.start - 1 : token.start] != "."
    )


class _Positions:
    """Convert string indices to 1-based (line, column) with a binary search."""

    def __init__(self, source: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def __call__(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, index) - 1
        return line + 1, index - self._starts[line] + 1


def strip_comments(source: str) -> str:
    """Blank out every comment, keeping line/column positions of all code.

    Comment characters become spaces; newlines inside block comments are kept.
    """
    parts: list[str] = []
    last = 0
    for token in _tokens(source):
        if token.kind in _COMMENT_KINDS:
            parts.append(source[last : token.start])
            parts.append(re.sub(r"[^\r\n]", " ", token.text))
            last = token.end
    parts.append(source[last:])
    return "".join(parts)


def find_sorry_tokens(source: str) -> list[tuple[int, int]]:
    """1-based (line, column) of every real ``sorry`` token in ``source``."""
    position = _Positions(source)
    return [position(t.start) for t in _tokens(source) if _is_sorry(t, source)]


def file_has_sorry(source: str) -> bool:
    """Whether ``source`` contains at least one real ``sorry`` token."""
    return any(_is_sorry(t, source) for t in _tokens(source))


def _is_command_start(token: _Token, source: str) -> bool:
    """Whether ``token`` begins a top-level command (only at column 1)."""
    if token.start and source[token.start - 1] != "\n":
        return False
    return token.kind in _COMMAND_KINDS or (token.kind == "ident" and token.text in _STARTERS)


def _skip_group(code: list[_Token], k: int, openers: tuple[str, ...], closer: str) -> int:
    """Skip a bracketed group starting at ``code[k]``; return the index after it."""
    depth = 0
    while k < len(code):
        depth += (code[k].text in openers) - (code[k].text == closer)
        k += 1
        if depth <= 0:
            break
    return k


def _skip_header(code: list[_Token], k: int) -> int:
    """Skip ``... in`` prefixes, doc comment, attributes and modifiers."""
    while k < len(code):
        token = code[k]
        if token.kind == "doc" or (token.kind == "ident" and token.text in MODIFIERS):
            k += 1
        elif token.kind == "attr":
            k = _skip_group(code, k, ("@[", "["), "]")
        elif token.text in ("open", "set_option") and (after := _after_in(code, k)):
            k = after
        else:
            break
    return k


def _after_in(code: list[_Token], k: int) -> int | None:
    """Index after the ``in`` of an ``open``/``set_option`` prefix, or None.

    The search stops at the next command so ``open Foo`` alone is not a prefix.
    """
    for j in range(k + 1, min(len(code), k + 64)):
        if code[j].kind == "ident" and code[j].text == "in":
            return j + 1
        if code[j].kind in _COMMAND_KINDS or (
            code[j].kind == "ident" and code[j].text in _STARTERS
        ):
            return None
    return None


def _commands(code: list[_Token], source: str) -> list[list[_Token]]:
    """Split code tokens into commands; header-only or ``... in`` segments
    (doc comment, ``@[simp]``, ``open Foo in`` on their own lines) are merged
    into the command that follows, as Lean parses them."""
    starts = [i for i, t in enumerate(code) if _is_command_start(t, source)]
    commands: list[list[_Token]] = []
    pending: list[_Token] = []
    # With no command start the second list still has one element: not strict on purpose.
    for begin, stop in zip(starts, starts[1:] + [len(code)], strict=False):
        pending += code[begin:stop]
        if _skip_header(pending, 0) < len(pending):
            commands.append(pending)
            pending = []
    if pending:
        commands.append(pending)
    return commands


def _declaration_name(code: list[_Token], k: int, kind: str) -> str | None:
    """Name written after the keyword at ``code[k - 1]``, if any."""
    if kind == "instance" and k < len(code) and code[k].text == "(":
        k = _skip_group(code, k, ("(",), ")")  # ``instance (priority := low) foo``
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


def _update_scopes(command: list[_Token], k: int, scopes: list[tuple[str | None, int]]) -> None:
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
    tokens = _tokens(source)
    code = [t for t in tokens if t.kind not in ("line", "block")]
    sorry_starts = [t.start for t in tokens if _is_sorry(t, source)]
    position = _Positions(source)
    scopes: list[tuple[str | None, int]] = []
    declarations: list[Declaration] = []
    for command in _commands(code, source):
        k = _skip_header(command, 0)
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
