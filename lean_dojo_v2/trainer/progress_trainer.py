"""LeanProgress training: a regression head (``AutoModelForSequenceClassification`` with one
label, on ``transformers.Trainer``) that predicts the proof steps remaining from
:func:`lean_dojo_v2.models.progress.progress_text`, the input
:meth:`~lean_dojo_v2.models.progress.ProgressModel.predict` reads too. Upstream LeanDojo-v2's
calls, the offline fallback of its ``bert-base-uncased`` and the output's files:
``docs/progress.md``, "Training".
"""

from __future__ import annotations

import itertools
import logging
import random
import shutil
import sys
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..config.loading import config_to_dict, dump_config, load_config, replace_config
from ..data.output_dir import is_ours
from ..errors import EmptyDatasetError, OutputExistsError, TrainerError
from .configured import ConfigAttribute, ConfiguredTrainer, changed_arguments
from .progress_config import ProgressConfig
from .result import DictResult
from .run_dir import check_run_outputs, write_json

if TYPE_CHECKING:
    from torch.utils.data import Dataset
    from transformers import TrainingArguments

    from ..data.progress_jsonl import ProgressExample

R = TypeVar("R")

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
CONFIG_FILE = "progress_config.yaml"
_SCORES = ("mae", "mse", "exact", "within_1")


@dataclass
class ProgressResult(DictResult):
    """What a progress training run did (``summary.json``; the CLI's ``--json``).

    ``mae``/``mse``: error of the clamped predictions on the evaluation rows; ``exact`` /
    ``within_1``: fraction of rounded predictions equal to / within one step of the label;
    ``evaluated_on``: ``"eval"`` (held-out rows) or ``"train"`` (``eval_ratio`` 0, or too little
    data to hold any out). ``steps``: optimizer steps. ``base_model``: what was trained;
    ``requested_model``: the ``model_name`` asked for; ``model_fallback``: True when
    ``base_model`` is not it (upstream's ``bert-base-uncased`` offline: MiniLM is trained
    instead, and a warning says so on stderr); ``base_model_note``: why, else None.
    """

    mae: float
    mse: float
    exact: float
    within_1: float
    evaluated_on: str
    eval_examples: int
    train_examples: int
    rows: int
    steps: int
    first_loss: float | None
    last_loss: float | None
    seconds: float
    output_dir: str
    base_model: str
    base_model_note: str | None
    tactic_mode: str
    requested_model: str | None = None
    model_fallback: bool = False


def split_rows(rows: Sequence[R], eval_ratio: float, seed: int) -> tuple[list[R], list[R]]:
    """``(train, eval)`` rows. Rows of one proof (same :attr:`ProgressExample.group`) stay on
    one side; rows without a group are groups of one. About ``eval_ratio`` of the groups go to
    eval (at least one when ``eval_ratio > 0`` and there are two groups or more; never all)."""
    groups: dict[Hashable, list[R]] = {}
    for i, row in enumerate(rows):
        key = getattr(row, "group", None)
        groups.setdefault(key if key is not None else ("row", i), []).append(row)
    keys = list(groups)
    if eval_ratio <= 0 or len(keys) < 2:
        return list(rows), []
    random.Random(seed).shuffle(keys)
    n_eval = min(max(1, round(eval_ratio * len(keys))), len(keys) - 1)
    eval_keys = set(keys[:n_eval])
    train = [r for k in keys if k not in eval_keys for r in groups[k]]
    held = [r for k in keys if k in eval_keys for r in groups[k]]
    return train, held


def model_inputs(
    rows: Sequence[ProgressExample], tactic_mode: str
) -> tuple[list[str], list[float]]:
    """``(texts, labels)`` of rows: each row as :func:`progress_text` with its tactic
    (``with``), without it (``without``), or both (``both``: two inputs per row)."""
    from ..models.progress import progress_text

    texts: list[str] = []
    labels: list[float] = []
    with_tactic = {"with": (True,), "without": (False,), "both": (True, False)}[tactic_mode]
    for row in rows:
        for given in with_tactic:
            texts.append(progress_text(row.goal, row.prefix, row.tactic if given else None))
            labels.append(float(row.steps_remaining))
    return texts, labels


