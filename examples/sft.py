"""Supervised fine-tuning of a tactic generator, offline on a CPU, on the bundled real sample.

    python examples/sft.py [OUTPUT_DIR] [--max-steps N] [--model NAME]

The seed's shape: build an ``SFTTrainer``, then ``train``. By default it fine-tunes a LoRA adapter
on the bundled SmolLM2-135M-Instruct for 24 steps of 2 of the sample's 128 traced tactics (a few
minutes on 2 CPU cores; ``--max-steps -1`` runs the whole epoch), then asks the trained model for
tactics.

On a GPU, the seed's own call works as written (the model must be in the HF cache or online)::

    trainer = SFTTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", output_dir="outputs-deepseek",
                         epochs_per_repo=1, batch_size=2, lr=2e-5)
    trainer.train(database=DynamicDatabase("raid/dynamic_database.sqlite"))   # the curriculum
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from lean_dojo_v2.data import sample_dataset_path  # noqa: E402
from lean_dojo_v2.errors import LeanDojoError  # noqa: E402
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default="outputs-sft-example")
    parser.add_argument(
        "--max-steps",
        type=int,
        default=24,
        help="optimizer steps (default 24; -1: a whole epoch, 64)",
    )
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    trainer = SFTTrainer(
        model_name=args.model,
        output_dir=args.output_dir,
        epochs_per_repo=1,
        batch_size=2,
        lr=2e-4,  # LoRA takes a larger learning rate than full fine-tuning
        lora_config=True,
        max_steps=args.max_steps,
        use_cpu=True,
    )
    try:
        result = trainer.train(data_path=sample_dataset_path())
    except LeanDojoError as exc:
        print(f"error: {exc}")
        return 1
    print(
        f"\ntrained {result.steps} steps (batch 2; the sample has {result.examples} examples) "
        f"in {result.seconds:.0f} s: "
        f"loss {result.first_loss:.3f} -> {result.last_loss:.3f}"
    )
    print(f"adapter in {result.model_dir}; loss curve in {result.loss_curve}")
    print(f"TensorBoard: tensorboard --logdir {result.output_dir}/logs")

    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.models.generator import HFTacticGenerator

    generator = HFTacticGenerator(load_model(result.model_dir, device="cpu"), strategy="beam")
    state = "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1"
    print(f"\ntactics for\n{state}")
    for candidate in generator.generate([state], 4)[0]:
        print(f"  {candidate.logprob:8.3f}  {candidate.tactic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
