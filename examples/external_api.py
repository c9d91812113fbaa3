"""ExternalAgent: whole proofs from a model behind an OpenAI-compatible API.

    OPENAI_BASE_URL=https://router.huggingface.co/v1 OPENAI_API_KEY=$HF_TOKEN \\
        python examples/external_api.py

Upstream LeanDojo-v2's calls as written: ``from lean_dojo_v2.agent import ExternalAgent``,
``ExternalAgent(model_name=...)``, ``prove(whole_proof=True)``. The endpoint comes from
``OPENAI_BASE_URL`` (default: a local ``vllm serve`` at http://localhost:8000/v1) and the key from
``OPENAI_API_KEY``; an endpoint that cannot be reached is one line before any search. Offline, the
repository is the bundled traced sample; with Lean installed, change one line::

    agent.setup_github_repository(url="https://github.com/durant42040/lean4-example",
                                  commit="005de00d03f1aaa32cb2923d5e3cbaf0b954a192")
"""

from __future__ import annotations

from lean_dojo_v2.agent import ExternalAgent
from lean_dojo_v2.data import sample_dataset_path

agent = ExternalAgent(model_name="deepseek-ai/DeepSeek-Prover-V2-671B:novita")
agent.setup_traced_dataset(sample_dataset_path())  # the one line to change (see above)
report = agent.prove(whole_proof=True)
print(f"proved {report.proved} of {report.attempted} with whole proofs; backend {report.backend}")
