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
from collections.abc import Iterable, Iterator
from typing import NamedTuple

# fmt: off
__all__ = [
    "COMMANDS", "COMMENT_KINDS", "DECL_KINDS", "LEAN_SPACE", "MODIFIERS", "Command",
    "DeclarationContext", "Positions", "Token", "declaration_context", "find_top_level_assign",
    "header_end", "index_of", "is_command_start", "iter_commands", "iter_tokens", "proof_span",
    "shared_margin", "skip_group", "skip_header", "strip_leading_by", "tokenize",
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


# ----------------------------------------------------------------------------- white space

LEAN_SPACE = " "
"""The one character Lean 4 reads as white space within a line; lines end in ``\\n`` or
``\\r\\n``. A tab and a lone ``\\r`` are errors to Lean ("tabs are not allowed", "isolated
carriage returns are not allowed"); any other Unicode space (U+00A0, U+2000–U+200A, U+202F,
U+205F, U+3000, U+FEFF, …) is no white space to Lean (a lexing error, or part of a name). Text
is normalised over Lean's white space alone, so normalising never changes Lean's verdict."""

# A leading `by`: Lean's white space before it, and after it (or the end of the text).
_LEADING_BY = re.compile(r"(?: |\r?\n)*by(?= |\r?\n|\Z)")


def strip_leading_by(text: str) -> str | None:
    """``text`` after its leading ``by`` keyword (Lean's white space before it skipped), or None
    when ``text`` does not start with ``by`` (``byContra``, ``by_cases`` do not count, nor a
    ``by`` beside a tab or a Unicode space, which Lean refuses)."""
    by = _LEADING_BY.match(text)
    return text[by.end() :] if by else None


def shared_margin(lines: Iterable[str]) -> int:
    """How many spaces of indentation every non-empty line of ``lines`` shares (0 for none).
    Spaces only: a shared tab is no indentation Lean accepts, so it is never removed."""
    return min((len(line) - len(line.lstrip(LEAN_SPACE)) for line in lines if line), default=0)


# ----------------------------------------------------------------------------- commands


class Command(NamedTuple):
    """A top-level command of a file (see :func:`iter_commands`).

    ``start``/``end``: string indices of its first and just past its last code token (its header
    included: doc comment, attributes, modifiers, ``open … in``/``set_option … in`` prefixes).
    ``keyword``: the word after that header (``theorem``, ``namespace``, ``variable``, ``open``…;
    ``""`` for a header with nothing after it), at index ``keyword_start``. ``modifiers``: the
    header's modifiers (``local``, ``noncomputable``…). ``prefixes``: ``(start, end)`` of each
    ``open … in``/``set_option … in`` prefix. ``code``: the command's code tokens."""

    start: int
    end: int
    keyword: str
    keyword_start: int
    modifiers: tuple[str, ...]
    prefixes: tuple[tuple[int, int], ...]
    code: tuple[Token, ...]


def _at_line_start(token: Token, source: str) -> bool:
    return token.start == 0 or source[token.start - 1] == "\n"


def _prefix_in(code: list[Token], k: int, source: str) -> int | None:
    """Index after the ``in`` ending the ``open …``/``set_option …`` prefix at ``code[k]``, or
    None when that command has no ``in``: the search stops at the next command start and at any
    token in column 1 (``open Real`` on its own line is not a prefix of a later ``∑ i in s``)."""
    for j in range(k + 1, min(len(code), k + 64)):
        token = code[j]
        if _at_line_start(token, source):
            return None
        if token.kind == "ident" and token.text == "in":
            return j + 1
        if token.kind in _COMMAND_KINDS or (token.kind == "ident" and token.text in _STARTERS):
            return None
    return None


def _parse_header(
    code: list[Token], source: str
) -> tuple[int, tuple[str, ...], tuple[tuple[int, int], ...]]:
    """(index of the keyword, modifiers, ``… in`` prefix spans) of a command's code tokens."""
    k, modifiers, prefixes = 0, [], []
    while k < len(code):
        token = code[k]
        if token.kind == "doc":
            k += 1
        elif token.kind == "attr":
            k = skip_group(code, k, ("@[", "["), "]")
        elif token.kind == "ident" and token.text in MODIFIERS:
            modifiers.append(token.text)
            k += 1
            if token.text == "scoped" and k < len(code) and code[k].text == "[":
                k = skip_group(code, k, ("[",), "]")  # Mathlib's ``scoped[NS] notation``
        elif token.text in ("open", "set_option") and (after := _prefix_in(code, k, source)):
            prefixes.append((token.start, code[after - 1].end))
            k = after
        else:
            break
    return k, tuple(modifiers), tuple(prefixes)


def iter_commands(source: str) -> Iterator[Command]:
    """The top-level commands of ``source`` in order.

    A command starts at a column-1 token that :func:`is_command_start` accepts and runs to the
    next one; a header on its own lines (doc comment, ``@[simp]``, ``open Foo in``) belongs to
    the command that follows it, as in Lean. After a command without a body of terms
    (``variable``, ``open``, ``namespace``, ``end``, ``attribute``, ``local notation``…) any word in
    column 1 also starts a command, so a project's own command (``alias``,
    ``assert_not_exists``) is never read as part of it. Text before the first command is not
    a command."""

    def finish(code: list[Token]) -> Command:
        k, modifiers, prefixes = _parse_header(code, source)
        keyword, at = (code[k].text, code[k].start) if k < len(code) else ("", code[-1].end)
        return Command(code[0].start, code[-1].end, keyword, at, modifiers, prefixes, tuple(code))

    code: list[Token] = []
    for token in iter_tokens(source):
        if token.kind in ("line", "block"):
            continue
        if code and _at_line_start(token, source):
            k = _parse_header(code, source)[0]
            if k < len(code) and (
                is_command_start(token, source)
                or (token.kind == "ident" and code[k].text in _TERMLESS)
            ):
                yield finish(code)
                code = []
        if code or is_command_start(token, source):
            code.append(token)
    if code:
        yield finish(code)


def header_end(source: str) -> int:
    """Index just past the file header: the ``module``/``prelude``/``import`` lines that open a
    file (``public import``, ``meta import`` and ``import all`` included); 0 when there is none.
    Comments before and between them belong to the header."""
    end = 0
    lines: dict[int, list[Token]] = {}
    for token in iter_tokens(source):
        if token.kind in COMMENT_KINDS:
            continue
        line = source.count("\n", 0, token.start)
        if not lines or line in lines:
            lines.setdefault(line, []).append(token)
            continue
        if not _is_header_line(lines[max(lines)]):
            break
        end = lines[max(lines)][-1].end
        lines[line] = [token]
    else:
        if lines and _is_header_line(lines[max(lines)]):
            end = lines[max(lines)][-1].end
    return end


def _is_header_line(tokens: list[Token]) -> bool:
    words = [t.text for t in tokens]
    if words[0] in ("module", "prelude") and len(words) == 1:
        return True
    while words and words[0] in ("public", "private", "meta"):
        words = words[1:]
    return bool(words) and words[0] == "import"


# Commands whose effect is scoped to the enclosing section or namespace and that an imported
# module does not bring back: re-running them rebuilds a declaration's context.
_SCOPE_OPENERS = frozenset({"namespace", "section"})
_CONTEXT_KEYWORDS = frozenset(
    {"open", "variable", "universe", "set_option", "omit", "include", "end"} | _SCOPE_OPENERS
)
_LOCAL_SYNTAX = frozenset({
    "notation", "notation3", "infix", "infixl", "infixr", "prefix", "postfix", "macro",
    "macro_rules", "syntax", "elab", "elab_rules",
})  # fmt: skip
# Commands without a term body: a word in column 1 after them starts the next command.
_TERMLESS = _CONTEXT_KEYWORDS | {"attribute", "mutual", "export", "import"}


def _is_context_command(command: Command) -> bool:
    """Whether ``command`` shapes the context of the declarations after it (and is not brought
    back by importing its module): ``namespace``/``section``/``end`` (``noncomputable section``
    too), ``open``, ``variable``, ``universe``, ``set_option``, ``omit``, ``include`` (none with an
    ``… in`` prefix, which limits them to themselves), ``local`` notations and macros, and
    ``attribute [local …]`` / ``attribute [-…]``. Global notations, ``scoped`` ones and
    declarations live in the module's environment and are left out."""
    if command.prefixes:
        return False
    keyword = command.keyword
    if keyword in _CONTEXT_KEYWORDS:
        return not command.modifiers or keyword == "section"
    if keyword in _LOCAL_SYNTAX:
        return "local" in command.modifiers
    if keyword == "attribute":
        code = command.code
        k = next((i for i, t in enumerate(code) if t.start == command.keyword_start), 0) + 1
        if k < len(code) and code[k].text == "[":
            inside = code[k + 1 : skip_group(list(code), k, ("[",), "]") - 1]
            return any(t.text == "local" or t.text.startswith("-") for t in inside)
    return False


def _name_components(command: Command) -> int:
    """Components of the name after ``namespace``/``section``/``end`` (0 without a name)."""
    code = command.code
    k = next((i for i, t in enumerate(code) if t.start == command.keyword_start), len(code))
    if k + 1 < len(code) and code[k + 1].kind == "ident":
        return code[k + 1].text.count(".") + 1
    return 0


class DeclarationContext(NamedTuple):
    """What surrounds the declaration that :func:`declaration_context` looked up.

    ``command``: the declaration's own command (its header, ``… in`` prefixes included).
    ``context``: the context commands still in effect at it, in file order (see
    :func:`declaration_context`). ``mutual``: the ``mutual`` block it lies in, if any (its start
    and, if closed, the end of its ``end``; otherwise -1)."""

    command: Command
    context: tuple[Command, ...]
    mutual: tuple[int, int] | None


def declaration_context(source: str, start: int) -> DeclarationContext:
    """The context of the declaration at index ``start`` of ``source`` (its keyword, as
    LeanDojo's theorem start, or any index inside its header).

    The context is every context command before it that is still in effect there: ``namespace``,
    ``section`` (``noncomputable section``), ``open`` (``open scoped`` too), ``variable``,
    ``universe``, ``set_option``, ``omit``, ``include``, ``local notation``/``local macro``…, and
    ``attribute [local …]``; the commands of a scope closed by its ``end`` are dropped with it,
    as they no longer apply. Declarations, global and ``scoped`` notations are not context (an
    imported module brings them). The declaration's own ``open … in``/``set_option … in``
    prefixes stay in ``command``. Text run through these commands in order, then the
    declaration, elaborates the declaration as in its file (given the file's imports). Raises
    ``ValueError`` when no command lies at ``start``."""
    # Each frame: the commands of one open scope (``namespace``/``section``/``mutual`` …
    # ``end``), the number of name components it opened, and whether it is a ``mutual`` block.
    frames: list[tuple[list[Command], int, bool]] = [([], 0, False)]
    mutual_start = None
    for command in iter_commands(source):
        if command.start <= start < max(command.end, command.keyword_start + 1):
            mutual = None
            if frames[-1][2]:
                mutual = (mutual_start or 0, _mutual_end(source, command.end))
            context = tuple(c for frame in frames for c in frame[0])
            return DeclarationContext(command, context, mutual)
        if command.start > start:
            break
        keyword = command.keyword
        if keyword == "mutual" and not command.prefixes:
            frames.append(([], 0, True))
            mutual_start = command.start
        elif frames[-1][2]:  # inside a mutual block: declarations, then its ``end``
            if keyword == "end":
                frames.pop()
        elif not _is_context_command(command):
            continue
        elif keyword in _SCOPE_OPENERS:
            frames.append(([command], _name_components(command), False))
        elif keyword == "end":
            _close_scope(frames, command, _name_components(command))
        else:
            frames[-1][0].append(command)
    raise ValueError(f"no command at index {start}")


def _close_scope(
    frames: list[tuple[list[Command], int, bool]], end: Command, components: int
) -> None:
    """Drop the scopes ``end`` closes with their commands; when the scopes do not line up
    (``end B`` after ``namespace A.B``), keep every command so replaying them does the same."""
    closed = 0
    popped: list[tuple[list[Command], int, bool]] = []
    while len(frames) > 1 and (closed < components or not popped):
        frame = frames.pop()
        popped.append(frame)
        closed += frame[1]
        if components == 0:
            break
    if closed == components or (components == 0 and popped and popped[-1][1] == 0):
        return
    kept = [c for frame in reversed(popped) for c in frame[0]]
    frames[-1][0].extend([*kept, end])


def _mutual_end(source: str, after: int) -> int:
    """End of the ``end`` command closing the ``mutual`` block that continues at ``after``
    (-1 when the file ends first)."""
    for command in iter_commands(source):
        if command.start >= after and command.keyword == "end":
            return command.end
    return -1


def tactic_block_lines(proof: str) -> list[str]:
    """The lines of a tactic proof's block, dedented, without a leading ``by`` (``\r\n`` read
    as ``\n``, as Lean reads it). ``by tac1\n  tac2`` (a first tactic on the ``by`` line) puts
    ``tac1`` at the level of the least indented line after it. Only Lean's white space
    (:data:`LEAN_SPACE`, line breaks) is touched: a tab, a lone ``\r`` or a Unicode space stays
    for Lean to judge (removing a tab every line shares would pass a proof Lean refuses)."""
    body = proof.replace("\r\n", "\n").strip("\n")
    after_by = strip_leading_by(body)
    if after_by is not None:
        first, _, rest = after_by.partition("\n")
        if first.strip(LEAN_SPACE):
            rest = _dedented(rest)
            return [first.strip(LEAN_SPACE), *(rest.split("\n") if rest else [])]
        body = rest
    return _dedented(body).split("\n")


def _dedented(text: str) -> str:
    """``text`` less the indentation its lines share (:func:`shared_margin`); lines of spaces
    alone made empty and blank lines at its ends dropped (both are nothing to Lean)."""
    lines = [line if line.strip(LEAN_SPACE) else "" for line in text.split("\n")]
    margin = shared_margin(lines)
    return "\n".join(line[margin:] for line in lines).strip("\n")


def tactic_block(proof: str, indent: str = "  ", newline: str = "\n") -> str:
    """``by`` and the tactic block of ``proof`` indented by ``indent`` under it, lines joined by
    ``newline``; blank lines stay empty. What a proof becomes in a file, both where Lean re-checks
    it and where it is written back in place of ``sorry``."""
    lines = tactic_block_lines(proof)
    return "by" + "".join(newline + (indent + line if line else "") for line in lines)
