"""Layer 3 (trainer): PNG curves of a causal-LM run (matplotlib, imported when a curve is drawn),
over the optimizer steps of every pass (a grey line where a pass starts). A missing matplotlib
never fails a run: the curve is skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)


def _series(
    passes: Sequence[dict[str, Any]], key: str, part: str | None = None
) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of the logged ``key`` (its ``part``: ``rewards`` by function) over the
    passes, steps offset pass after pass; entries that did not log it are left out."""
    xs: list[int] = []
    ys: list[float] = []
    offset = 0
    for p in passes:
        for e in p["history"]:
            y = e.get(key) if part is None else e.get(key, {}).get(part)
            if y is not None:
                xs.append(offset + e["step"])
                ys.append(y)
        offset += p["steps"]
    return xs, ys


def _pyplot(dst: Path) -> ModuleType | None:
    """``matplotlib.pyplot`` on the file backend, or None (and a warning) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - a dependency, but never fail a run for a picture
        log.warning("matplotlib is not installed: no %s", dst.name)
        return None
    return plt


def _finish(
    plt: ModuleType, fig: Figure, axes: Sequence[Axes], passes: Sequence[dict[str, Any]], dst: Path
) -> Path:
    """Mark where each pass starts, label the step axis, write ``dst`` atomically."""
    from ..data.jsonio import atomic_write

    offset = 0
    for i, p in enumerate(passes):
        if i:
            for ax in axes:
                ax.axvline(offset, color="grey", linewidth=0.5)
        offset += p["steps"]
    for ax in axes:
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_write(dst, "wb") as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
    return dst


def plot_loss_curve(passes: Sequence[dict[str, Any]], dst: Path) -> Path | None:
    """Draw the training loss of ``passes`` (``training_state.json``'s entries, each with
    ``history``, ``steps`` and ``label``) into ``dst``; returns ``dst``, or None without
    matplotlib."""
    plt = _pyplot(dst)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    offset = 0
    for p in passes:
        xs = [offset + e["step"] for e in p["history"]]
        ys = [e["loss"] for e in p["history"]]
        label = p["label"] if len(passes) > 1 else None
        ax.plot(xs, ys, marker="." if len(xs) < 50 else None, label=label)
        offset += p["steps"]
    ax.set_ylabel("training loss")
    ax.set_title("SFT training loss")
    if len(passes) > 1:
        ax.legend(fontsize="small")
    return _finish(plt, fig, [ax], passes, dst)


def plot_grpo_curves(
    passes: Sequence[dict[str, Any]], dst: Path, *, title: str = "GRPO"
) -> Path | None:
    """Draw the reward, loss and KL of ``passes`` (``training_state.json``'s entries, each with
    ``history`` and ``steps``) into ``dst``; returns ``dst``, or None without matplotlib."""
    plt = _pyplot(dst)
    if plt is None:
        return None
    names: list[str] = []
    for p in passes:
        for e in p["history"]:
            names.extend(n for n in e.get("rewards", {}) if n not in names)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), dpi=100)
    ax_r, ax_l, ax_k = axes
    xs, ys = _series(passes, "reward")
    marker = "." if len(xs) < 50 else None
    ax_r.plot(xs, ys, marker=marker, color="black", linewidth=2, label="mean (weighted sum)")
    for n in names:
        xn, yn = _series(passes, "rewards", n)
        if xn:
            ax_r.plot(xn, yn, marker=marker, linewidth=1, label=n)
    ax_r.set_title("reward")
    ax_r.legend(fontsize="small")
    for ax, key, what in ((ax_l, "loss", "loss"), (ax_k, "kl", "KL to the reference")):
        xk, yk = _series(passes, key)
        if xk:
            ax.plot(xk, yk, marker=marker)
        else:
            ax.text(0.5, 0.5, "not logged (beta = 0)", ha="center", transform=ax.transAxes)
        ax.set_title(what)
    fig.suptitle(title)
    return _finish(plt, fig, axes, passes, dst)


__all__ = ["plot_grpo_curves", "plot_loss_curve"]
