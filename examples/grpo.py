"""SFT, then GRPO with the Lean-checked reward, offline on a CPU, on the bundled real sample.

    python examples/grpo.py [OUTPUT_DIR] [--sft-steps N] [--grpo-steps N] [--prompts N] [--model NAME]

The published provers run SFT, then RL; so does this example, in minutes: a short LoRA SFT of the
bundled SmolLM2-135M-Instruct on the first ``--prompts`` goal states of the sample (a focused
set: a model that reproduces none of the recorded tactics gets only flat groups, all zero, and
learns nothing from GRPO), then GRPO from that adapter on the same goal states, rewarded by the
recorded transitions (``ReplayEnv``: a tactic scores when it is the one recorded, most when it
closes the goal; a Lean toolchain is not needed). It prints the mean reward first → last.

The GRPO call keeps the seed's shape; on a GPU the seed's own call works as written::

    trainer = GRPOTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", reward_func=reward_func,
                          output_dir="outputs-grpo", epochs_per_repo=1, batch_size=8, lr=2e-5,
                          lora_config=None)
    trainer.train(database=DynamicDatabase("raid/dynamic_database.sqlite"))   # the curriculum
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from lean_dojo_v2.data import sample_dataset_path  # noqa: E402
from lean_dojo_v2.errors import LeanDojoError  # noqa: E402
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer  # noqa: E402
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default="outputs-grpo-example")
    parser.add_argument("--sft-steps", type=int, default=24, help="SFT steps (default 24)")
    parser.add_argument("--grpo-steps", type=int, default=16, help="GRPO steps (default 16)")
    parser.add_argument("--prompts", type=int, default=8, help="goal states trained on (default 8)")
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.output_dir)
    data = sample_dataset_path()

    try:
        sft = SFTTrainer(
            model_name=args.model,
            output_dir=out / "sft",
            epochs_per_repo=args.sft_steps,  # many epochs of a few examples; max_steps stops it
            batch_size=2,
            lr=2e-4,
            lora_config=True,
            max_examples=args.prompts,
            max_steps=args.sft_steps,
            use_cpu=True,
            progress_bar=False,
        ).train(data_path=data)
        print(f"SFT: {sft.steps} steps, loss {sft.first_loss:.3f} -> {sft.last_loss:.3f}")

        trainer = GRPOTrainer(
            model_name=sft.model_dir,  # the SFT adapter: GRPO trains it on (lora_config=True)
            reward_func=None,  # the Lean-checked composite: lean_tactic + 0.1 × format
            output_dir=out / "grpo",
            epochs_per_repo=args.grpo_steps,
            batch_size=8,  # 2 prompts × 4 completions
            lr=5e-5,
            lora_config=True,
            max_steps=args.grpo_steps,
            max_prompts=args.prompts,
            num_generations=4,
            max_completion_length=24,
            reward_backend="replay",
            reward_envs=2,
            use_cpu=True,
            progress_bar=False,
        )
        result = trainer.train(data_path=data)
    except LeanDojoError as exc:
        print(f"error: {exc}")
        return 1
    first, last = result.mean_reward_first, result.mean_reward_last
    print(
        f"\nGRPO ({result.algorithm}): {result.steps} steps on {result.prompts} prompts in "
        f"{result.seconds:.0f} s, rewards checked by {result.reward_backend}: "
        f"mean reward {first:.3f} -> {last:.3f} "
        f"({result.dropped_groups} flat groups dropped)"
    )
    print(f"adapter in {result.model_dir}; curves in {result.curves}")
    print(f"TensorBoard: tensorboard --logdir {result.output_dir}/logs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
