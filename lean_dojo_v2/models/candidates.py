"""Layer 2 (models): the one clean-up of proposed tactics or proofs, shared by the generators and
proof search.

A generator's raw samples, and whatever a search receives from any generator, become the
contract's candidate list the same way (:func:`clean_candidates`): unusable entries dropped,
duplicates merged keeping the best log-prob, sorted best first, cut to ``num_samples``. The two
callers differ only in how strict they are, which the keyword arguments say:

- :func:`~lean_dojo_v2.models.generator.finalize` (a generator's own output): exact text as the
  duplicate key, ``sorry``/``admit`` and non-finite scores dropped (the defaults);
- search (any generator's output, already checked for shape): texts equal up to white space are
  duplicates, and only empty tactics and NaN scores are dropped — a user's generator may send
  ``-inf``, and search does not second-guess its ``sorry`` (``verify`` rejects it anyway).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Protocol, TypeVar

# "sorry"/"admit"/"sorryAx" as words: `sorry_lemma`, `h.sorry_free` and `my_admit'` are names.
_FORBIDDEN = re.compile(r"(?<![\w.'])(sorry|admit|sorryAx)(?![\w'])")


class Scored(Protocol):
    """Anything with a tactic text and its log-probability (``Candidate`` and look-alikes)."""

    @property
    def tactic(self) -> str: ...

    @property
    def logprob(self) -> float: ...


C = TypeVar("C", bound=Scored)


def is_forbidden(tactic: str) -> bool:
    """Whether ``tactic`` uses ``sorry``, ``admit`` or ``sorryAx`` (as words: ``sorry_lemma`` is a name)."""
    return _FORBIDDEN.search(tactic) is not None


def clean_candidates(
    candidates: Iterable[C],
    num_samples: int,
    *,
    drop_forbidden: bool = True,
    finite_only: bool = True,
    merge_whitespace: bool = False,
) -> list[C]:
    """The best ``num_samples`` distinct ``candidates``, best first.

    Dropped: empty (white space only) tactics; NaN log-probs, and with ``finite_only`` every
    non-finite one; with ``drop_forbidden`` tactics using ``sorry``/``admit``
    (:func:`is_forbidden`). Duplicates are candidates with the same tactic text (with
    ``merge_whitespace``: the same up to white space); of these the one with the highest log-prob
    stays, the first one of equals. Equal log-probs keep the order in which their text first
    appeared, so the result does not depend on the sort's whims. The objects kept are returned as
    they are (their text is not normalised)."""
    best: dict[str, C] = {}
    for cand in candidates:
        tactic, lp = cand.tactic, cand.logprob
        if not tactic.strip() or math.isnan(lp):
            continue
        if finite_only and math.isinf(lp):
            continue
        if drop_forbidden and is_forbidden(tactic):
            continue
        key = " ".join(tactic.split()) if merge_whitespace else tactic
        kept = best.get(key)
        if kept is None or lp > kept.logprob:
            best[key] = cand
    ranked = sorted(best.values(), key=lambda c: -c.logprob)
    return ranked[:num_samples]


__all__ = ["Scored", "clean_candidates", "is_forbidden"]
