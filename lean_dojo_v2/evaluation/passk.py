"""Layer 4 (evaluation): pass@k, the number the field reports.

``pass@k`` is the chance that at least one of ``k`` samples of a problem is correct, estimated
from ``n >= k`` samples of which ``c`` were correct with the unbiased estimator of Chen et al.
2021 ("Evaluating Large Language Models Trained on Code", eq. 1)::

    pass@k = 1 - C(n - c, k) / C(n, k)

averaged over the problems. Sampling exactly ``k`` and counting solved problems estimates the
same number with more variance; the estimator uses every one of the ``n`` samples. The plain
count beside it (:func:`solved_within`) is how many problems have a correct sample among their
first ``k``: what a run that stopped after ``k`` samples would have reported.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["ProblemSamples", "pass_at_k", "pass_at_table", "solved_within"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k for one problem with ``c`` correct of ``n`` samples.

    Computed as the product ``prod_{i=n-c+1}^{n} (1 - k / i)`` (Chen et al.'s numerically stable
    form of ``C(n-c, k) / C(n, k)``), so that ``n`` in the thousands does not overflow."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"pass@k needs whole numbers >= 0, got {name}={value!r}")
    if k < 1 or k > n:
        raise ConfigError(f"pass@k needs 1 <= k <= n, got k={k} with n={n} samples")
    if c > n:
        raise ConfigError(f"pass@k: {c} correct of only {n} samples")
    if n - c < k:  # every k-subset holds a correct sample
        return 1.0
    missing = 1.0
    for i in range(n - c + 1, n + 1):
        missing *= 1.0 - k / i
    return 1.0 - missing


@dataclass(frozen=True)
class ProblemSamples:
    """One problem's samples as pass@k sees them: ``correct``, the sample numbers (0-based, in
    the order they were drawn) that were accepted. A sample the run did not get (the generator
    returned fewer, the search ended in an error) counts as a wrong one: the denominator is
    always the ``n`` asked for."""

    name: str
    correct: frozenset[int]

    @property
    def solved(self) -> bool:
        return bool(self.correct)

    def first_correct(self) -> int | None:
        """The first accepted sample's number, None when none was."""
        return min(self.correct) if self.correct else None


def pass_at_table(problems: Sequence[ProblemSamples], n: int) -> dict[str, float]:
    """``{"1": pass@1, ..., str(n): pass@n}``, each averaged over ``problems`` (a fraction in
    [0, 1]; an empty benchmark gives 0). Linear in ``n``: each distinct number of correct
    samples costs one pass over k (:func:`_pass_at_every_k`), so ``n = 20,000`` takes
    milliseconds where :func:`pass_at_k` for each k and problem took minutes."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"pass@k needs n >= 1 samples per problem, got {n!r}")
    if not problems:
        return {str(k): 0.0 for k in range(1, n + 1)}
    import numpy as np

    total = np.zeros(n)
    for c, count in Counter(_correct_within(p, n) for p in problems).items():
        total += count * _pass_at_every_k(n, c)
    return {str(k): float(v) for k, v in enumerate(total / len(problems), 1)}


def _correct_within(problem: ProblemSamples, n: int) -> int:
    """The correct samples among the first ``n`` (``max`` first: counting is needed only when
    a sample beyond n was kept)."""
    correct = problem.correct
    if not correct or max(correct) < n:
        return len(correct)
    return sum(i < n for i in correct)


def _pass_at_every_k(n: int, c: int) -> NDArray[np.float64]:
    """pass@k of one problem with ``c`` correct of ``n`` samples, for k = 1..n (index k - 1).

    ``C(n-c, k) / C(n, k)`` (the chance that k samples miss every correct one) is the running
    product of ``(n-c-j) / (n-j)`` over j < k: one pass. Each factor lies in [0, 1], so the
    product neither overflows nor loses more than about ``k`` roundings (it agrees with
    :func:`pass_at_k` to about 1e-15); it is 0 once ``k > n - c``, giving 1.0 as there."""
    import numpy as np

    if c == 0:
        return np.zeros(n)
    j = np.arange(n, dtype=np.float64)
    missing = np.cumprod(np.maximum(n - c - j, 0.0) / (n - j))
    return np.asarray(1.0 - missing, dtype=np.float64)


def solved_within(problems: Iterable[ProblemSamples], ks: Iterable[int]) -> dict[str, int]:
    """``{str(k): problems with an accepted sample among their first k}`` for each ``k`` (a
    binary search per k in the sorted first successes: no pass over the problems per k)."""
    firsts = sorted(f for p in problems if (f := p.first_correct()) is not None)
    return {str(k): bisect.bisect_left(firsts, k) for k in ks}
