"""The config of :class:`~lean_dojo_v2.trainer.progress_trainer.ProgressTrainer` (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..config.loading import (
    check_finite_floats,
    require,
    require_at_least,
    require_device,
    require_one_of,
    require_positive,
)

TACTIC_MODES = ("both", "with", "without")


@dataclass
class ProgressConfig:
    r"""Configuration of :class:`~lean_dojo_v2.trainer.progress_trainer.ProgressTrainer`: a
    regression head that predicts how many proof steps remain (LeanProgress). ``data_path``,
    ``model_name``, ``output_dir``, ``max_length``, ``batch_size``, ``epochs``, ``learning_rate``,
    ``eval_ratio`` and ``seed`` are the arguments of upstream LeanDojo-v2's ``ProgressTrainer``.

    Parameters:
        > Parameters that control the data

        data_path (`str` or `None`, *optional*, defaults to `None`):
            The LeanProgress JSONL file to train on (`goal`, `prefix`, `tactic`, `steps_remaining`
            per line; write one with `python -m lean_dojo_v2.lean_progress.create_sample_dataset
            --output PATH`). The CLI's `--data` sets it.
        eval_ratio (`float`, *optional*, defaults to `0.2`):
            Fraction held out for evaluation, in [0, 1). Rows that name their proof (`theorem`,
            `file_path`) are split by proof, so no proof is on both sides; `0`: the metrics are
            measured on the training rows (and say so).
        max_examples (`int` or `None`, *optional*, defaults to `None`):
            Use only the first this many rows of the file (smoke runs). `None`: all.
        tactic_mode (`str`, *optional*, defaults to `"both"`):
            What the model is given besides the goal and the prefix: `with` (the tactic applied to
            the goal, upstream's format), `without` (what search asks: the state alone), or `both`
            (each row twice, so one model serves both questions).

        > Parameters that control the model

        model_name (`str` or `None`, *optional*, defaults to `None`):
            Base model of the regression head: a Hugging Face id (offline: only one in the local
            cache) or a local directory. `None` (or `minilm`) is the bundled all-MiniLM-L6-v2,
            which trains on a CPU in minutes. Upstream's default `bert-base-uncased` falls back to
            MiniLM, with a warning, when it cannot be loaded offline.
        max_length (`int`, *optional*, defaults to `512`):
            Longest input in tokens (goal, prefix and tactic); longer inputs are cut at the end. It
            is capped by the model's position embeddings (512 for BERT and MiniLM).
        device (`str`, *optional*, defaults to `"auto"`):
            `auto` (CUDA when there is one), `cpu` or `cuda`.

        > Parameters that control the training

        epochs (`float`, *optional*, defaults to `3.0`):
            Passes over the training rows.
        batch_size (`int`, *optional*, defaults to `8`):
            Examples per optimizer step (and per evaluation batch).
        learning_rate (`float`, *optional*, defaults to `1e-5`):
            Peak learning rate of AdamW (linear decay). A small base such as MiniLM learns faster
            with 5e-5 to 1e-4.
        weight_decay (`float`, *optional*, defaults to `0.0`):
            AdamW weight decay.
        warmup_steps (`int`, *optional*, defaults to `0`):
            Optimizer steps of linear warm-up.
        max_steps (`int`, *optional*, defaults to `-1`):
            Stop after this many optimizer steps (smoke runs); `-1`: run the epochs.
        seed (`int`, *optional*, defaults to `42`):
            Seed of the split, the data order, dropout and the head's initialisation.

        > Parameters that control outputs and logging

        output_dir (`str`, *optional*, defaults to `"outputs"`):
            Where the model, its tokenizer, `progress_metadata.json` and `summary.json` go. It must
            be new, empty, or a progress model written by lean-dojo-v2 (replaced); anything else
            needs `overwrite_output_dir`.
        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            Replace `output_dir` even if it holds files lean-dojo-v2 did not write or another kind
            of output (the CLI's `--force`). Its contents are deleted.
        logging_steps (`int`, *optional*, defaults to `10`):
            Log the training loss every this many optimizer steps.
        progress_bar (`bool`, *optional*, defaults to `True`):
            Show a progress bar while training and predicting.
        trainer_args (`dict[str, Any]`, *optional*, defaults to `{}`):
            Further keyword arguments of `transformers.TrainingArguments` (e.g. `{bf16: true,
            gradient_accumulation_steps: 4}`); they override the values derived from the fields
            above. An unknown name is an error listing the valid ones.
    """

    # data
    data_path: str | None = None
    eval_ratio: float = 0.2
    max_examples: int | None = None
    tactic_mode: Literal["both", "with", "without"] = "both"
    # model
    model_name: str | None = None
    max_length: int = 512
    device: str = "auto"
    # training
    epochs: float = 3.0
    batch_size: int = 8
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    max_steps: int = -1
    seed: int = 42
    # outputs
    output_dir: str = "outputs"
    overwrite_output_dir: bool = False
    logging_steps: int = 10
    progress_bar: bool = True
    trainer_args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # inf passes every range check below (lr > 0) and trains NaN weights.
        check_finite_floats(self)
        require(self, 0 <= self.eval_ratio < 1, "eval_ratio", "in [0, 1)")
        require_at_least(self, 1, "max_examples", or_none=True)
        require_one_of(self, "tactic_mode", TACTIC_MODES)
        require_at_least(self, 16, "max_length")
        require_device(self)
        require_positive(self, "epochs")
        require_at_least(self, 1, "batch_size")
        require_positive(self, "learning_rate")
        require_at_least(self, 0, "weight_decay", "warmup_steps")
        require(self, self.max_steps == -1 or self.max_steps >= 1, "max_steps", "-1 or at least 1")
        require_at_least(self, 1, "logging_steps")
        require(self, bool(self.output_dir), "output_dir", "a directory path")
