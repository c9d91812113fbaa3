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
    from matplotlib.axes import Axes

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
    """Write ``out_dir/solved.png``; None (and a log line) when matplotlib is not installed.
    Linear in ``n``: pass@k and the counts are computed once for every k."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no %s (pip install matplotlib)", PLOT_FILE)
        return None
    # A matplotlibrc with text.usetex would hand every text to LaTeX (the names below included).
    with matplotlib.rc_context({"text.usetex": False}):
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        try:
            # Names are the user's (a benchmark file, a model): shown as written, never parsed
            # as mathtext (`$…$`); only the axes' own tick labels use it.
            title = f"{result.benchmark}, {result.mode} mode, {result.model}"
            fig.suptitle(title, fontsize=10, parse_math=False)
            _samples_panel(left, result)
            _budget_panel(right, result)
            fig.tight_layout()
            path = out_dir / PLOT_FILE
            fig.savefig(path, dpi=100)
        finally:
            plt.close(fig)
    return path


def _samples_panel(ax: Axes, result: EvalResult) -> None:
    from matplotlib.ticker import MaxNLocator

    ks = list(range(1, result.n + 1))
    # Each property computes its whole table: read once, not once per k (that was O(n^2)).
    counts, pass_at = result.solved_at, result.pass_at
    ax.step(ks, [counts[str(k)] for k in ks], where="post", label="solved in first k")
    if pass_at is not None:
        expected = [pass_at[str(k)] * result.attempted for k in ks]
        marker = "o" if result.n <= 64 else None  # thousands of dots only blot the line
        ax.plot(ks, expected, marker=marker, markersize=3, label="pass@k x problems")
    if result.n > 8:
        ax.set_xscale("log", base=2)  # its ticks are powers of 2: whole numbers already
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("samples per problem (k)")
    ax.set_ylabel("problems solved")
    ax.set_ylim(0, max(result.attempted, 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _budget_panel(ax: Axes, result: EvalResult) -> None:
    unit, curve = budget_curve(result)
    ax.step([x for x, _ in curve], [y for _, y in curve], where="post")
    if unit == "tokens" and curve[-1][0] > 1000:
        ax.set_xscale("symlog", linthresh=100)
    ax.set_xlabel(f"budget per problem ({unit} up to the first accepted proof)")
    ax.set_ylabel("problems solved")
    ax.set_ylim(0, max(result.attempted, 1))
    ax.grid(alpha=0.3)
