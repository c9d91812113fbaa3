"""The ``<a>…</a>`` marks LeanDojo puts around resolved identifiers in annotated tactics."""

from __future__ import annotations

import re

MARK_START = "<a>"
MARK_END = "</a>"
_MARKED = re.compile(r"<a>(.*?)</a>", re.DOTALL)


def remove_marks(text: str) -> str:
    """The text with every ``<a>`` / ``</a>`` mark removed (identifiers kept)."""
    if MARK_START not in text and MARK_END not in text:
        return text
    return text.replace(MARK_START, "").replace(MARK_END, "")


def marked_identifiers(text: str) -> list[str]:
    """The identifiers between marks, in order, repeats included (one per provenance entry)."""
    return _MARKED.findall(text)
