"""What the quickstart reports: figures per model and split, the terminal table, JSON, the plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..prover.result import SearchResult

REPORT = "report.json"
PLOT = "quickstart.png"
BACKEND_NOTE = (
    "backend: replay. ReplayEnv accepts a tactic only when a real Lean run recorded it at that "
    "goal state, so a proof found here is a recorded proof reproduced by the model: evidence that "
    "training reaches search, not a new proof checked by Lean."
)


@dataclass
class SplitFigures:
    """One model on one split: theorems attempted and proved, expansions in total, the split's
    wall-clock seconds (its searches run at once), proofs re-checked by ``verify_proof``, and
    per theorem (name → expansions, proved)."""

    attempted: int
    proved: int
    expansions: int
    seconds: float
    rechecked: int
    proved_names: list[str] = field(default_factory=list)
    expansions_per_theorem: list[int] = field(default_factory=list)

    @classmethod
    def from_results(
        cls, results: Sequence[SearchResult], rechecked: int, seconds: float
    ) -> SplitFigures:
        return cls(
            attempted=len(results),
            proved=sum(r.proved for r in results),
            expansions=sum(r.expansions for r in results),
            seconds=round(seconds, 1),
            rechecked=rechecked,
            proved_names=[r.theorem for r in results if r.proved],
            expansions_per_theorem=[r.expansions for r in results],
        )


@dataclass
class ModelFigures:
    """One model over both splits; ``seconds`` includes loading it (``load_seconds``).
    ``reused``: the figures are an earlier run's, with the same model and search settings."""

    model: str
    splits: dict[str, SplitFigures]
    load_seconds: float
    seconds: float
    reused: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelFigures:
        return cls(
            model=d["model"],
            splits={k: SplitFigures(**v) for k, v in d["splits"].items()},
            load_seconds=d["load_seconds"],
            seconds=d["seconds"],
            reused=True,
        )

    def totals(self) -> dict[str, Any]:
        s = self.splits.values()
        return {
            "attempted": sum(f.attempted for f in s),
            "proved": sum(f.proved for f in s),
            "expansions": sum(f.expansions for f in s),
            "seconds": self.seconds,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.totals(),
            "model": self.model,
            "load_seconds": self.load_seconds,
            "reused": self.reused,
            "splits": {k: asdict(v) for k, v in self.splits.items()},
        }


@dataclass
class QuickstartReport:
    """Everything one quickstart run found; :meth:`to_dict` is its JSON (the command's last line
    with ``--json``, and ``output_dir/report.json``)."""

    output_dir: str
    database: str
    adapter: str
    dataset: str
    trained: ModelFigures
    untrained: ModelFigures
    training: dict[str, Any]
    settings: dict[str, Any]
    searched: dict[str, list[str]]
    phases: dict[str, float]
    seconds: float
    plot: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": "replay",
            "checked_by": "replay",
            **self.trained.totals(),
            "splits": {k: asdict(v) for k, v in self.trained.splits.items()},
            "model": self.trained.model,
            "untrained": self.untrained.to_dict(),
            "training": self.training,
            "settings": self.settings,
            "searched": self.searched,
            "phases": self.phases,
            "total_seconds": self.seconds,
            "plot": self.plot,
            "adapter": self.adapter,
            "database": self.database,
            "dataset": self.dataset,
            "output_dir": self.output_dir,
        }

    def write(self, out: Path) -> None:
        """Write the plot and ``report.json`` into ``out``."""
        from ..data.jsonio import atomic_write

        self.plot = str(plot_report(self, out / PLOT))
        # Whole or not at all: a rerun reuses the untrained model's figures from it.
        with atomic_write(out / REPORT) as fh:
            fh.write(json.dumps(self.to_dict(), indent=2) + "\n")

    def table(self) -> str:
        """The terminal report."""
        t, u = self.trained, self.untrained
        tr = self.training
        lines = [
            f"lean-dojo-v2 quickstart: LoRA SFT of {u.model}, then best-first search",
            "",
            f"data      miniF2F-test recorded tactic proofs (miniCTX), {self.dataset}",
            f"trained   {'reused ' if tr.get('reused') else ''}adapter {self.adapter}: "
            f"{tr.get('examples')} (goal state -> tactic) pairs of {tr.get('theorems')} "
            f"theorems with proofs of 1-2 short tactics, {tr.get('steps')} steps, "
            f"loss {_num(tr.get('first_loss'))} -> {_num(tr.get('last_loss'))}",
            f"searched  {len(self.searched['train'])} theorems trained on and "
            f"{len(self.searched['held_out'])} held out; {self.settings['num_samples']} samples "
            f"per state at temperature {self.settings['temperature']}, at most "
            f"{self.settings['max_expansions']} expansions per theorem, both models",
            "",
            f"{'split':<10} {'model':<10} {'proved':>10} {'expansions':>11} {'seconds':>8}",
        ]
        for split in ("train", "held_out"):
            for name, m in (("untrained", u), ("trained", t)):
                f = m.splits[split]
                lines.append(
                    f"{split:<10} {name:<10} {f'{f.proved} / {f.attempted}':>10} "
                    f"{f.expansions:>11} {f.seconds:>8.1f}"
                    + ("  (first run's)" if m.reused else "")
                )
        lines += [
            "",
            BACKEND_NOTE,
            "",
            "phases (s): "
            + ", ".join(f"{k} {v}" for k, v in self.phases.items())
            + f"; total {self.seconds}",
            f"plot      {self.plot}",
            f"report    {Path(self.output_dir) / REPORT}",
            f"database  {self.database} (the proofs found are recorded there)",
        ]
        return "\n".join(lines)


def _num(x: object) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "?"


def plot_report(report: QuickstartReport, dst: Path) -> Path:
    """Two panels: proved per split, untrained vs trained; expansions per theorem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = ("train", "held_out")
    models = (("untrained", report.untrained, "#9e9e9e"), ("trained", report.trained, "#1f77b4"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.38
    for i, (name, m, color) in enumerate(models):
        xs = [j + (i - 0.5) * width for j in range(len(splits))]
        counts = [m.splits[s].proved for s in splits]
        bars = left.bar(xs, counts, width, label=name, color=color)
        left.bar_label(
            bars, labels=[f"{m.splits[s].proved}/{m.splits[s].attempted}" for s in splits]
        )
    most = max(m.splits[s].attempted for _, m, _ in models for s in splits)
    left.set_ylim(0, most * 1.15 + 1)
    left.set_xticks(range(len(splits)), ["trained on", "held out"])
    left.set_ylabel("theorems proved")
    left.set_title("Proved through ReplayEnv (same budget)")
    left.legend()
    highest = 1
    for i, (name, m, color) in enumerate(models):
        per = [e for s in splits for e in m.splits[s].expansions_per_theorem]
        proved = {n for s in splits for n in m.splits[s].proved_names}
        names = [n for s in splits for n in report.searched[s]]
        xs = [j + 1 + (i - 0.5) * 0.3 for j in range(len(per))]  # side by side, not on top
        faces = [color if n in proved else "none" for n in names]
        right.scatter(xs, per, s=18, label=f"{name} (filled: proved)", edgecolors=color, c=faces)
        highest = max([highest, *per])
    right.set_ylim(0, highest + 1)
    right.yaxis.get_major_locator().set_params(integer=True)
    n_train = report.untrained.splits["train"].attempted
    right.axvline(n_train + 0.5, color="k", lw=0.8, ls=":")
    right.set_xlabel("theorem (trained on | held out)")
    right.set_ylabel("expansions")
    right.set_title("Expansions per theorem")
    right.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=100)
    plt.close(fig)
    return dst
