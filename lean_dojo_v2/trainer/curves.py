"""Layer 3 (trainer): PNG curves of a GRPO run (matplotlib, imported when a curve is drawn).

One figure, three panels over the optimizer steps of every pass (a grey line where a pass
starts): the mean reward and each reward function's mean, the loss, the KL to the reference
(TRL logs it only when ``beta`` > 0; the panel says so when there is none). A missing matplotlib
never fails a run: the curve is skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _series(passes: Sequence[dict[str, Any]], pick) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of ``pick(entry)`` over the passes, steps offset pass after pass."""
    xs: list[int] = []
    ys: list[float] = []
    offset = 0
    for p in passes:
        for e in p["history"]:
            y = pick(e)
            if y is not None:
                xs.append(offset + e["step"])
                ys.append(y)
        offset += p["steps"]
    return xs, ys


def plot_grpo_curves(
    passes: Sequence[dict[str, Any]], dst: Path, *, title: str = "GRPO"
) -> Path | None:
    """Draw the reward, loss and KL of ``passes`` (``training_state.json``'s entries, each with
    ``history`` and ``steps``) into ``dst``; returns ``dst``, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - a dependency, but never fail a run for a picture
        log.warning("matplotlib is not installed: no %s", dst.name)
        return None
    names: list[str] = []
    for p in passes:
        for e in p["history"]:
            names.extend(n for n in e.get("rewards", {}) if n not in names)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), dpi=100)
    ax_r, ax_l, ax_k = axes
    xs, ys = _series(passes, lambda e: e.get("reward"))
    marker = "." if len(xs) < 50 else None
    ax_r.plot(xs, ys, marker=marker, color="black", linewidth=2, label="mean (weighted sum)")
    for n in names:
        xn, yn = _series(passes, lambda e, n=n: e.get("rewards", {}).get(n))
        if xn:
            ax_r.plot(xn, yn, marker=marker, linewidth=1, label=n)
    ax_r.set_title("reward")
    ax_r.legend(fontsize="small")
    for ax, key, what in ((ax_l, "loss", "loss"), (ax_k, "kl", "KL to the reference")):
        xk, yk = _series(passes, lambda e, key=key: e.get(key))
        if xk:
            ax.plot(xk, yk, marker=marker)
        else:
            ax.text(0.5, 0.5, "not logged (beta = 0)", ha="center", transform=ax.transAxes)
        ax.set_title(what)
    offset = 0
    for i, p in enumerate(passes):
        if i:
            for ax in axes:
                ax.axvline(offset, color="grey", linewidth=0.5)
        offset += p["steps"]
    for ax in axes:
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    from ..data.jsonio import atomic_write

    with atomic_write(dst, "wb") as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
    return dst


__all__ = ["plot_grpo_curves"]