class ProgressTrainer(ConfiguredTrainer[ProgressConfig]):
    """Train a steps-remaining regressor on a LeanProgress JSONL file. The arguments are
    upstream LeanDojo-v2's, then any :class:`ProgressConfig` field by keyword; or the config itself,
    ``ProgressTrainer(config, **changes)`` (the positional arguments apply when they differ from
    their defaults). Constructing loads nothing; :meth:`train` does the work."""

    config_class = ProgressConfig
    repr_fields = ("data_path", "model_name", "output_dir")

    def __init__(
        self,
        data_path: str | Path | ProgressConfig | None,
        model_name: str | None = "bert-base-uncased",
        output_dir: str = "outputs",
        max_length: int = 512,
        batch_size: int = 8,
        epochs: float = 3.0,
        learning_rate: float = 1e-5,
        eval_ratio: float = 0.2,
        seed: int = 42,
        **config: object,
    ) -> None:
        values: dict[str, object] = dict(
            model_name=model_name,
            output_dir=str(output_dir),
            max_length=max_length,
            batch_size=batch_size,
            epochs=epochs,
            learning_rate=learning_rate,
            eval_ratio=eval_ratio,
            seed=seed,
        )
        if isinstance(data_path, ProgressConfig):
            changes = {**changed_arguments(ProgressTrainer.__init__, values), **config}
            self.config = replace_config(data_path, **changes) if changes else data_path
        else:
            path = None if data_path is None else str(data_path)
            self.config = load_config(ProgressConfig, None, (), data_path=path, **values, **config)

    # upstream's attributes
    data_path: ConfigAttribute[str | None] = ConfigAttribute()
    model_name: ConfigAttribute[str | None] = ConfigAttribute()
    output_dir: ConfigAttribute[str] = ConfigAttribute()

    # ------------------------------------------------------------------ data

    def load_rows(self) -> list[ProgressExample]:
        """The rows of ``data_path`` (at most ``max_examples``); typed errors for a missing,
        empty or malformed file."""
        from ..data.progress_jsonl import iter_progress_jsonl

        cfg = self.config
        if not cfg.data_path:
            raise TrainerError(
                "ProgressTrainer needs data_path: a LeanProgress JSONL file; write one from the "
                "bundled real data with `python -m lean_dojo_v2.lean_progress."
                "create_sample_dataset --output PATH`"
            )
        rows = list(itertools.islice(iter_progress_jsonl(cfg.data_path), cfg.max_examples))
        if not rows:
            raise EmptyDatasetError(
                f"{cfg.data_path} holds no LeanProgress rows (the file is empty or blank); "
                "write one with `python -m lean_dojo_v2.lean_progress.create_sample_dataset "
                "--output PATH`"
            )
        return rows

    def _check_output(self) -> Path:
        cfg = self.config
        out = Path(cfg.output_dir)
        sources = [cfg.data_path] if cfg.data_path else []
        check_run_outputs(out, cfg.model_name, sources, force=cfg.overwrite_output_dir)
        from ..models.progress import METADATA_FILE

        if (
            out.is_dir()
            and not cfg.overwrite_output_dir
            and is_ours(out)
            and not (out / METADATA_FILE).is_file()
            and any(p.name != ".lean_dojo_v2_output" for p in out.iterdir())
        ):
            raise OutputExistsError(
                f"output directory {out} holds another lean-dojo-v2 output (not a progress "
                "model); choose another output_dir, or pass --force (overwrite_output_dir=true) "
                "to replace it"
            )
        return out

    # ------------------------------------------------------------------ training

    def train(self) -> ProgressResult:
        """Train, evaluate, and save the model to ``output_dir``; returns the
        :class:`ProgressResult` (also written as ``summary.json``). One run per ``output_dir``
        at a time (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`)."""
        from ..data.run_lock import lock_output_dir

        with lock_output_dir(self.config.output_dir):
            return self._train_locked()

    def _train_locked(self) -> ProgressResult:
        cfg = self.config
        start = time.monotonic()
        out = self._check_output()
        rows = self.load_rows()
        train_rows, eval_rows = split_rows(rows, cfg.eval_ratio, cfg.seed)
        evaluated_on = "eval" if eval_rows else "train"
        if not eval_rows:
            log.warning(
                "no rows held out for evaluation (eval_ratio=%s, %d rows); the metrics are "
                "measured on the training rows",
                cfg.eval_ratio,
                len(rows),
            )
            eval_rows = train_rows

        import torch
        import transformers
        from datasets import Dataset as Rows
        from transformers import (
            AutoModelForSequenceClassification,
            AutoTokenizer,
            DataCollatorWithPadding,
            Trainer,
            TrainingArguments,
        )

        from ..data.output_dir import staged_output_dir
        from ..models.loading import resolve_device
        from ..models.progress import (
            METADATA_FILE,
            TEXT_FORMAT,
            effective_max_length,
            progress_metrics,
            resolve_progress_base,
        )

        # resolve_progress_base logs the fallback too: the record is dropped here so that the
        # note shows once, not once per handler and once printed.
        progress_log, drop = logging.getLogger("lean_dojo_v2.models.progress"), lambda _: False
        progress_log.addFilter(drop)
        try:
            base, note = resolve_progress_base(cfg.model_name)
        finally:
            progress_log.removeFilter(drop)
        if note is not None:
            # Every run, on stderr: a log record or a warnings filter may hide it, and training
            # another model than the one named is not something to learn about afterwards.
            print(f"warning: {note}", file=sys.stderr, flush=True)
        device = resolve_device(cfg.device)
        transformers.set_seed(cfg.seed)
        try:
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = AutoModelForSequenceClassification.from_pretrained(
                base, num_labels=1, problem_type="regression", dtype=torch.float32
            )
        except (OSError, ValueError) as exc:
            from ..errors import ModelNotFoundError

            raise ModelNotFoundError(
                f"cannot load {base!r} as a regression model ({exc}); give a Hugging Face id "
                "or directory of an encoder (BERT-like) model, or model_name=None for MiniLM"
            ) from exc
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.cls_token
            model.config.pad_token_id = tokenizer.pad_token_id
        max_length = effective_max_length(model, tokenizer, cfg.max_length)

        def encode(rows_: Sequence[ProgressExample]) -> tuple[Rows, list[float]]:
            texts, labels = model_inputs(rows_, cfg.tactic_mode)
            enc = tokenizer(texts, truncation=True, max_length=max_length)
            return Rows.from_dict({**enc, "labels": labels}), labels

        train_ds, _ = encode(train_rows)
        eval_ds, eval_labels = encode(eval_rows)

        from .nonfinite_callback import StopOnNonFinite
        from .numerics import check_finite_weights

        # Staged: a run that fails (a NaN loss included) leaves output_dir as it was.
        with staged_output_dir(out, force=True) as stage:
            work = stage / "_trainer"
            args = self._training_args(TrainingArguments, work, device)
            trainer = Trainer(
                model=model,
                args=args,
                train_dataset=train_ds,
                data_collator=DataCollatorWithPadding(tokenizer),
                processing_class=tokenizer,
                callbacks=[StopOnNonFinite()],
            )
            trainer.train()
            trained = trainer.model
            assert trained is not None  # the model it was given
            check_finite_weights(trained, str(out))
            losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
            # A map-style dataset (len and items by index) is what predict reads.
            prediction = trainer.predict(cast("Dataset[dict[str, Any]]", eval_ds))
            predicted = prediction.predictions
            assert not isinstance(predicted, tuple)  # one regression output: one array
            preds = [float(x) for x in predicted.reshape(-1).tolist()]
            metrics = progress_metrics(preds, eval_labels)
            trainer.save_model(str(stage))
            tokenizer.save_pretrained(str(stage))
            shutil.rmtree(work, ignore_errors=True)
            (stage / "training_args.bin").unlink(missing_ok=True)  # a pickle; the YAML says it
            result = ProgressResult(
                **{k: metrics[k] for k in _SCORES},
                evaluated_on=evaluated_on,
                eval_examples=len(eval_ds),
                train_examples=len(train_ds),
                rows=len(rows),
                steps=int(trainer.state.global_step),
                first_loss=losses[0] if losses else None,
                last_loss=losses[-1] if losses else None,
                seconds=round(time.monotonic() - start, 3),
                output_dir=str(out),
                base_model=base,
                base_model_note=note,
                tactic_mode=cfg.tactic_mode,
                requested_model=cfg.model_name,
                model_fallback=note is not None,
            )
            metadata = self._metadata(result, max_length, eval_labels, TEXT_FORMAT)
            write_json(stage / METADATA_FILE, metadata, indent=1)
            write_json(stage / SUMMARY_FILE, result.to_dict(), indent=1)
            dump_config(cfg, stage / CONFIG_FILE)
        log.info(
            "progress model in %s: MAE %.3f, exact %.3f, within 1 %.3f on %d %s examples; "
            "export LEANPROGRESS_MODEL=%s to use it in search",
            out,
            result.mae,
            result.exact,
            result.within_1,
            result.eval_examples,
            evaluated_on,
            out.resolve(),
        )
        return result

    def _training_args(
        self, cls: type[TrainingArguments], work: Path, device: str
    ) -> TrainingArguments:
        cfg = self.config
        values: dict[str, Any] = {
            "output_dir": str(work),
            "num_train_epochs": cfg.epochs,
            "max_steps": cfg.max_steps,
            "per_device_train_batch_size": cfg.batch_size,
            "per_device_eval_batch_size": cfg.batch_size,
            "learning_rate": cfg.learning_rate,
            "weight_decay": cfg.weight_decay,
            "warmup_steps": cfg.warmup_steps,
            "lr_scheduler_type": "linear",
            "logging_steps": cfg.logging_steps,
            # So a short run still reports its first loss (and a last one).
            "logging_first_step": True,
            # A NaN step loss is logged as NaN (not replaced by the mean): StopOnNonFinite stops.
            "logging_nan_inf_filter": False,
            "eval_strategy": "no",
            "save_strategy": "no",
            "report_to": "none",
            "seed": cfg.seed,
            "data_seed": cfg.seed,
            "use_cpu": device == "cpu",
            "disable_tqdm": not cfg.progress_bar,
            "dataloader_num_workers": 0,
        }
        from .trl_config import apply_trl_args

        name = "transformers.TrainingArguments"
        return cls(**apply_trl_args(values, cls, cfg.trainer_args, name, source="trainer_args"))

    def _metadata(
        self, result: ProgressResult, max_length: int, eval_labels: list[float], text_format: str
    ) -> dict[str, Any]:
        from ..version import __version__

        return {
            "lean_dojo_v2_version": __version__,
            "kind": "lean_progress",
            "text_format": text_format,
            "tactic_mode": self.config.tactic_mode,
            "max_length": max_length,
            "base_model": result.base_model,
            "base_model_note": result.base_model_note,
            "requested_model": self.config.model_name,
            "data_path": str(self.config.data_path),
            "metrics": {
                **{k: result[k] for k in _SCORES},
                "evaluated_on": result.evaluated_on,
                "n": result.eval_examples,
            },
            "eval_label_mean": (sum(eval_labels) / len(eval_labels)) if eval_labels else None,
            "config": config_to_dict(self.config),
        }
