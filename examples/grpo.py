"""SFT, then GRPO with the Lean-checked reward, through HFAgent, offline on a CPU.

    python examples/grpo.py [OUTPUT_DIR] [--sft-steps N] [--grpo-steps N] [--k K] [--prove N]
                            [--model NAME]

The published provers run SFT, then RL; so does this example, on a CPU, on a focused set: the
theorems of the bundled miniF2F recorded proofs (``lean_dojo_v2.quickstart.minif2f``, real Lean
runs; its training split) whose proofs are one or two short tactics (the quickstart's
``focused_theorems``: ``norm_num``, ``linarith``, ``rw [h₀] at h₁``...). Focused, because GRPO
learns only from groups whose completions differ in reward: a model that reproduces none of the
recorded tactics gets all-zero groups and nothing to learn from, and a short SFT of a 135M model
reproduces short tactics, not long ones. It measures whether GRPO reached the policy. The set
is written as a traced dataset and goes in with ``agent.setup_traced_dataset`` (no git, no Lean);
each trainer goes into an ``HFAgent`` as upstream LeanDojo-v2's README does, and both agents share
one database (one repository, two training runs, the proofs found).

1. ``HFAgent(trainer=SFTTrainer(...)).train()``: a short LoRA SFT of the bundled SmolLM2-135M-Instruct
   on those goal states (the database's export of the repository: its train split);
2. the reward the SFT model earns: ``--k`` tactics sampled at each state, scored by ``lean_tactic``
   over the recorded transitions (``ReplayEnv``: a tactic scores when it is the one recorded —
   1.0 when it closes the goal, 0.5 progress, 0.2 accepted — so a Lean toolchain is not needed);
3. ``HFAgent(trainer=GRPOTrainer(model_name=<the SFT adapter>, ...)).train()``: GRPO (``dapo``:
   dynamic sampling drops the flat groups) on the same states, rewarded by that same check
   (+ 0.1 × ``format``);
4. the reward the GRPO model earns, measured as in 2 (same states, same seed);
5. ``agent.prove(split="train")`` with each model (after 2 and after 4): best-first search
   through ``ReplayEnv`` at the same budget on the theorems they trained on (the set has no
   ``sorry`` and nothing held out), re-checked and recorded in the database.

It prints both rewards, the flat-group drop rate and what each search proved. Measured at the
defaults (2026-11-27, 2 CPU cores otherwise idle, seed 0; 10 minutes in all, 263 s of them the 12
GRPO steps): SFT loss 6.30 -> 1.21; the sampled ``lean_tactic`` reward 0.229 after SFT -> 0.281
after GRPO (accepted 0.26 -> 0.30, closed 0.22 -> 0.28; 62 % of the groups were flat and dropped);
best-first search (8 tactics per state, 8 expansions) proved 16 of the 34 theorems with either
model. GRPO made single draws better, not the set of 8 that search samples: what SFT ranks in its
top 8 was already found. A run beside the test suite gave 0.226 -> 0.290 (GRPO: 13 of 34 proved):
sampling on a CPU under other load is not bit-for-bit repeatable.
With a Lean toolchain and Pantograph, the reward checks with Lean instead
(``reward_backend="lean"``), and one line changes for a GitHub repository::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")

On a GPU upstream LeanDojo-v2's own GRPO call works as written (the model must be in the HF cache
or online)::

    trainer = GRPOTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", reward_func=reward_func,
                          output_dir="outputs-grpo", epochs_per_repo=1, batch_size=8, lr=2e-5,
                          lora_config=None)
    agent = HFAgent(trainer=trainer)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from lean_dojo_v2.agent.hf_agent import HFAgent  # noqa: E402
from lean_dojo_v2.data import load_theorems  # noqa: E402
from lean_dojo_v2.errors import LeanDojoError  # noqa: E402
from lean_dojo_v2.prover import SearchConfig  # noqa: E402
from lean_dojo_v2.quickstart.focused import focused_theorems  # noqa: E402
from lean_dojo_v2.quickstart.minif2f import bundled_dataset_path, write_chain_dataset  # noqa: E402
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer  # noqa: E402
from lean_dojo_v2.trainer.rl.evaluate import sampled_tactic_reward  # noqa: E402
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default="outputs-grpo-example")
    parser.add_argument("--sft-steps", type=int, default=12, help="SFT steps (default 12)")
    parser.add_argument("--grpo-steps", type=int, default=12, help="GRPO steps (default 12)")
    parser.add_argument("--k", type=int, default=4, help="tactics sampled per state to measure")
    parser.add_argument("--prompts", type=int, default=None, help="at most this many goal states")
    parser.add_argument(
        "--prove", type=int, default=None, help="prove at most this many theorems (default all)"
    )
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.output_dir)
    # Both agents share one database: the repository is added once, GRPO's run is recorded
    # beside SFT's, and the proofs found are recorded there.
    agent_args = dict(
        database_path=out / "dynamic_database.sqlite",
        work_dir=out / "agent",
        device="cpu",
        search_config=SearchConfig(num_samples=8, max_expansions=8, timeout=120),
    )

    try:
        train = load_theorems(bundled_dataset_path() / "random" / "train.json")
        theorems = focused_theorems(train)
        if args.prompts is not None:
            theorems = _first_states(theorems, args.prompts)
        states = sum(len(t.traced_tactics) for t in theorems)
        print(f"focused set: {len(theorems)} miniF2F theorems, {states} recorded goal states")
        data = write_chain_dataset(out / "data", theorems, split="random: the focused set")

        sft_agent = HFAgent(
            trainer=SFTTrainer(
                model_name=args.model,
                output_dir=out / "sft",
                epochs_per_repo=100,  # max_steps stops it
                batch_size=8,
                lr=2e-3,  # a few steps of LoRA on a few examples
                lora_config=True,
                max_seq_len=256,
                max_steps=args.sft_steps,
                use_cpu=True,
                progress_bar=False,
                report_to=["none"],
            ),
            **agent_args,
        )
        sft_agent.setup_traced_dataset(data)  # the one line to change (see above)
        sft = sft_agent.train()
        print(f"SFT: {sft.steps} steps, loss {sft.first_loss:.3f} -> {sft.last_loss:.3f}")
        before = sampled_tactic_reward(sft.model_dir, theorems, k=args.k, seed=0)
        # The focused set has no sorry and its database export holds out (almost) nothing, so
        # the agents search the theorems they trained on: what each policy proves.
        sft_report = sft_agent.prove(split="train", limit=args.prove)
        sft_agent.close()

        agent = HFAgent(
            trainer=GRPOTrainer(
                model_name=sft.model_dir,  # the SFT adapter: GRPO trains it on (lora_config=True)
                reward_func=None,  # the Lean-checked composite: lean_tactic + 0.1 × format
                output_dir=out / "grpo",
                epochs_per_repo=100,  # max_steps stops it
                batch_size=8,  # 2 prompts × 4 completions
                lr=1e-4,
                lora_config=True,
                algorithm="dapo",
                max_steps=args.grpo_steps,
                num_generations=4,
                max_completion_length=24,
                reward_backend="replay",
                reward_envs=2,
                use_cpu=True,
                seed=0,
                progress_bar=False,
            ),
            **agent_args,
        )
        agent.setup_traced_dataset(data)  # already in the database: the same record
        result = agent.train()
        after = sampled_tactic_reward(result.model_dir, theorems, k=args.k, seed=0)
        report = agent.prove(split="train", limit=args.prove)
        agent.close()
    except LeanDojoError as exc:
        print(f"error: {exc}")
        return 1
    print(
        f"\nGRPO ({result.algorithm}): {result.steps} steps on {result.prompts} prompts in "
        f"{result.seconds:.0f} s, rewards checked by {result.reward_backend}; "
        f"{result.dropped_groups} flat groups dropped (drop rate {result.drop_rate:.2f})"
    )
    print(
        f"lean_tactic reward of {args.k} sampled tactics at each of {before.states} states "
        f"(seed 0): SFT {before.mean_reward:.3f} -> GRPO {after.mean_reward:.3f} "
        f"(accepted {before.accepted:.2f} -> {after.accepted:.2f}, "
        f"closed {before.closed:.2f} -> {after.closed:.2f})"
    )
    print(
        f"best-first search at the same budget: SFT proved {sft_report.proved} of "
        f"{sft_report.attempted}, GRPO {report.proved} of {report.attempted} trained-on "
        f"theorems; backend {report.backend}"
    )
    print(f"adapter in {result.model_dir}; curves in {result.curves}")
    print(f"TensorBoard: tensorboard --logdir {result.output_dir}/logs")
    return 0


def _first_states(theorems: list, n: int) -> list:
    """The first theorems holding ``n`` goal states in all (for a quick look)."""
    kept, total = [], 0
    for t in theorems:
        if total >= n:
            break
        kept.append(t)
        total += len(t.traced_tactics)
    return kept


if __name__ == "__main__":
    sys.exit(main())
