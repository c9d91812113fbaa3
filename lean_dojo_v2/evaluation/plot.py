"""Layer 4 (evaluation): ``solved.png`` — problems solved against samples (k) and against the
budget spent per problem.

Left: the expected number solved with k samples per problem (pass@k times the problems, the
unbiased estimator) and the plain count (problems with an accepted proof among their first k
samples), k = 1..n. Right: how many problems were solved within a per-problem budget: a
problem counts once the attempts up to its first accepted one had cost at most that many
generator tokens (attempts, where the generator reported no tokens). matplotlib's ``Agg``
backend: no display needed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .summary import EvalResult

log = logging.getLogger(__name__)

PLOT_FILE = "solved.png"

__all__ = ["PLOT_FILE", "budget_curve", "write_plot"]


def budget_curve(result: EvalResult) -> tuple[str, list[tuple[float, int]]]:
    """``(unit, [(budget, problems solved within it), ...])`` for the right panel, from 0 to
    the most any problem spent: the unit is ``"tokens"`` when the generator reported tokens,
    else ``"attempts"``."""
    costs = [p.to_solve for p in result.problems if p.solved and p.to_solve]
    unit = "tokens" if any(c.get("tokens") for c in costs) else "attempts"
    values = sorted(float(c.get(unit) or 0.0) for c in costs)
    curve = [(0.0, 0)] + [(v, i + 1) for i, v in enumerate(values)]
    spent = [
        float(p.budget.tokens_in + p.budget.tokens_out if unit == "tokens" else p.budget.attempts)
        for p in result.problems
    ]
    most = max(spent, default=0.0)
    if most > curve[-1][0]:  # flat to the end: more budget solved nothing more
        curve.append((most, curve[-1][1]))
    return unit, curve


def write_plot(result: EvalResult, out_dir: Path) -> Path | None:
    """Write ``out_dir/solved.png``; None (and a log line) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        log.warning("matplotlib is not installed: no %s (pip install matplotlib)", PLOT_FILE)
        return None
    ks = list(range(1, result.n + 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    try:
        title = f"{result.benchmark}, {result.mode} mode, {result.model}"
        fig.suptitle(title, fontsize=10)
        counts = result.solved_at
        left.step(ks, [counts[str(k)] for k in ks], where="post", label="solved in first k")
        if result.pass_at is not None:
            expected = [result.pass_at[str(k)] * result.attempted for k in ks]
            left.plot(ks, expected, marker="o", markersize=3, label="pass@k x problems")
        if result.n > 8:
            left.set_xscale("log", base=2)
        left.set_xlabel("samples per problem (k)")
        left.set_ylabel("problems solved")
        left.set_ylim(0, max(result.attempted, 1))
        left.grid(alpha=0.3)
        left.legend(fontsize=8)
        left.xaxis.set_major_locator(MaxNLocator(integer=True))
        unit, curve = budget_curve(result)
        right.step([x for x, _ in curve], [y for _, y in curve], where="post")
        if unit == "tokens" and curve[-1][0] > 1000:
            right.set_xscale("symlog", linthresh=100)
        right.set_xlabel(f"budget per problem ({unit} up to the first accepted proof)")
        right.set_ylabel("problems solved")
        right.set_ylim(0, max(result.attempted, 1))
        right.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / PLOT_FILE
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path
