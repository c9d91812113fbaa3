"""SFT throughput benchmark: examples/s of a short SFT run, LoRA vs full fine-tuning, in one run.

Trains ``--steps`` optimizer steps (batch ``--batch-size``) on the bundled real sample with the
default model (SmolLM2-135M-Instruct, CPU, fp32), once with a LoRA adapter (r=16, all linear
layers) and updating every weight, each run into a fresh temporary output directory. The time of
the training loop alone (from TRL's train begin to its end: forward, backward, optimizer, logging,
no model load, no final save) gives examples/s; the whole ``train()`` call is reported too.
Prints one JSON object, so later changes can be compared.

The two variants are measured side by side in one process: ``--repeats N`` runs them N times each
in an ABBA order (lora, full, full, lora, ...) so that a change in the machine's load hits both
alike; each variant reports its fastest run (``all_examples_per_s`` has every run), and
``lora_over_full`` (examples/s of LoRA over full) compares those. ``loadavg`` is the 1-minute
load average before and after.

    python benchmarks/sft_bench.py [--steps 16] [--batch-size 2] [--repeats 2] [--model smollm2]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _timer():
    from transformers import TrainerCallback

    class LoopTimer(TrainerCallback):
        def __init__(self) -> None:
            self.begin = self.end = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            self.begin = time.perf_counter()

        def on_train_end(self, args, state, control, **kwargs):
            self.end = time.perf_counter()

    return LoopTimer()


def run(variant: str, model: str | None, steps: int, batch_size: int, max_seq_len: int) -> dict:
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    timer = _timer()
    lora = variant == "lora"
    with tempfile.TemporaryDirectory(prefix=f"sft_bench_{variant}_") as tmp:
        trainer = SFTTrainer(
            model,
            output_dir=Path(tmp) / "out",
            batch_size=batch_size,
            lr=2e-4 if lora else 2e-5,
            lora_config=True if lora else None,
            max_steps=steps,
            max_seq_len=max_seq_len,
            use_cpu=True,
            progress_bar=False,
            loss_curve=False,
            report_to=["none"],
            save_steps=10_000,
            callbacks=[timer],
        )
        start = time.perf_counter()
        result = trainer.train(data_path=sample_dataset_path())
        total = time.perf_counter() - start
        params = sum(p.numel() for p in trainer.model.parameters())
        trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    loop = timer.end - timer.begin
    examples = result.steps * batch_size
    return {
        "steps": result.steps,
        "examples": examples,
        "loop_seconds": round(loop, 3),
        "examples_per_s": round(examples / loop, 3) if loop > 0 else None,
        "s_per_step": round(loop / result.steps, 4) if result.steps else None,
        "train_call_seconds": round(total, 3),
        "first_loss": result.first_loss,
        "last_loss": result.last_loss,
        "trainable_params": trainable,
        "params": params,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--max-seq-len", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant, ABBA order")
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()

    import torch

    report: dict = {
        "benchmark": "sft",
        "model": args.model or "smollm2 (SmolLM2-135M-Instruct)",
        "data": "bundled sample (LeanDojo Benchmark 4, random/train.json, 128 tactics)",
        "device": "cpu",
        "dtype": "float32",
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "batch_size": args.batch_size,
    }
    report["loadavg_before"] = round(os.getloadavg()[0], 2)
    repeats = max(1, args.repeats)
    runs: dict[str, list[dict]] = {"lora": [], "full": []}
    for i in range(repeats):
        for variant in ("lora", "full") if i % 2 == 0 else ("full", "lora"):
            runs[variant].append(
                run(variant, args.model, args.steps, args.batch_size, args.max_seq_len)
            )
            print(f"{variant}: {runs[variant][-1]}", file=sys.stderr, flush=True)
    report["loadavg_after"] = round(os.getloadavg()[0], 2)
    report["repeats"] = repeats
    for variant, done in runs.items():
        report[variant] = max(done, key=lambda r: r["examples_per_s"] or 0.0)
        report[variant]["all_examples_per_s"] = [r["examples_per_s"] for r in done]
    lora, full = report["lora"]["examples_per_s"], report["full"]["examples_per_s"]
    report["lora_over_full"] = round(lora / full, 3) if lora and full else None
    text = json.dumps(report)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
