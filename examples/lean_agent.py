"""LeanAgent: lifelong premise retrieval over two repositories, then proving with it.

    python examples/lean_agent.py [--encoder NAME] [--generator NAME] [--max-steps N]

Upstream LeanDojo-v2's calls as written: ``LeanAgent()``, two repositories set up, ``train()``,
``prove()``. Offline there is one bundled traced repository (a sample of mathlib4); it is added
twice, the second time under another URL, so that the curriculum has two repositories and the report
shows forgetting (R@10 of the first repository after the second was learnt, minus right after it was
learnt). With Lean installed, change the two setup lines to upstream's::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")
    agent.setup_github_repository(url="https://github.com/yangky11/miniF2F-lean4", commit="main")
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything used here is local

from lean_dojo_v2.agent import LeanAgent  # noqa: E402
from lean_dojo_v2.data import sample_dataset_path  # noqa: E402
from lean_dojo_v2.lean_agent.config import ProverConfig, TrainingConfig  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--encoder", default=None, help="default: the bundled all-MiniLM-L6-v2")
parser.add_argument("--generator", default=None, help="default: the bundled SmolLM2")
parser.add_argument("--max-steps", type=int, default=20, help="retriever steps per repository")
parser.add_argument("--output-dir", default="outputs-lean-agent")
args = parser.parse_args()

agent = LeanAgent(
    training_config=TrainingConfig(
        model_name=args.encoder,
        max_steps=args.max_steps,
        output_dir=args.output_dir,
        accelerator="cpu",
        overwrite_output_dir=True,
    ),
    prover_config=ProverConfig(num_sampled_tactics=4, max_expansions=8, timeout=120),
    generator=args.generator,
    device="cpu",
)
sample = sample_dataset_path()
agent.setup_traced_dataset(sample)  # upstream: setup_github_repository(...)
agent.setup_traced_dataset(sample, url="https://github.com/example/mathlib4-copy", commit="0" * 40)
result = agent.train()  # R@10 per repository after each one, and forgetting
print({"forgetting": result.forgetting, "r10": result.r10})
report = agent.prove()
print(f"proved {report.proved} of {report.attempted}; backend {report.backend}")
