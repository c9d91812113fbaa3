"""Layer 4 (evaluation): the text of a benchmark problem — checked, cleaned, and normalised for
comparison.

- :func:`check_statement`: a formal statement a prover can be given, or a
  :class:`~.errors.StatementError` saying why not (no ``theorem``/``lemma``/``def`` name or
  ``example``, unbalanced brackets, no ``:=``); it comes back ending in ``:= by``, the form every
  mode completes with a tactic proof;
- :func:`remove_comments`: Lean comments taken out (PutnamBench's files carry the expected answer
  in a comment: it must never reach a model);
- :func:`normalise_proof`, :func:`normalise_statement`, :func:`normalise_header`: the forms two
  texts are compared in by the recorded verifier and the verdict cache: "the same up to white
  space", where white space is only what Lean reads as such (ASCII space and line breaks; a tab
  or a Unicode space is a character of the text), and only where it cannot change Lean's verdict.
"""

from __future__ import annotations

import re

from ..data.lean_lexer import (
    COMMENT_KINDS,
    LEAN_SPACE,
    Token,
    find_top_level_assign,
    shared_margin,
    strip_leading_by,
    tokenize,
)
from .errors import StatementError

__all__ = [
    "check_statement",
    "normalise_header",
    "normalise_proof",
    "normalise_statement",
    "remove_comments",
]

# ProofNet asks for some constructions (`def exercise_2_1_21 … : CommGroup G :=`), proved with
# tactics all the same.
_DECLARATION = re.compile(
    r"(?<![\w.'])(?:(?:theorem|lemma|def|abbrev|instance)\s+(?:«[^»]*»|[^\s(\[{⦃⟨:]+)"
    r"|example(?![\w'!?]))"
)
_PAIRS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⦃": "⦄", "⟦": "⟧"}


def remove_comments(text: str, *, spaces: str | None = None) -> str:
    """``text`` without its Lean comments (``--``, ``/- -/``, doc comments): each comment taken
    out, lines left blank by it dropped, trailing white space removed (``spaces``: the
    characters removed there; None: any Unicode white space)."""
    parts: list[str] = []
    last = 0
    for token in tokenize(text):
        if token.kind in COMMENT_KINDS:
            parts.append(text[last : token.start])
            last = token.end
    parts.append(text[last:])
    lines: list[str] = []
    for line in "".join(parts).split("\n"):
        stripped = line.rstrip(spaces)
        # runs of blank lines (a comment's lines among them) become one: it separates commands
        if not stripped and lines and not lines[-1]:
            continue
        lines.append(stripped)
    return "\n".join(lines).strip("\n") + ("\n" if text.endswith("\n") else "")


def _unbalanced(text: str) -> str | None:
    """The first bracket that does not close or open, as ``'(' at line 3``, or None."""
    stack: list[tuple[str, int]] = []
    for token in tokenize(text):
        if token.kind != "other":
            continue
        for k, ch in enumerate(token.text):
            at = token.start + k
            if ch in _PAIRS:
                stack.append((ch, at))
            elif ch in _PAIRS.values():
                if not stack or _PAIRS[stack[-1][0]] != ch:
                    return f"{ch!r} at line {text.count(chr(10), 0, at) + 1} closes nothing"
                stack.pop()
    if stack:
        ch, at = stack[-1]
        return f"{ch!r} at line {text.count(chr(10), 0, at) + 1} is never closed"
    return None


def check_statement(statement: str, where: str = "the statement") -> str:
    """``statement`` made the form a prover completes: the declaration up to its top-level
    ``:=``, then ``:= by`` (a ``:= sorry`` or ``:= by sorry`` placeholder is dropped). Raises
    :class:`StatementError` (naming ``where``) when it does not parse as a statement."""
    text = remove_comments(statement).strip()
    if not _DECLARATION.search(text):
        raise StatementError(
            f"{where} does not declare `theorem NAME`, `lemma NAME`, `def NAME` or `example`: "
            "give the Lean declaration (e.g. `theorem foo (n : ℕ) : n + 0 = n := by`), got "
            f"{_short(text)}"
        )
    problem = _unbalanced(text)
    if problem is not None:
        raise StatementError(f"{where} has unbalanced brackets ({problem}); fix the statement")
    cut = find_top_level_assign(text)
    if cut < 0:
        raise StatementError(
            f"{where} has no top-level `:=` after its type: end it with `:= by` (got "
            f"{_short(text)})"
        )
    return text[:cut].rstrip() + " := by"


def _short(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return repr(one_line if len(one_line) <= limit else one_line[: limit - 1] + "…")


def _words(text: str) -> str:
    """``text`` with each run of Lean's white space (ASCII space, line breaks) made one space.
    Only these: a tab, a no-break or ideographic space is no white space to Lean (a tab is an
    error, the others are not separators), so a text holding one is another text."""
    return " ".join(w for w in re.split(f"[{LEAN_SPACE}\n]+", text.replace("\r\n", "\n")) if w)


def normalise_statement(statement: str) -> str:
    """A statement's comparison form: comments out, everything up to its top-level ``:=``, runs
    of Lean's white space made one space (white space between a statement's tokens never changes
    it)."""
    text = remove_comments(statement, spaces=" \r")
    cut = find_top_level_assign(text)
    return _words(text[:cut] if cut >= 0 else text)


def normalise_header(header: str) -> str:
    """A header's comparison form: comments out, each line's runs of Lean's white space made one
    space, blank lines dropped (commands of a header are one a line)."""
    lines = (_words(line) for line in remove_comments(header, spaces=" \r").split("\n"))
    return "\n".join(line for line in lines if line)


def normalise_proof(proof: str) -> str:
    """A tactic proof's comparison form, keeping everything that can change Lean's verdict.

    Removed: a leading ``by``; ``--`` comments that follow a space or start a line (white space
    to Lean up to the line's end); spaces at line ends and blank lines; the indentation every
    line shares (a proof is re-indented under its ``by`` when it is checked). ``\r\n`` is read
    as ``\n`` (Lean reads files so). Kept exactly: indentation relative to the block (it decides
    which tactic belongs to which goal), spaces inside a line (``·  simp`` puts ``simp`` at
    another column than ``· simp``, and the tactics under it must line up with it), tabs (an
    error to Lean), any other character, Unicode spaces included (no white space to Lean), and
    block comments (an unterminated one is an error; removing one can move a token). A proof
    holding a string literal across lines is compared as written: its spaces and blank lines
    are the string's value."""
    text = proof.replace("\r\n", "\n")
    after_by = strip_leading_by(text)
    body = text if after_by is None else after_by
    tokens = tokenize(body)
    if any(t.kind == "string" and "\n" in t.text for t in tokens):
        return text
    lines = [line.rstrip(LEAN_SPACE) for line in _without_line_comments(body, tokens).split("\n")]
    # A tactic on the `by` line stands first, at the block's indentation (as it is checked).
    head = [lines.pop(0).lstrip(LEAN_SPACE)] if after_by is not None and lines[0] else []
    kept = [line for line in lines if line]
    margin = shared_margin(kept)
    return "\n".join(head + [line[margin:] for line in kept])


def _without_line_comments(text: str, tokens: list[Token]) -> str:
    """``text`` without the ``--`` comments that follow a space or start a line: Lean reads
    those as comments whatever came before (after other characters, ``--`` may be part of a
    token, so those are kept)."""
    parts: list[str] = []
    last = 0
    for t in tokens:
        if t.kind == "line" and (t.start == 0 or text[t.start - 1] in " \n"):
            parts.append(text[last : t.start])
            last = t.end
    parts.append(text[last:])
    return "".join(parts)
