"""Layer 3 (prover): triage before write-back — is a theorem about a placeholder?

A ``sorry`` in a *definition* (``def rate : ℝ := sorry``) is a placeholder: a theorem whose
statement mentions it can be "proved" by facts about an opaque constant, and LeanAgent's pull
requests showed such proofs are artefacts (upstream notes §5.4). :func:`placeholder_dependencies`
finds, for each theorem, the ``sorry`` declarations of its repository that its statement names;
the proving pipeline (:mod:`.pipeline`) reports those theorems as ``depends_on_sorry`` and does
not write their proofs back unless asked. Only the source text is read (the lexer of
:mod:`lean_dojo_v2.data.sorry`); Lean is not needed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..data.lean_lexer import find_top_level_assign, index_of, tokenize
from ..data.model import Theorem
from ..data.sorry import find_declarations

# Declarations whose statement is what a proof is about, not a placeholder for a value.
_PROPOSITIONS = frozenset({"theorem", "lemma", "example"})
_SKIP_DIRS = frozenset({".git", ".lake", "lake-packages", "build"})


def placeholder_declarations(root: str | os.PathLike[str]) -> dict[str, str]:
    """Every declaration under ``root`` (``.lean`` files, build folders skipped) that is not a
    theorem and holds a ``sorry``: full name → file (relative to ``root``)."""
    root = Path(root)
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        for name in filenames:
            if not name.endswith(".lean"):
                continue
            path = Path(dirpath) / name
            try:
                text = path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "sorry" not in text:  # the lexer only where it can find something
                continue
            for d in find_declarations(text):
                if d.has_sorry and d.name and d.kind not in _PROPOSITIONS:
                    found[d.name] = path.relative_to(root).as_posix()
    return found


def statement_text(source: str, theorem: Theorem) -> str | None:
    """The declaration text of ``theorem`` up to its top-level ``:=`` (None when not found)."""
    candidates = [
        d for d in find_declarations(source) if d.name and _same_name(d.name, theorem.full_name)
    ]
    if not candidates:
        return None
    line = theorem.start.line_nb if theorem.start is not None else 0
    decl = min(candidates, key=lambda d: abs(d.start[0] - line))
    begin = index_of(source, *decl.start)
    end = find_top_level_assign(source, begin)
    return source[begin:end] if end > begin else None


def _same_name(declared: str, full_name: str) -> bool:
    return declared == full_name or full_name.endswith("." + declared)


def _mentions(identifier: str, name: str) -> bool:
    return identifier == name or name.endswith("." + identifier) or identifier.endswith("." + name)


def placeholder_dependencies(
    root: str | os.PathLike[str], theorems: Iterable[Theorem]
) -> dict[str, list[str]]:
    """For each theorem of ``theorems`` (files relative to ``root``) whose statement names a
    placeholder (:func:`placeholder_declarations`): its full name → the placeholders named."""
    root = Path(root)
    placeholders = placeholder_declarations(root)
    if not placeholders:
        return {}
    out: dict[str, list[str]] = {}
    sources: dict[str, str | None] = {}
    for theorem in theorems:
        if theorem.file_path not in sources:
            try:
                sources[theorem.file_path] = (root / theorem.file_path).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                sources[theorem.file_path] = None
        source = sources[theorem.file_path]
        text = theorem.theorem_statement or (statement_text(source, theorem) if source else None)
        if not text:
            continue
        idents = {t.text for t in tokenize(text) if t.kind == "ident"}
        own = theorem.full_name
        used = sorted(
            name
            for name in placeholders
            if not _same_name(name, own) and any(_mentions(i, name) for i in idents)
        )
        if used:
            out[theorem.full_name] = used
    return out


__all__ = ["placeholder_declarations", "placeholder_dependencies", "statement_text"]
