"""Layer 3 (lean_progress): LeanProgress rows from traced theorems (:func:`progress_examples`),
one per traced tactic, labelled by :mod:`.labels`. The row type and its JSONL writer and reader
are the data layer's (:mod:`lean_dojo_v2.data.progress_jsonl`; the package offers them too)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..data.goals import clean_state
from ..data.model import Theorem
from ..data.progress_jsonl import ProgressExample
from .labels import label_tactics


def progress_examples(theorems: Iterable[Theorem]) -> Iterator[ProgressExample]:
    """One :class:`ProgressExample` per traced tactic of each theorem (term-mode theorems give
    none), labelled by :func:`~lean_dojo_v2.lean_progress.labels.label_tactics`."""
    for theorem in theorems:
        tactics = theorem.traced_tactics
        if not tactics:
            continue
        for label in label_tactics(tactics):
            t = tactics[label.index]
            yield ProgressExample(
                goal=clean_state(t.state_before),
                prefix="\n".join(tactics[k].tactic for k in label.prefix),
                tactic=t.tactic,
                steps_remaining=label.steps_remaining,
                theorem=theorem.full_name,
                file_path=theorem.file_path,
            )


__all__ = ["progress_examples"]
