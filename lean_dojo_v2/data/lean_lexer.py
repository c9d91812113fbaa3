"""The one Lean 4 scanner of the library: tokens of source text, without running Lean.

Used by sorry detection (:mod:`lean_dojo_v2.data.sorry`), statement extraction for re-checking
proofs (:func:`find_top_level_assign`) and proof write-back (:func:`proof_span`). It knows what
changes the meaning of a ``:=`` or of ``sorry``:

* comments: ``-- line``, ``/- block -/`` (block comments nest), doc ``/-- -/`` and module doc
  ``/-! -/`` comments;
* string literals with escapes (``"a \\" b"``), raw strings ``r"..."`` / ``r#"..."#``;
* char literals (``'('``, ``')'``, ``'⟨'``, ``'"'``, ``'\\''``, ``'\\n'``, ``'\\x41'``,
  ``'\\u{3b1}'``), which are not to be confused with primes in names (``h'``, ``f ⁻¹' s``);
* identifiers (dotted, ``«quoted»`` components), name literals (`` `foo``), numbers;
* brackets ``( ) [ ] { } ⟨ ⟩ ⦃ ⦄ ⟦ ⟧`` as single tokens, ``@[`` (attributes) and ``:=``.

Top-level commands are recognised at column 1 only (how Lean files are written in practice);
see :mod:`lean_dojo_v2.data.sorry` for the conventions built on that. Indices are Python ``str``
indices (Unicode code points); :class:`Positions` turns them into 1-based ``(line, column)``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import NamedTuple

# fmt: off
__all__ = [
    "COMMANDS", "COMMENT_KINDS", "DECL_KINDS", "MODIFIERS", "Positions", "Token",
    "find_top_level_assign", "index_of", "is_command_start", "iter_tokens", "proof_span",
    "skip_group", "skip_header", "strip_leading_by", "tokenize",
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
    |(?P<assign>:=)
    |(?P<other>[^\s\w"'`«/\-@\#:()\[\]{{}}⟨⟩⦃⦄⟦⟧]+|\S)
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
COMMENT_KINDS = frozenset({"line", "block", "doc", "moddoc"})
_OPENERS = frozenset({"(", "[", "{", "⟨", "⦃", "⟦", "@["})
_CLOSERS = frozenset({")", "]", "}", "⟩", "⦄", "⟧"})
# Terms that bind with their own ``:=`` (``let x := v; body`` inside a statement).
_LOCAL_BINDERS = frozenset({"let", "have", "letI", "haveI", "let_fun"})
# At bracket depth 0 these end a declaration's proof term (or show it has no ``:=`` proof).
_PROOF_ENDERS = frozenset({"where", "termination_by", "decreasing_by"})


class Token(NamedTuple):
    """A lexed token. ``kind`` is ``line``/``block``/``doc``/``moddoc`` (comments), ``string``,
    ``char``, ``namelit``, ``ident``, ``number``, ``attr`` (``@[``), ``hash`` (``#check``),
    ``assign`` (``:=``) or ``other`` (a bracket or a run of symbols)."""

    kind: str
    start: int
    end: int  # exclusive
    text: str


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


def iter_tokens(source: str, start: int = 0) -> Iterator[Token]:
    """Lex ``source`` from index ``start`` (a token boundary), keeping comments but dropping
    white space; lazily, so a caller may stop early.

    ``finditer`` does the bulk of the work; block comments and raw strings, which a regular
    expression cannot delimit, restart it after their end.
    """
    pos = start
    while True:
        for match in _TOKEN_RE.finditer(source, pos):
            kind = match.lastgroup or "other"
            begin, end = match.start(kind), match.end()
            if kind == "block":
                end = _block_comment_end(source, begin)
                kind = {"/--": "doc", "/-!": "moddoc"}.get(source[begin : begin + 3], "block")
            elif kind == "raw":
                end, kind = _raw_string_end(source, begin, match.group(kind)), "string"
            yield Token(kind, begin, end, source[begin:end])
            if end != match.end():
                pos = end
                break
        else:
            return


def tokenize(source: str, start: int = 0) -> list[Token]:
    """Every token of ``source`` from index ``start`` (see :func:`iter_tokens`)."""
    return list(iter_tokens(source, start))


class Positions:
    """Convert string indices to 1-based (line, column) with a binary search."""

    def __init__(self, source: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def __call__(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, index) - 1
        return line + 1, index - self._starts[line] + 1


def index_of(source: str, line: int, column: int) -> int:
    """The string index of 1-based ``(line, column)``; a column past the end of its line is
    clamped to the line's end. Raises ``ValueError`` for a line outside ``source``."""
    starts = [0] + [m.end() for m in re.finditer("\n", source)]
    if not 1 <= line <= len(starts):
        raise ValueError(f"line {line} is outside the text ({len(starts)} lines)")
    begin = starts[line - 1]
    end = starts[line] - 1 if line < len(starts) else len(source)
    return begin + min(max(0, column - 1), end - begin)


def is_command_start(token: Token, source: str) -> bool:
    """Whether ``token`` begins a top-level command (only at column 1)."""
    if token.start and source[token.start - 1] != "\n":
        return False
    return token.kind in _COMMAND_KINDS or (token.kind == "ident" and token.text in _STARTERS)


def skip_group(code: list[Token], k: int, openers: tuple[str, ...], closer: str) -> int:
    """Skip a bracketed group starting at ``code[k]``; return the index after it."""
    depth = 0
    while k < len(code):
        depth += (code[k].text in openers) - (code[k].text == closer)
        k += 1
        if depth <= 0:
            break
    return k


def _after_in(code: list[Token], k: int) -> int | None:
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


def skip_header(code: list[Token], k: int) -> int:
    """Skip ``... in`` prefixes, doc comment, attributes and modifiers (code tokens only)."""
    while k < len(code):
        token = code[k]
        if token.kind == "doc" or (token.kind == "ident" and token.text in MODIFIERS):
            k += 1
        elif token.kind == "attr":
            k = skip_group(code, k, ("@[", "["), "]")
        elif token.text in ("open", "set_option") and (after := _after_in(code, k)):
            k = after
        else:
            break
    return k


def _command_code(source: str, start: int) -> list[Token]:
    """Code tokens (no comments) of the command beginning at index ``start``, up to the next
    top-level command; a header on its own lines (doc comment, ``@[simp]``, ``open Foo in``)
    belongs to the command that follows it, as in Lean."""
    code: list[Token] = []
    for token in iter_tokens(source, start):
        if token.kind in ("line", "block"):
            continue
        if code and is_command_start(token, source) and skip_header(code, 0) < len(code):
            break
        code.append(token)
    return code


def _depth_zero(code: list[Token], k: int) -> Iterator[int]:
    """Indices ``>= k`` of the tokens of ``code`` outside every bracket opened from ``k`` on."""
    depth = 0
    for j in range(k, len(code)):
        text = code[j].text
        if text in _OPENERS:
            depth += 1
        elif text in _CLOSERS:
            depth = max(0, depth - 1)
        elif not depth:
            yield j


def _assign_index(code: list[Token]) -> int:
    """Index in ``code`` of the declaration's top-level ``:=`` (see
    :func:`find_top_level_assign`), or -1."""
    pending = 0  # ``let``/``have`` at depth 0 whose own ``:=`` is still ahead
    for j in _depth_zero(code, skip_header(code, 0)):
        token = code[j]
        if token.kind == "assign":
            if not pending:
                return j
            pending -= 1
        elif pending and token.text in ("←", "<-"):
            pending -= 1  # ``let x ← e`` in ``do`` notation binds without ``:=``
        elif token.kind == "ident":
            if token.text in _LOCAL_BINDERS:
                pending += 1
            elif token.text in _PROOF_ENDERS:
                return -1
    return -1


def find_top_level_assign(source: str, start: int = 0) -> int:
    """Index of the ``:=`` that ends the signature of the declaration beginning at index
    ``start`` (its doc comment, attributes, modifiers or keyword); -1 when it has none.

    A ``:=`` inside brackets (a binder's default value ``(a : Char := ')')``, a structure
    instance, ``instance (priority := low)``), in a comment, string or char literal, or bound by
    a ``let``/``have`` of the statement itself (``let x ← e`` of ``do`` notation has none) is not
    the declaration's. The search stops at the
    next top-level command and at a ``where``/``termination_by``/``decreasing_by`` at depth 0
    (``instance : C where x := 1`` has no ``:=`` proof).
    """
    code = _command_code(source, start)
    j = _assign_index(code)
    return code[j].start if j >= 0 else -1


def proof_span(source: str, start: int = 0) -> tuple[int, int] | None:
    """``(begin, end)`` string indices (end exclusive) of the proof of the declaration beginning
    at index ``start``: from the first code token after its top-level ``:=`` (see
    :func:`find_top_level_assign`) to the end of its last code token before the next top-level
    command or a ``where``/``termination_by``/``decreasing_by`` at depth 0. Comments after it are
    not part of it. None when the declaration has no ``:=`` proof.

    ``source[:begin] + new_proof + source[end:]`` writes a proof back (e.g. in place of
    ``sorry``)."""
    code = _command_code(source, start)
    j = _assign_index(code)
    if j < 0 or j + 1 == len(code):
        return None
    stop = len(code)
    for i in _depth_zero(code, j + 1):
        if code[i].kind == "ident" and code[i].text in _PROOF_ENDERS:
            stop = i
            break
    if stop == j + 1:
        return None
    return code[j + 1].start, code[stop - 1].end


def strip_leading_by(text: str) -> str | None:
    """``text`` after its leading ``by`` keyword (white space before it skipped), or None when
    ``text`` does not start with ``by`` (``byContra``, ``by_cases`` do not count)."""
    stripped = text.lstrip()
    if stripped.startswith("by") and (len(stripped) == 2 or stripped[2].isspace()):
        return stripped[2:]
    return None
