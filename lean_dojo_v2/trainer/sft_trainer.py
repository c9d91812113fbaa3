"""Supervised fine-tuning of a tactic generator on traced proofs, on TRL's ``SFTTrainer``.

The seed's API works as written::

    trainer = SFTTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", output_dir="outputs-deepseek",
                         epochs_per_repo=1, batch_size=2, lr=2e-5)
    trainer.train(repos, database)          # the curriculum, one pass per repository
    trainer.train(data_path="path/to/leandojo_dataset")

Constructing a trainer loads nothing; :meth:`SFTTrainer.train` loads the model. What this module
adds to TRL is the Lean side: examples from traced tactics (:mod:`.sft_data`), the curriculum
walk, the output directory's rules, resume across passes, the run record in the database, the
loss curve. The loop, mixed precision, checkpoints, DeepSpeed/FSDP and multi-GPU are TRL's and
transformers' (``accelerate launch``; see ``docs/training.md``).

Layout of ``output_dir`` (all written by this library, marked as ours)::

    adapter_config.json, adapter_model.safetensors   (LoRA)  ─┐ the trained model after the last
    config.json, model.safetensors                    (full)  ─┘ finished pass, + tokenizer files
    merged/                 base + adapter merged (``merge_lora``)
    checkpoints/pass-NNN/checkpoint-STEP/   TRL checkpoints of the pass under way (removed when
                                            the pass is done: the next pass starts from the model)
    logs/pass-NNN/          TensorBoard event files
    data/                   the merged dataset of each curriculum pass (database runs)
    sft_config.yaml         the config of the run
    training_state.json     passes done, fingerprint, loss history (what resume reads)
    summary.json            steps, losses, time, counts (also the CLI's ``--json``)
    loss_curve.png
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .causal_lm import (
    CausalLMTrainerAttributes,
    LoadedCausalLM,
    apply_trl_args,
    build_trl_config,
    callbacks_argument,
    config_argument,
    load_causal_lm,
    lora_config_values,
    lora_fields,
    model_name_argument,
    output_dir_argument,
    pass_callbacks,
    pass_checkpoint,
    peft_config_dict,
    quiet_unless_progress,
    save_trained,
    training_arguments,
)
from .config import config_fields, config_to_dict, load_config
from .pass_loop import CurriculumTrainer, Pass, PassDataset, PassRun
from .result import DictResult
from .run_dir import STATE_FILE as STATE_FILE  # read from here by callers of the seed's module
from .run_dir import is_main_process
from .sft_config import SFTConfig
from .sft_data import check_usable

log = logging.getLogger(__name__)

CONFIG_FILE = "sft_config.yaml"
LOSS_CURVE = "loss_curve.png"
MERGED = "merged"

# Fields that do not change what is trained: a run may resume with other values of these.
_NOT_FINGERPRINTED = {
    "output_dir",
    "overwrite_output_dir",
    "resume",
    "save_steps",
    "save_total_limit",
    "logging_steps",
    "report_to",
    "run_name",
    "progress_bar",
    "loss_curve",
    "merge_lora",
}


@dataclass
class TrainResult(DictResult):
    """What a training run did (``summary.json``; the CLI prints it with ``--json``).

    ``steps`` counts optimizer steps over all passes; ``first_loss``/``last_loss`` are the first
    and last logged training losses (None when nothing was logged); ``seconds`` is the wall time of
    this call (a resumed run counts only its own time); ``model_dir`` is where the model (or
    adapter) is, loadable with ``lean_dojo_v2.models.load_model(model_dir)``.
    """

    steps: int
    first_loss: float | None
    last_loss: float | None
    seconds: float
    output_dir: str
    model_dir: str
    merged_dir: str | None
    adapter: bool
    passes: list[dict[str, Any]]
    examples: int
    resumed_from: str | None = None
    run_id: int | None = None
    loss_curve: str | None = None


class SFTTrainer(CausalLMTrainerAttributes, CurriculumTrainer[TrainResult]):
    """Fine-tune a causal LM to write the next tactic for a goal state.

    The positional/keyword arguments are the seed's; any other field of :class:`SFTConfig` may be
    passed as a keyword (``SFTTrainer("smollm2", lora_config=True, max_steps=10)``), or build one
    from a config with :meth:`from_config`. ``lora_config`` is a ``peft.LoraConfig``, a mapping of
    its arguments, ``True`` (LoRA with the config's ``lora_*`` fields) or ``None`` (full
    fine-tuning). ``callbacks`` are extra ``transformers.TrainerCallback`` objects.

    ``train(repos=None, database=None, data_path=None) -> TrainResult`` (the loop of
    :class:`~lean_dojo_v2.trainer.pass_loop.CurriculumTrainer`): with ``database`` (a
    :class:`~lean_dojo_v2.database.DynamicDatabase` or its file), one pass per repository of
    ``repos`` (default: all in the database) in curriculum order (most Easy theorems first); pass
    *k* trains on the merged export of the first *k* repositories (written under ``data_path``,
    default ``output_dir/data``), and the run is recorded in the database's training runs.
    Without a database: one pass on the LeanDojo dataset directory (or split file) ``data_path``.
    An unfinished run of the same config and data in ``output_dir`` is resumed from its last
    checkpoint (``resume=False`` starts afresh); ``output_dir`` must otherwise be new, empty or a
    finished run of this library, unless ``overwrite_output_dir``.
    """

    run_kind = "sft"
    default_model = "smollm2"
    config_file = CONFIG_FILE
    not_fingerprinted = frozenset(_NOT_FINGERPRINTED)

    def __init__(
        self,
        model_name: str | None = None,
        output_dir: str | os.PathLike[str] = "outputs",
        epochs_per_repo: float = 1,
        batch_size: int = 1,
        lr: float = 2e-5,
        lora_config: Any = None,
        max_seq_len: int = 1024,
        warmup_steps: int = 0,
        gradient_checkpointing: bool = False,
        *,
        callbacks: Sequence[Any] = (),
        **config_values: Any,
    ) -> None:
        values: dict[str, Any] = dict(
            model_name=model_name_argument(model_name, "SFTTrainer"),
            output_dir=output_dir_argument(output_dir, "SFTTrainer"),
            epochs_per_repo=epochs_per_repo,
            batch_size=batch_size,
            lr=lr,
            max_seq_len=max_seq_len,
            warmup_steps=warmup_steps,
            gradient_checkpointing=gradient_checkpointing,
        )
        lora_values, peft_object = lora_config_values(lora_config)
        values.update(lora_values)
        values.update(config_values)
        config = load_config(SFTConfig, None, {}, **values)
        self._setup(config, peft_object, callbacks)

    @classmethod
    def from_config(
        cls, config: SFTConfig, *, callbacks: Sequence[Any] = (), lora_config: Any = None
    ) -> SFTTrainer:
        """A trainer for ``config`` (e.g. from :func:`~lean_dojo_v2.trainer.config.load_config`);
        ``lora_config`` may give a ready ``peft.LoraConfig`` (it sets ``lora``)."""
        config_argument(config, SFTConfig, "SFTTrainer")
        self = cls.__new__(cls)
        if lora_config is not None and lora_config is not False and lora_config is not True:
            config = load_config(
                SFTConfig,
                None,
                {},
                **{**config_to_dict(config), **lora_fields(peft_config_dict(lora_config))},
            )
            self._setup(config, lora_config, callbacks)
        else:
            self._setup(config, None, callbacks)
        return self

    def _setup(self, config: SFTConfig, peft_object: Any, callbacks: Sequence[Any]) -> None:
        self.config = config
        self._peft_object = peft_object
        self.callbacks = callbacks_argument(callbacks, "SFTTrainer")
        self.model: Any = None
        self.tokenizer: Any = None
        self.result: TrainResult | None = None

    def __repr__(self) -> str:
        return (
            f"SFTTrainer(model_name={self.config.model_name!r}, output_dir={self.config.output_dir!r}, "
            f"lora={self.config.lora})"
        )

    # ------------------------------------------------------------------ the pass loop's hooks

    def _fingerprint_extra(self) -> dict[str, Any]:
        if self._peft_object is None:
            return {}
        return {"peft": peft_config_dict(self._peft_object)}

    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        assert dataset.path is not None
        theorems = self._read_theorems(dataset.path)
        if not self._loaded:  # bad data fails before a (possibly large) model is loaded
            check_usable(theorems, source=dataset.source)
            self._load(self._resume_dir)
            self._loaded = True
        rows, stats = self._dataset_rows(theorems, dataset.source)
        log.info(
            "pass %d/%d (%s): %d examples (%d sorry tactics and %d longer than %d tokens left out)",
            k + 1,
            self._plan_length,
            p.label,
            stats.examples,
            stats.sorry_dropped,
            stats.too_long_dropped,
            self.config.max_seq_len,
        )
        history, steps = self._train_pass(k, rows, out)
        return {
            "label": p.label,
            "examples": stats.examples,
            "steps": steps,
            "stats": stats.to_dict(),
            "history": history,
        }

    def _save_pass(self, out: Path) -> None:
        self._save_model(out)

    def _summarise(self, run: PassRun) -> TrainResult:
        out, passes = run.out, run.state["passes"]
        cfg = self.config
        if not self._loaded and cfg.lora and cfg.merge_lora:  # resumed after every pass was done
            self._load(out)
        merged_dir = None
        if cfg.lora and cfg.merge_lora and is_main_process():
            merged_dir = str(self._save_merged(out / MERGED))
        losses = [(e["step"], e["loss"]) for p in passes for e in p["history"]]
        curve = None
        if cfg.loss_curve and is_main_process() and losses:
            curve = _plot_loss(passes, out / LOSS_CURVE)
        return TrainResult(
            steps=sum(p["steps"] for p in passes),
            first_loss=losses[0][1] if losses else None,
            last_loss=losses[-1][1] if losses else None,
            seconds=run.seconds(),
            output_dir=str(out),
            model_dir=str(out),
            merged_dir=merged_dir,
            adapter=cfg.lora,
            passes=[{k: v for k, v in p.items() if k != "history"} for p in passes],
            examples=sum(p.get("examples", 0) for p in passes),
            resumed_from=run.resumed_from,
            loss_curve=str(curve) if curve else None,
        )

    def _record_metrics(self, result: TrainResult) -> dict[str, Any]:
        # The per-pass list stays in summary.json; the record keeps the totals.
        return {k: v for k, v in result.to_dict().items() if k != "passes"}

    # ------------------------------------------------------------------ one pass

    def _dataset_rows(self, theorems: list[Any], source: str):
        from .errors import EmptyDatasetError
        from .sft_data import build_examples, tokenize_pairs

        cfg = self.config
        built = build_examples(
            theorems,
            self.tokenizer,
            use_premises=cfg.use_premises,
            max_examples=cfg.max_examples,
            source=source,
        )
        rows, too_long = tokenize_pairs(built.pairs, self.tokenizer, max_seq_len=cfg.max_seq_len)
        built.stats.too_long_dropped = too_long
        built.stats.examples = len(rows)
        if not rows:
            raise EmptyDatasetError(
                f"no training examples in {source}: all {too_long} examples are longer than "
                f"max_seq_len={cfg.max_seq_len} tokens; raise max_seq_len"
            )
        return rows, built.stats

    def _check_theorems(self, theorems: list[Any], source: str) -> None:
        check_usable(theorems, source=source)

    def _load(self, from_dir: Path | None) -> None:
        """Load the model and tokenizer (once): the base, or the model saved after the last
        finished pass in ``from_dir`` (resume)."""
        loaded = load_causal_lm(
            self.config,
            from_dir,
            lora_config=self.lora_config,
            who="SFTTrainer",
            planned=getattr(self, "_planned", None),
        )
        self._target_device = loaded.target
        self._precision = loaded.precision
        self._loaded_lm = loaded
        self.model, self.tokenizer = loaded.model, loaded.tokenizer

    def _trl_args(self, k: int, out: Path, loaded: LoadedCausalLM | None = None) -> Any:
        from trl import SFTConfig as TRLConfig

        cfg = self.config
        args = training_arguments(cfg, k, out, loaded or self._loaded_lm)
        args.update(
            max_length=cfg.max_seq_len,
            packing=False,
            completion_only_loss=True,
            dataset_num_proc=None,
        )
        args = apply_trl_args(args, TRLConfig, cfg.trl_args, "trl.SFTConfig")
        return build_trl_config(TRLConfig, args, "trl.SFTConfig")

    def _train_pass(self, k: int, rows: list[dict[str, list[int]]], out: Path):
        from datasets import Dataset
        from trl import SFTTrainer as TRLSFTTrainer

        cfg = self.config
        args = self._trl_args(k, out)
        callbacks = pass_callbacks(cfg, out, k, self.callbacks)
        trainer = TRLSFTTrainer(
            model=self.model,
            args=args,
            train_dataset=Dataset.from_list(rows),
            processing_class=self.tokenizer,
            callbacks=callbacks,
        )
        quiet_unless_progress(trainer, cfg)
        self._trl_trainer = trainer
        checkpoint = pass_checkpoint(out, k)
        if checkpoint is not None:
            log.info("resuming pass %d from %s", k + 1, checkpoint)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        self.model = trainer.model
        history = [
            {"step": int(e["step"]), "loss": float(e["loss"])}
            for e in trainer.state.log_history
            if "loss" in e and "step" in e and math.isfinite(float(e["loss"]))
        ]
        return history, int(trainer.state.global_step)

    def _save_model(self, out: Path) -> None:
        save_trained(self.model, self.tokenizer, out, self.config)


# ---------------------------------------------------------------------- helpers


def _plot_loss(passes: list[dict[str, Any]], dst: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - a dependency, but never fail a run for a picture
        log.warning("matplotlib is not installed: no %s", dst.name)
        return None
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    offset = 0
    for i, p in enumerate(passes):
        xs = [offset + e["step"] for e in p["history"]]
        ys = [e["loss"] for e in p["history"]]
        ax.plot(
            xs,
            ys,
            marker="." if len(xs) < 50 else None,
            label=p["label"] if len(passes) > 1 else None,
        )
        if i:
            ax.axvline(offset, color="grey", linewidth=0.5)
        offset += p["steps"]
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss")
    ax.set_title("SFT training loss")
    if len(passes) > 1:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    from ..data.jsonio import atomic_write

    with atomic_write(dst, "wb") as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
    return dst


def train_sft(
    data_path: str | os.PathLike[str] | None = None,
    *,
    config: SFTConfig | None = None,
    database: Any = None,
    repos: Iterable[Any] | None = None,
    callbacks: Sequence[Any] = (),
) -> TrainResult:
    """``SFTTrainer.from_config(config).train(repos, database, data_path)`` (the CLI's call)."""
    trainer = SFTTrainer.from_config(config or SFTConfig(), callbacks=callbacks)
    return trainer.train(repos=repos, database=database, data_path=data_path)


__all__ = ["SFTConfig", "SFTTrainer", "TrainResult", "config_fields", "train_sft"]
