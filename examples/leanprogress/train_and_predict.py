"""LeanProgress end to end, offline: build the dataset from real traced proofs, train a
steps-remaining model, and ask it about proof states.

    python examples/leanprogress/train_and_predict.py [--output-dir outputs/leanprogress-example]

1. ``create_sample_dataset`` labels every traced tactic of the bundled LeanDojo Benchmark 4 sample
   (100 real mathlib theorems, 158 tactics) with the steps that remain (docs/progress.md), and
   writes the LeanProgress JSONL (goal, prefix, tactic, steps_remaining).
2. ``ProgressTrainer`` fine-tunes a regression head on the bundled all-MiniLM-L6-v2 (the offline
   default; pass --model for any Hugging Face id or directory) and reports MAE and exact /
   within-1 accuracy on held-out proofs. A few minutes on a laptop CPU.
3. ``ProgressModel`` loads the result (as search does through ``LEANPROGRESS_MODEL``) and predicts
   the steps remaining of held-out states, with the tactics so far as the prefix.

With Lean installed, change one line to label the proofs of a GitHub repository instead of the
bundled sample (its dataset is traced first, then labelled)::

    from lean_dojo_v2.lean_dojo import LeanGitRepo, generate_benchmark
    summary = create_sample_dataset(data, generate_benchmark(
        [LeanGitRepo("https://github.com/durant42040/lean4-example",
                     "005de00d03f1aaa32cb2923d5e3cbaf0b954a192")])[0].path, force=data.exists())
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from lean_dojo_v2.errors import LeanDojoError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="outputs/leanprogress-example")
    parser.add_argument("--model", default=None, help="base model (default: bundled MiniLM)")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--max-steps", type=int, default=-1, help="stop early (smoke runs)")
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from lean_dojo_v2.lean_progress import create_sample_dataset, read_progress_jsonl
    from lean_dojo_v2.models.progress import ProgressModel
    from lean_dojo_v2.trainer.progress_trainer import ProgressTrainer, split_rows

    out = Path(args.output_dir)
    data = out.parent / f"{out.name}-data.jsonl"
    try:
        # 1. The dataset, from the bundled real traces (replaced if this example wrote it before).
        summary = create_sample_dataset(data, force=data.exists())
        print(f"1. {summary['rows']} rows from {summary['theorems']} proofs -> {data}")
        print(f"   steps_remaining histogram: {summary['steps_remaining']}")

        # 2. Train (upstream LeanDojo-v2's signature; model_name=None is the bundled MiniLM).
        trainer = ProgressTrainer(
            data_path=str(data),
            model_name=args.model,
            output_dir=str(out),
            max_length=args.max_length,
            batch_size=16,
            epochs=args.epochs,
            learning_rate=args.learning_rate,
            max_steps=args.max_steps,
            progress_bar=False,
        )
        result = trainer.train()
        print(
            f"2. trained {result.steps} steps in {result.seconds:.0f} s on {result.base_model}; "
            f"held-out: MAE {result.mae:.2f}, exact {result.exact:.2f}, "
            f"within 1 {result.within_1:.2f} ({result.eval_examples} inputs)"
        )

        # 3. Predict held-out states, as search would (goal + tactics so far, no candidate).
        model = ProgressModel.load(out)
        _, held = split_rows(
            read_progress_jsonl(data), trainer.config.eval_ratio, trainer.config.seed
        )
        shown = held[:6]
        preds = model.predict([r.goal for r in shown], prefixes=[r.prefix for r in shown])
        print("3. predictions on held-out states (true steps remaining -> predicted):")
        for row, pred in zip(shown, preds, strict=True):
            goal = row.goal.splitlines()[-1][:60]
            print(f"   {row.steps_remaining:2d} -> {pred:5.2f}   {row.theorem}: {goal}")
        print(f"Use it in search: export LEANPROGRESS_MODEL={out.resolve()}")
    except LeanDojoError as exc:
        print(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
