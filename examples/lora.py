"""HFAgent with a LoRA SFTTrainer, offline on a CPU, on the bundled real sample.

    python examples/lora.py [--model NAME] [--max-steps N] [--output-dir DIR]

Upstream LeanDojo-v2's calls as written: ``SFTTrainer(..., lora_config=LoraConfig(...))`` into
``HFAgent``, then ``train()`` and ``prove()``. Offline, the model is the bundled
SmolLM2-135M-Instruct (upstream names DeepSeek-Prover-V2-7B, which cannot be downloaded here; on a
GPU machine pass ``--model deepseek-ai/DeepSeek-Prover-V2-7B``) and the repository is the bundled
traced sample. With Lean installed, change one line for a GitHub repository::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from peft import LoraConfig  # noqa: E402

from lean_dojo_v2.agent.hf_agent import HFAgent  # noqa: E402
from lean_dojo_v2.data import sample_dataset_path  # noqa: E402
from lean_dojo_v2.prover import SearchConfig  # noqa: E402
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M-Instruct")
parser.add_argument("--max-steps", type=int, default=16, help="SFT steps (default 16)")
parser.add_argument("--output-dir", default="outputs-lora")
args = parser.parse_args()

lora_config = LoraConfig(
    r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM"
)
trainer = SFTTrainer(
    model_name=args.model,
    output_dir=args.output_dir,
    epochs_per_repo=1,
    batch_size=2,
    lr=2e-4,
    lora_config=lora_config,
    max_steps=args.max_steps,
    use_cpu=True,
)  # a short CPU run
agent = HFAgent(
    trainer=trainer,
    device="cpu",
    search_config=SearchConfig(num_samples=4, max_expansions=8, timeout=120),
)
agent.setup_traced_dataset(sample_dataset_path())  # the one line to change (see above)
agent.train()
report = agent.prove()  # the held-out test split (the sample has no sorry); replay, said so
print(f"proved {report.proved} of {report.attempted}; backend {report.backend}")
