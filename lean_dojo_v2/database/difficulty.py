"""Theorem difficulty and the LeanAgent curriculum, computed from proof lengths.

LeanAgent's rule (Kumarappan et al., 2024), as the upstream implements it:

- a theorem with an unproved ``sorry`` has difficulty +inf ("Hard (No proof)");
- a theorem with no tactic proof (term mode) has no difficulty ("To_Distribute");
- otherwise the difficulty is ``e ** S`` with ``S`` the number of proof steps (traced tactics, or the
  tactics of the proof we found for a former ``sorry``);
- the 33rd and 67th percentiles (linear interpolation, NumPy's default) of all finite difficulties
  split Easy (<= p33) / Medium (<= p67) / Hard; the thresholds are global over the repositories
  considered, so adding a repository can move another's theorems between categories;
- each repository's To_Distribute theorems are dealt out in order: the first third Easy, the second
  third Medium, the rest Hard;
- repositories are ordered by their number of Easy theorems, most first (ties keep database order).

Differences from the upstream, all for robustness: the percentiles are taken over *finite*
difficulties only (the upstream feeds +inf to ``np.percentile``); with no finite difficulty at all
(every theorem sorry or term-mode) there are no thresholds and nothing crashes; and everything is
computed on ``S`` in log space, so a 1,000-step proof does not overflow ``math.exp``.
Only a histogram of proof lengths is needed, never the theorems themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Category = Literal["easy", "medium", "hard", "hard_no_proof"]
CATEGORIES: tuple[Category, ...] = ("easy", "medium", "hard", "hard_no_proof")
# The upstream's names for the same categories, for reports and the upstream JSON.
UPSTREAM_NAMES = {
    "easy": "Easy",
    "medium": "Medium",
    "hard": "Hard",
    "hard_no_proof": "Hard (No proof)",
}
PERCENTILES = (33.0, 67.0)
_EPS = 1e-9


def theorem_difficulty(steps: int, unproved_sorry: bool = False) -> float | None:
    """``e ** steps``; ``inf`` for an unproved sorry; ``None`` for no tactic proof (steps == 0).

    Proofs longer than 709 steps exceed the float range and also give ``inf``; categories do not
    depend on this (see :func:`categorize_steps`)."""
    if unproved_sorry:
        return math.inf
    if steps <= 0:
        return None
    try:
        return math.exp(steps)
    except OverflowError:
        return math.inf


def _log_interpolate(s_lo: int, s_hi: int, frac: float) -> float:
    """``log(e**s_lo + frac * (e**s_hi - e**s_lo))`` without overflow."""
    if frac <= 0.0 or s_lo == s_hi:
        return float(s_lo)
    d = s_hi - s_lo
    if d < 700:
        return s_lo + math.log1p(frac * math.expm1(d))
    return s_hi + math.log(frac) + math.log1p((1.0 - frac) / frac * math.exp(-d))


def log_percentile(histogram: Mapping[int, int], q: float) -> float:
    """``log(np.percentile([e**s for each theorem], q))`` from a histogram ``{steps: count}``."""
    items = sorted((s, c) for s, c in histogram.items() if c > 0)
    n = sum(c for _, c in items)
    if n == 0:
        raise ValueError("percentile of an empty histogram")
    index = q / 100.0 * (n - 1)
    lo = math.floor(index)
    hi = min(lo + 1, n - 1)
    frac = index - lo

    def value_at(rank: int) -> int:
        seen = 0
        for s, c in items:
            seen += c
            if rank < seen:
                return s
        return items[-1][0]

    return _log_interpolate(value_at(lo), value_at(hi), frac)


@dataclass(frozen=True)
class Thresholds:
    """The Easy/Medium/Hard cut-offs, as logs of the difficulty percentiles (``log p33``,
    ``log p67``); ``None`` when there is no finite difficulty."""

    log_p33: float | None
    log_p67: float | None

    @classmethod
    def from_histogram(cls, histogram: Mapping[int, int]) -> Thresholds:
        """``histogram``: number of theorems per proof length, over finite difficulties only
        (``steps >= 1``, no unproved sorry)."""
        finite = {s: c for s, c in histogram.items() if s >= 1 and c > 0}
        if not finite:
            return cls(None, None)
        return cls(log_percentile(finite, PERCENTILES[0]), log_percentile(finite, PERCENTILES[1]))

    @property
    def percentiles(self) -> tuple[float, float] | None:
        """The thresholds as difficulties (``e ** log``), as the upstream reports them."""
        if self.log_p33 is None or self.log_p67 is None:
            return None
        return (_exp(self.log_p33), _exp(self.log_p67))

    @property
    def max_easy_steps(self) -> int | None:
        """The longest proof that is Easy (``e**S <= p33`` ⇔ ``S <= log p33``)."""
        return None if self.log_p33 is None else math.floor(self.log_p33 + _EPS)

    @property
    def max_medium_steps(self) -> int | None:
        return None if self.log_p67 is None else math.floor(self.log_p67 + _EPS)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def categorize_steps(steps: int, thresholds: Thresholds) -> Category | None:
    """Category of a theorem with a finite difficulty ``e ** steps`` (``steps >= 1``); ``None`` for
    ``steps == 0`` (To_Distribute)."""
    if steps <= 0:
        return None
    easy, medium = thresholds.max_easy_steps, thresholds.max_medium_steps
    if easy is None or medium is None:  # cannot happen for a finite theorem; be safe
        return "hard"
    if steps <= easy:
        return "easy"
    if steps <= medium:
        return "medium"
    return "hard"


def distribute(count: int) -> tuple[int, int, int]:
    """How ``count`` To_Distribute theorems are dealt: (easy, medium, hard). The upstream gives
    ``count // 3`` to Easy and Medium and the rest to Hard."""
    chunk = count // 3
    return chunk, chunk, count - 2 * chunk


def distributed_category(rank: int, count: int) -> Category:
    """Category of the ``rank``-th (0-based, database order) of a repository's ``count``
    To_Distribute theorems."""
    chunk = count // 3
    if rank < chunk:
        return "easy"
    if rank < 2 * chunk:
        return "medium"
    return "hard"


@dataclass
class RepositoryDifficulty:
    """Counts per category for one repository version."""

    repository_id: int
    url: str
    commit: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))

    @property
    def num_easy(self) -> int:
        return self.counts["easy"]

    def to_dict(self) -> dict[str, object]:
        return {"url": self.url, "commit": self.commit, **self.counts}


@dataclass
class Curriculum:
    """The result of :meth:`DynamicDatabase.curriculum`: repositories in training order."""

    thresholds: Thresholds
    repositories: list[RepositoryDifficulty]

    def to_dict(self) -> dict[str, object]:
        pct = self.thresholds.percentiles
        return {
            "percentiles": list(pct) if pct is not None else None,
            "max_easy_steps": self.thresholds.max_easy_steps,
            "max_medium_steps": self.thresholds.max_medium_steps,
            "repositories": [r.to_dict() for r in self.repositories],
        }


def order_repositories(stats: list[RepositoryDifficulty]) -> list[RepositoryDifficulty]:
    """Most Easy theorems first; ties keep the given order (Python's sort is stable)."""
    return sorted(stats, key=lambda r: r.num_easy, reverse=True)
