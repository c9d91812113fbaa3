"""Layer 4 (evaluation): the text of a benchmark problem — checked, cleaned, and normalised for
comparison.

- :func:`check_statement`: a formal statement a prover can be given, or a
  :class:`~.errors.StatementError` saying why not (no ``theorem``/``lemma``/``def`` name or
  ``example``, unbalanced brackets, no ``:=``); it comes back ending in ``:= by``, the form every
  mode completes with a tactic proof;
- :func:`remove_comments`: Lean comments taken out (PutnamBench's files carry the expected answer
  in a comment: it must never reach a model);
- :func:`normalise_proof`, :func:`normalise_statement`, :func:`normalise_header`: the forms two
  texts are compared in ("the same up to white space") by the recorded verifier and the verdict
  cache.
"""

from __future__ import annotations

import re

from ..data.lean_lexer import COMMENT_KINDS, find_top_level_assign, tactic_block_lines, tokenize
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


def remove_comments(text: str) -> str:
    """``text`` without its Lean comments (``--``, ``/- -/``, doc comments): each comment taken
    out, lines left blank by it dropped, trailing white space removed."""
    parts: list[str] = []
    last = 0
    for token in tokenize(text):
        if token.kind in COMMENT_KINDS:
            parts.append(text[last : token.start])
            last = token.end
    parts.append(text[last:])
    lines: list[str] = []
    for line in "".join(parts).split("\n"):
        stripped = line.rstrip()
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


def normalise_statement(statement: str) -> str:
    """A statement's comparison form: comments out, everything up to its top-level ``:=``, white
    space runs made one space (white space between a statement's tokens never changes it)."""
    text = remove_comments(statement)
    cut = find_top_level_assign(text)
    return " ".join((text[:cut] if cut >= 0 else text).split())


def normalise_header(header: str) -> str:
    """A header's comparison form: comments out, each line's white space runs made one space,
    blank lines dropped (commands of a header are one a line)."""
    lines = (" ".join(line.split()) for line in remove_comments(header).split("\n"))
    return "\n".join(line for line in lines if line)


def normalise_proof(proof: str) -> str:
    """A tactic proof's comparison form: the block without a leading ``by``, dedented, comments
    out, blank lines dropped, trailing white space and runs of spaces inside a line removed.
    Indentation relative to the block is kept: in Lean it decides which tactic belongs to which
    goal, so two proofs that differ in it are different proofs."""
    lines = tactic_block_lines(remove_comments(proof))
    out = []
    for line in lines:
        body = line.strip()
        if body:
            indent = len(line) - len(line.lstrip())
            out.append(" " * indent + " ".join(body.split()))
    return "\n".join(out)
