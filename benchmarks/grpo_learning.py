"""Does GRPO with the Lean-checked reward reach the policy? SFT, then GRPO, then both measured.

The focused training set is miniF2F-test's recorded tactic proofs (miniCTX's derived chains in
``tests/data/real``: 56 theorems, 116 goal states, mostly `norm_num` / `linarith` / `nlinarith`
steps a 135M model can learn), written as a LeanDojo dataset (all in ``random/train``). Steps:

1. SFT (LoRA) of the default SmolLM2-135M-Instruct on those 116 (state → tactic) pairs;
2. GRPO from that adapter (``configs/grpo_smollm2_cpu.yaml``, ``--algorithm dapo``: dynamic
   sampling drops the flat groups most prompts give), rewarded by ``lean_tactic`` through
   ``ReplayEnv`` (closed 1.0 / progress 0.5 / accepted 0.2 / rejected 0) + ``format`` (0.1);
3. each model measured the same way: ``--k`` tactics sampled (temperature 1) at each of the 116
   training states, scored by replay as the reward does; and best-first search through replay
   on the 56 theorems at the same budget (8 expansions, 8 beams, 120 s).

    python benchmarks/grpo_learning.py OUT_DIR [--sft-epochs 4] [--grpo-steps 30] [--k 4]
        [--skip-training]    # only measure OUT_DIR/sft and OUT_DIR/grpo

Prints one JSON object. About 1.5 hours on 2 CPU cores (SFT 116 steps, GRPO 30 steps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fake_pantograph"))  # the miniCTX → Theorem reader
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MINIF2F = (
    ROOT / "tests" / "data" / "real" / "minictx" / "derived" / "minif2f_test_traced_tactics.json"
)


def build_dataset(dst: Path) -> Path:
    from fake_repl import minif2f_theorems

    from lean_dojo_v2.data.dataset import write_dataset

    theorems = minif2f_theorems(json.loads(MINIF2F.read_text(encoding="utf-8")))
    return write_dataset(dst, {"random": {"train": theorems, "val": [], "test": []}})


def train(out: Path, data: Path, sft_epochs: float, grpo_steps: int) -> dict[str, Any]:
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.grpo_config import GRPOConfig
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    sft = SFTTrainer(
        output_dir=out / "sft",
        epochs_per_repo=sft_epochs,
        batch_size=4,
        lr=3e-4,
        lora_config=True,
        max_seq_len=512,
        progress_bar=False,
        report_to=["none"],
    ).train(data_path=data)
    cfg = load_config(
        GRPOConfig,
        ROOT / "configs" / "grpo_smollm2_cpu.yaml",
        [
            "algorithm=dapo",
            f"model_name={out / 'sft'}",
            "max_prompts=null",
            f"max_steps={grpo_steps}",
            "lr=1e-4",
            f"output_dir={out / 'grpo'}",
            "seed=0",
        ],
    )
    grpo = GRPOTrainer.from_config(cfg).train(data_path=data)
    keys = ("steps", "mean_reward_first", "mean_reward_last", "drop_rate", "dropped_groups")
    return {
        "sft": {"steps": sft.steps, "first_loss": sft.first_loss, "last_loss": sft.last_loss},
        "grpo": {k: grpo.to_dict()[k] for k in keys},
    }


def measure(data: Path, adapter: Path, k: int) -> dict[str, Any]:
    from lean_dojo_v2.data.dataset import load_theorems
    from lean_dojo_v2.interaction import ProofFinished, ProofState, ReplayEnv
    from lean_dojo_v2.models.generator import HFTacticGenerator
    from lean_dojo_v2.prover.search import SearchConfig, search_theorem

    theorems = [t for t in load_theorems(data / "random" / "train.json") if t.traced_tactics]
    env = ReplayEnv.from_theorems(theorems)
    sampler = HFTacticGenerator(
        None,
        adapter=str(adapter),
        strategy="sample",
        temperature=1.0,
        top_p=1.0,
        seed=0,
        max_new_tokens=48,
    )
    start = time.perf_counter()
    keys = [(th, i) for th in theorems for i in range(len(th.traced_tactics))]
    candidates = sampler.generate([th.traced_tactics[i].state_before for th, i in keys], k)
    total = accepted = n = 0.0
    for (th, i), cands in zip(keys, candidates, strict=True):
        state = env.start(th)
        for tt in th.traced_tactics[:i]:
            state = env.run_tactic(state, tt.tactic)
        for c in cands:
            r = env.run_tactic(state, c.tactic)
            score = (
                1.0 if isinstance(r, ProofFinished) else 0.5 if isinstance(r, ProofState) else 0.0
            )
            total, accepted, n = total + score, accepted + (score > 0), n + 1
        n += k - len(cands)  # the generator returns distinct tactics: a repeat counts as a miss
    sampled = {
        "mean_reward": round(total / max(n, 1), 4),
        "accepted_frac": round(accepted / max(n, 1), 4),
        "states": len(keys),
        "k": k,
        "seconds": round(time.perf_counter() - start, 1),
    }
    beams = HFTacticGenerator(
        None, adapter=str(adapter), strategy="beam", num_beams=8, max_new_tokens=48
    )
    config = SearchConfig(num_samples=8, max_expansions=8, timeout=120)
    start = time.perf_counter()
    proved = sum(search_theorem(beams, env, th, config).status == "proved" for th in theorems)
    return {
        "sampled": sampled,
        "search": {
            "proved": proved,
            "of": len(theorems),
            "budget": "8 expansions x 8 beams",
            "seconds": round(time.perf_counter() - start, 1),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sft-epochs", type=float, default=4)
    parser.add_argument("--grpo-steps", type=int, default=30)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    data = build_dataset(args.out / "minif2f")
    report: dict[str, Any] = {}
    if not args.skip_training:
        report["training"] = train(args.out, data, args.sft_epochs, args.grpo_steps)
    report["sft_model"] = measure(data, args.out / "sft", args.k)
    report["grpo_model"] = measure(data, args.out / "grpo", args.k)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
