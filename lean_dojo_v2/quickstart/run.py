"""The quickstart's pipeline: bundled data → database → LoRA SFT → replayed search, both models.

:func:`run_quickstart` runs every phase and returns a :class:`~.report.QuickstartReport`; the
command (:mod:`.cli`) prints it. Phases, each timed:

1. ``check``: settings, the bundled dataset, the output directory (new, empty or a quickstart
   output) and the model are checked before anything is written; the directory is then locked.
2. ``database``: the bundled miniF2F chains are added to ``output_dir/quickstart.sqlite``
   (a second run finds them there); the theorems searched are read back from it.
3. ``train``: the focused training set (:func:`~.focused.focused_theorems` of the ``train``
   split) is written to ``output_dir/data`` and a LoRA adapter is trained on it into
   ``output_dir/adapter`` by ``SFTTrainer``; an adapter trained with the same settings is reused
   unless ``retrain``.
4. ``search_untrained`` / ``search_trained``: best-first search through ``ReplayEnv`` with the
   base model and with the adapter, same sampling and budget, on the focused theorems of both
   splits (``train``: trained on; ``held_out``: the ``test`` split, never trained on), through
   the proving pipeline (:class:`~lean_dojo_v2.prover.pipeline.ProveRun`): every proof is
   re-checked with ``verify_proof`` and recorded in the database; nothing is written back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.jsonio import loads
from ..data.model import Theorem
from .config import QuickstartConfig, auto_threads, search_dtype
from .focused import focused_theorems
from .minif2f import bundled_dataset_path, is_held_out
from .report import REPORT, ModelFigures, QuickstartReport, SplitFigures

if TYPE_CHECKING:
    from ..database import DynamicDatabase

log = logging.getLogger(__name__)

DATABASE = "quickstart.sqlite"
DATA = "data"
ADAPTER = "adapter"
SETTINGS = "quickstart_training.json"
"""Written beside the adapter: the settings it was trained with (the reuse check)."""
SPLITS = ("train", "held_out")


def _check_inputs(config: QuickstartConfig) -> tuple[Path, Path]:
    from ..data.output_dir import check_output_dir
    from ..errors import IncompleteDatasetError
    from ..models.loading import resolve_model_path

    data = bundled_dataset_path()
    parts = ["random/train.json", "random/val.json", "random/test.json", "corpus.jsonl"]
    missing = [p for p in parts if not (data / p).is_file()]
    if missing:  # the package's own data: a broken installation
        raise IncompleteDatasetError(data, missing)
    out = config.out()
    check_output_dir(out, sources=[data])
    resolve_model_path(config.model_name)  # a missing model fails here, before any output
    return data, out


def _reusable_adapter(adapter: Path, config: QuickstartConfig) -> dict[str, Any] | None:
    """The stored training summary when ``adapter`` was trained with ``config``'s settings."""
    try:
        stored = loads((adapter / SETTINGS).read_text("utf-8"))
        summary = loads((adapter / "summary.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not (adapter / "adapter_config.json").is_file():
        return None
    if stored != config.training_settings():
        log.warning(
            "the adapter in %s was trained with other settings (%s); training again",
            adapter,
            ", ".join(
                f"{k}={stored.get(k)!r}→{v!r}"
                for k, v in config.training_settings().items()
                if stored.get(k) != v
            ),
        )
        return None
    return summary


def _train(
    config: QuickstartConfig, train: list[Theorem], out: Path, say: Callable[[str], None]
) -> dict[str, Any]:
    from ..data.dataset import write_dataset
    from ..data.jsonio import atomic_write
    from ..trainer.sft_trainer import SFTTrainer

    adapter = out / ADAPTER
    if not config.retrain:
        summary = _reusable_adapter(adapter, config)
        if summary is not None:
            say(f"train: reusing the adapter in {adapter} (pass --retrain to train again)")
            return {**_training_figures(summary), "theorems": len(train), "reused": True}
    data = write_dataset(out / DATA, {"random": {"train": train, "val": [], "test": []}})
    say(
        f"train: LoRA SFT of {config.model_name or 'SmolLM2-135M-Instruct'} on "
        f"{sum(len(t.traced_tactics) for t in train)} (goal state → tactic) pairs of "
        f"{len(train)} theorems, {config.train_steps} steps"
    )
    trainer = SFTTrainer(
        model_name=config.model_name,
        output_dir=adapter,
        batch_size=config.batch_size,
        lr=config.lr,
        lora_config=True,
        lora_r=config.lora_r,
        lora_alpha=2 * config.lora_r,
        lora_dropout=config.lora_dropout,
        max_seq_len=config.max_seq_len,
        max_steps=config.train_steps,
        epochs_per_repo=1000.0,  # max_steps ends the pass
        seed=config.seed,
        resume=False,
        save_steps=10**6,  # no intermediate checkpoints: minutes of training, not hours
        progress_bar=config.progress,
        report_to=["none"],
        loss_curve=True,
    )
    result = trainer.train(data_path=data)
    # Written last and whole (atomically): its presence is what lets a rerun reuse the adapter.
    with atomic_write(adapter / SETTINGS) as fh:
        fh.write(json.dumps(config.training_settings(), indent=2))
    return {**_training_figures(result.to_dict()), "theorems": len(train), "reused": False}


def _training_figures(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("steps", "examples", "first_loss", "last_loss", "seconds", "loss_curve")
    return {k: summary.get(k) for k in keys}


def _search(
    config: QuickstartConfig,
    label: str,
    theorems: dict[str, list[Theorem]],
    env_theorems: Sequence[Theorem],
    adapter: Path | None,
    db: DynamicDatabase,
    dtype: str,
) -> ModelFigures:
    from ..interaction import ReplayEnv
    from ..prover.hf_prover import HFProver
    from ..prover.pipeline import ProofJob, ProveRun
    from ..prover.search_config import SearchConfig

    start = time.perf_counter()
    prover = HFProver(
        adapter if adapter is not None else config.model_name,
        use_lora=adapter is not None,
        strategy="sample",
        temperature=config.temperature,
        top_p=1.0,
        max_new_tokens=config.max_new_tokens,
        seed=config.seed,
        dtype=dtype,
    )
    search = SearchConfig(
        num_samples=config.num_samples,
        max_expansions=config.max_expansions,
        timeout=config.timeout,
        progress_weight=0,
    )
    load_seconds = time.perf_counter() - start
    run = ProveRun(
        lambda: prover,
        search,
        parallel="inline",
        workers=config.searches_at_once,
        progress=config.progress,
        recheck=True,
        database=db,
        model=f"quickstart {label}",
    )
    figures: dict[str, SplitFigures] = {}
    for split in SPLITS:
        job = ProofJob(
            theorems[split],
            lambda: ReplayEnv.from_theorems(env_theorems),
            desc=f"{label}, {split}",
        )
        began = time.perf_counter()
        results = run.run([job]).results
        figures[split] = SplitFigures.from_results(
            results, sum(r.proved for r in results), time.perf_counter() - began
        )
    return ModelFigures(
        model=str(adapter) if adapter is not None else (config.model_name or "smollm2"),
        splits=figures,
        load_seconds=round(load_seconds, 1),
        seconds=round(time.perf_counter() - start, 1),
    )


def _earlier_untrained(
    out: Path, settings: dict[str, Any], searched: dict[str, list[Theorem]]
) -> ModelFigures | None:
    """The untrained model's figures of the report in ``out``, when that run searched the same
    theorems with the same model and search settings (the base model has not changed, and
    sampling is seeded): a second run then only searches with the trained adapter."""
    try:
        earlier = loads((out / REPORT).read_text("utf-8"))
        same = {k: v for k, v in earlier["settings"].items() if k != "threads"} == settings
        names = {k: [t.full_name for t in v] for k, v in searched.items()}
        if same and earlier["searched"] == names:
            return ModelFigures.from_dict(earlier["untrained"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def run_quickstart(
    config: QuickstartConfig | None = None, say: Callable[[str], None] | None = None
) -> QuickstartReport:
    """Run the quickstart (module docstring); ``say`` gets one line per phase (default: log).

    A full disk on the way ends in one :class:`~lean_dojo_v2.data.output_dir.DiskFullError`
    (the filesystem and its free space named), whatever writer hit it; what it leaves is not
    taken for finished by the next run (the adapter is reused only once its settings file is
    written, last and atomically), so the same command recovers once there is room."""
    config = config or QuickstartConfig()
    say = say or log.info
    total = time.perf_counter()
    data, out = _check_inputs(config)
    try:
        return _run_checked(config, say, data, out, total)
    except Exception as exc:
        from ..data.output_dir import disk_full_error

        full = disk_full_error(
            exc,
            out,
            then="run the quickstart again: it keeps the database and what was finished, and "
            "redoes the step that failed",
        )
        if full is None:
            raise
        raise full from exc


def _run_checked(
    config: QuickstartConfig,
    say: Callable[[str], None],
    data: Path,
    out: Path,
    total: float,
) -> QuickstartReport:
    from ..data.output_dir import mark_ours
    from ..data.run_lock import lock_output_dir

    phases: dict[str, float] = {}
    clock = total  # the "check" phase began with _check_inputs

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[name] = round(now - clock, 1)
        clock = now

    report_settings = {
        **config.training_settings(),
        "num_samples": config.num_samples,
        "temperature": config.temperature,
        "max_new_tokens": config.max_new_tokens,
        "max_expansions": config.max_expansions,
        "timeout": config.timeout,
        "max_theorems": config.max_theorems,
        "search_dtype": search_dtype(config),
        "searches_at_once": config.searches_at_once,
    }
    dtype = str(report_settings["search_dtype"])
    threads = config.threads or auto_threads()
    import torch

    torch.set_num_threads(threads)
    from ..database import DynamicDatabase

    lap("check")
    out.mkdir(parents=True, exist_ok=True)
    with lock_output_dir(out):
        mark_ours(out)

        with DynamicDatabase(out / DATABASE) as db:
            info = db.add_repository(data)
            stored = list(db.theorems(info))
            train = focused_theorems(t for t in stored if not is_held_out(t.full_name))
            held_out = focused_theorems(t for t in stored if is_held_out(t.full_name))
            say(
                f"database: {len(stored)} theorems of {info.url} in {out / DATABASE}; focused "
                f"set (proofs of 1-2 tactics of <= 24 characters): {len(train)} to train on, "
                f"{len(held_out)} held out"
            )
            lap("database")
            training = _train(config, train, out, say)
            lap("train")
            n = config.max_theorems
            searched = {"train": train[:n], "held_out": held_out[:n]}
            say(
                f"search: best-first through ReplayEnv, {config.num_samples} samples at "
                f"temperature {config.temperature}, at most {config.max_expansions} expansions "
                "per theorem, the untrained and the trained model"
            )
            untrained = (
                None if config.retrain else _earlier_untrained(out, report_settings, searched)
            )
            if untrained is not None:
                say(
                    f"search: the untrained model's figures are reused from {out / REPORT} "
                    "(same model, search settings and theorems; --retrain runs everything again)"
                )
            else:
                untrained = _search(config, "untrained", searched, stored, None, db, dtype)
            lap("search_untrained")
            trained = _search(config, "trained", searched, stored, out / ADAPTER, db, dtype)
            lap("search_trained")
    report = QuickstartReport(
        output_dir=str(out),
        database=str(out / DATABASE),
        adapter=str(out / ADAPTER),
        dataset=str(data),
        trained=trained,
        untrained=untrained,
        training=training,
        settings={**report_settings, "threads": threads},
        searched={k: [t.full_name for t in v] for k, v in searched.items()},
        phases=phases,
        seconds=round(time.perf_counter() - total, 1),
    )
    report.write(out)
    return report
