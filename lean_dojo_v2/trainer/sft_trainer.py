"""Supervised fine-tuning of a tactic generator on traced proofs, on TRL's ``SFTTrainer``
(upstream LeanDojo-v2's calls: ``docs/training.md``, "Quick start"). What it adds to
:class:`~lean_dojo_v2.trainer.causal_lm_trainer.CausalLMTrainer`: the rows, (prompt → next tactic)
examples with the loss on the tactic only (:mod:`.sft_data`), TRL's ``SFTTrainer``, the loss
curve (``loss_curve.png``) and :class:`TrainResult`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.model import Theorem
from .causal_lm_trainer import CausalLMTrainer, PassRows
from .curves import plot_loss_curve
from .errors import TooFewRowsError
from .result import DictResult
from .run_dir import world_size
from .sft_config import SFTConfig
from .sft_data import check_usable, training_rows

if TYPE_CHECKING:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from .lora import LoraArgument


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


class SFTTrainer(CausalLMTrainer[SFTConfig, TrainResult]):
    """Fine-tune a causal LM to write the next tactic for a goal state; built as every
    :class:`~lean_dojo_v2.trainer.causal_lm_trainer.CausalLMTrainer` is. Pass *k* of a curriculum
    trains on the merged export of the first *k* repositories (under ``data_path``, default
    ``output_dir/data``)."""

    config_class = SFTConfig
    run_kind = "sft"

    def __init__(
        self,
        model_name: str | os.PathLike[str] | SFTConfig | None = None,
        output_dir: str | os.PathLike[str] = "outputs",
        epochs_per_repo: float = 1,
        batch_size: int = 1,
        lr: float = 2e-5,
        lora_config: LoraArgument = None,
        max_seq_len: int = 1024,
        warmup_steps: int = 0,
        gradient_checkpointing: bool = False,
        *,
        callbacks: Sequence[TrainerCallback | type[TrainerCallback]] = (),
        **config_values: object,
    ) -> None:
        arguments: dict[str, object] = dict(
            output_dir=output_dir,
            epochs_per_repo=epochs_per_repo,
            batch_size=batch_size,
            lr=lr,
            max_seq_len=max_seq_len,
            warmup_steps=warmup_steps,
            gradient_checkpointing=gradient_checkpointing,
        )
        super().__init__(
            model_name,
            lora_config=lora_config,
            callbacks=callbacks,
            arguments=arguments,
            **config_values,
        )

    def _check_theorems(self, theorems: list[Theorem], source: str) -> int:
        usable = check_usable(theorems, source=source).examples
        return min(usable, self.config.max_examples or usable)

    def _check_rows(self, rows: int, args: TrainingArguments, where: str) -> None:
        if rows < world_size():
            raise TooFewRowsError(
                f"{where} {rows} examples for {world_size()} processes: each process needs "
                "examples of its own (accelerate would repeat some to fill the others' batches); "
                f"use --num_processes {rows} or fewer, or train on more examples"
            )

    def _build_rows(self, theorems: list[Theorem], source: str) -> PassRows:
        rows, st = training_rows(theorems, self._loaded_model()[1], self.config, source=source)
        note = (
            f"{st.examples} examples ({st.sorry_dropped} sorry tactics and {st.too_long_dropped} "
            f"longer than {self.config.max_seq_len} tokens left out)"
        )
        return PassRows(rows, "examples", st.examples, st, note)

    def _trl_classes(self) -> tuple[type[TrainingArguments], Callable[..., Trainer]]:
        import trl

        from .sft_trl_trainer import LeanSFTTrainer

        return trl.SFTConfig, LeanSFTTrainer

    def _trl_settings(self) -> dict[str, Any]:
        # Rows are token ids with a completion mask (sft_data): TRL neither packs nor re-tokenises.
        return dict(
            max_length=self.config.max_seq_len,
            packing=False,
            completion_only_loss=True,
            dataset_num_proc=None,
        )

    def _history_entry(self, entry: Mapping[str, Any]) -> dict[str, Any] | None:
        if "loss" not in entry or "step" not in entry or not math.isfinite(float(entry["loss"])):
            return None
        return {"step": int(entry["step"]), "loss": float(entry["loss"])}

    def _draw_curves(self, passes: list[dict[str, Any]], out: Path) -> Path | None:
        return plot_loss_curve(passes, out / "loss_curve.png") if self.config.loss_curve else None

    def _result(
        self, passes: list[dict[str, Any]], common: dict[str, Any], curve: str | None
    ) -> TrainResult:
        losses = [e["loss"] for p in passes for e in p["history"]]
        return TrainResult(
            **common,
            first_loss=losses[0] if losses else None,
            last_loss=losses[-1] if losses else None,
            examples=sum(p.get("examples", 0) for p in passes),
            loss_curve=curve,
        )


__all__ = ["SFTTrainer", "TrainResult"]
