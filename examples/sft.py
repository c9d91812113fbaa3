"""Upstream LeanDojo-v2's SFT loop through ``HFAgent``, offline on a CPU, on the bundled sample.

    python examples/sft.py [OUTPUT_DIR] [--max-steps N] [--model NAME] [--prove N]

Upstream LeanDojo-v2's calls as written: ``SFTTrainer(model_name=..., output_dir=...,
epochs_per_repo=1, batch_size=2, lr=2e-5)`` (full fine-tuning, no LoRA) into ``HFAgent``, then
``train()`` and ``prove()``. Offline, the model is the bundled SmolLM2-135M-Instruct (upstream names
DeepSeek-Prover-V2-7B, which cannot be downloaded here; on a GPU machine pass ``--model
deepseek-ai/DeepSeek-Prover-V2-7B``) and the repository is the bundled traced mathlib sample, added
with ``setup_traced_dataset`` (no git, no Lean). With Lean installed, change one line for a GitHub
repository::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")

By default 24 steps of 2 of the sample's traced tactics (a few minutes on 2 CPU cores;
``--max-steps -1`` runs the whole epoch); then the trained model's tactics for one goal, and
``prove()`` on the held-out test split of the database's export of the sample (the sample has no
``sorry``), through ``ReplayEnv`` (recorded Lean transitions; the report says so). Everything goes
under OUTPUT_DIR: the model in ``model/``, the database, the agent's exports in ``agent/``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from lean_dojo_v2.agent.hf_agent import HFAgent  # noqa: E402
from lean_dojo_v2.data import sample_dataset_path  # noqa: E402
from lean_dojo_v2.errors import LeanDojoError  # noqa: E402
from lean_dojo_v2.prover import SearchConfig  # noqa: E402
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default="outputs-sft-example")
    parser.add_argument(
        "--max-steps",
        type=int,
        default=24,
        help="optimizer steps (default 24; -1: a whole epoch)",
    )
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
    parser.add_argument(
        "--prove", type=int, default=4, help="prove at most this many theorems (default 4)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.output_dir)

    trainer = SFTTrainer(
        model_name=args.model,
        output_dir=out / "model",
        epochs_per_repo=1,
        batch_size=2,
        lr=2e-5,
        max_steps=args.max_steps,  # not in upstream's call: a short CPU run
        use_cpu=True,
    )
    agent = HFAgent(
        trainer=trainer,
        database_path=out / "dynamic_database.sqlite",
        work_dir=out / "agent",
        device="cpu",
        search_config=SearchConfig(num_samples=4, max_expansions=8, timeout=120),
    )
    try:
        agent.setup_traced_dataset(sample_dataset_path())  # the one line to change (see above)
        result = agent.train()
        print(
            f"\ntrained {result.steps} steps (batch 2; {result.examples} examples) in "
            f"{result.seconds:.0f} s: loss {result.first_loss:.3f} -> {result.last_loss:.3f}"
        )
        print(f"model in {result.model_dir}; loss curve in {result.loss_curve}")
        print(f"TensorBoard: tensorboard --logdir {result.output_dir}/logs")

        agent.initialize_prover(split="test")  # the trained model, as prove() uses it
        state = "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1"
        print(f"\ntactics for\n{state}")
        for candidate in agent.prover.generate_one(state, 4):
            print(f"  {candidate.logprob:8.3f}  {candidate.tactic}")

        report = agent.prove(limit=args.prove)
    except LeanDojoError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        agent.close()
    print(
        f"\nproved {report.proved} of {report.attempted} held-out theorems; backend "
        f"{report.backend}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
