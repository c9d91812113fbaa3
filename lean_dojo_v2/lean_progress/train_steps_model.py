"""Layer 3 (lean_progress): upstream LeanDojo-v2's LeanProgress training script, on our ProgressTrainer.

    python -m lean_dojo_v2.lean_progress.train_steps_model --dataset FILE --output-dir DIR \\
        [--model-name bert-base-uncased] [--max-length 512] [--batch-size 8] [--epochs 3] \\
        [--learning-rate 1e-5] [--eval-ratio 0.2] [--seed 42] [--force]

The flags and defaults are those of LeanDojo-v2 1.0.9's ``train_steps_model.py``; the training
is :class:`~lean_dojo_v2.trainer.progress_trainer.ProgressTrainer` (the same as ``lean-dojo-v2
train progress``), so the saved model is one :class:`~lean_dojo_v2.models.progress.ProgressModel`
loads and ``LEANPROGRESS_MODEL`` points at. ``--force`` replaces an existing output directory.

:func:`build_text` and :func:`tokenize_batch` are upstream's helpers for a ``datasets.map``
pipeline; both use :func:`~lean_dojo_v2.models.progress.progress_text`, the one input format of
the progress model, so text built here is what the trainer and the search's scorer see.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LeanDojoError

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedTokenizerBase

__all__ = ["build_text", "main", "parse_args", "tokenize_batch"]


def build_text(goal: str, prefix: str | None, tactic: str | None) -> str:
    """The model input for a goal state, the tactics before it and a candidate tactic
    (``Goal:`` / ``Prefix:`` / ``Candidate tactic:`` sections; a missing prefix is empty)."""
    from ..models.progress import progress_text

    return progress_text(goal, prefix, tactic)


def tokenize_batch(
    tokenizer: PreTrainedTokenizerBase, max_length: int
) -> Callable[[Mapping[str, Any]], BatchEncoding]:
    """A batched ``datasets.map`` function: LeanProgress columns (``goal``, optional
    ``prefix``, ``tactic``, ``steps_remaining``) to the tokenizer's fields, padded to
    ``max_length``, plus ``labels`` (the steps remaining, as floats for regression)."""

    def tokenize(batch: Mapping[str, Any]) -> BatchEncoding:
        goals = list(batch["goal"])
        prefixes = batch.get("prefix") or [""] * len(goals)
        texts = [
            build_text(goal, prefix, tactic)
            for goal, prefix, tactic in zip(goals, prefixes, batch["tactic"], strict=True)
        ]
        encoded = tokenizer(texts, padding="max_length", truncation=True, max_length=max_length)
        encoded["labels"] = [float(x) for x in batch["steps_remaining"]]
        return encoded

    return tokenize


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lean_dojo_v2.lean_progress.train_steps_model",
        description="Train a LeanProgress regression model (steps remaining) with ProgressTrainer.",
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        required=True,
        help="LeanProgress JSONL (goal, prefix, tactic, steps_remaining); write one with "
        "`python -m lean_dojo_v2.lean_progress.create_sample_dataset --output FILE`",
    )
    parser.add_argument(
        "--output-dir", type=Path, required=True, help="where the trained model is saved"
    )
    parser.add_argument(
        "--model-name",
        default="bert-base-uncased",
        help="base encoder (Hugging Face id or directory); default bert-base-uncased",
    )
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--eval-ratio", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--force", action="store_true", help="replace an existing output directory")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from ..trainer.progress_trainer import ProgressTrainer

    try:
        result = ProgressTrainer(
            data_path=args.dataset,
            model_name=args.model_name,
            output_dir=str(args.output_dir),
            max_length=args.max_length,
            batch_size=args.batch_size,
            epochs=args.epochs,
            learning_rate=args.learning_rate,
            eval_ratio=args.eval_ratio,
            seed=args.seed,
            overwrite_output_dir=args.force,
        ).train()
    except LeanDojoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # A fallback from the requested model is already said on stderr by ProgressTrainer.
    print(
        f"LeanProgress model ({result.base_model}) saved to {Path(result.output_dir).resolve()}: "
        f"MAE {result.mae:.3f} on {result.eval_examples} {result.evaluated_on} examples. "
        f"Set LEANPROGRESS_MODEL={result.output_dir} to use it in proof search."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
