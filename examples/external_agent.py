"""ExternalAgent: best-first search with tactics from a model behind an OpenAI-compatible API.

    vllm serve deepseek-ai/DeepSeek-Prover-V2-7B --port 8000     # on a GPU machine
    python examples/external_agent.py [--model NAME] [--base-url URL]

``train()`` has nothing to train (the model is served elsewhere) and says so; ``prove()`` asks
the endpoint for tactics, re-checks every proof and reports them (``report.to_dict()`` is JSON).
Offline, the repository is the bundled traced sample; with Lean installed, change one line::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")
"""

from __future__ import annotations

import argparse
import json

from lean_dojo_v2.agent import ExternalAgent
from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.prover import SearchConfig

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model", default=None, help="default: the first model the server lists")
parser.add_argument("--base-url", default=None, help="default: $OPENAI_BASE_URL or localhost:8000")
args = parser.parse_args()

agent = ExternalAgent(
    model_name=args.model,
    base_url=args.base_url,
    search_config=SearchConfig(num_samples=4, max_expansions=20, timeout=300),
)
agent.setup_traced_dataset(sample_dataset_path())  # the one line to change (see above)
agent.train()  # nothing to train: says so
report = agent.prove(split="val")
print(json.dumps({k: report.to_dict()[k] for k in ("backend", "attempted", "proved", "proofs")}))
