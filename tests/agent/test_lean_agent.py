"""LeanAgent end to end with a tiny encoder and a tiny generator on the bundled real sample, as
two repositories of a curriculum: the retriever is trained with EWC over both, every earlier
repository is re-evaluated after each new one (forgetting = change in R@10), the retriever is
exported, and prove() searches with a RetrievalProver on it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from lean_dojo_v2.agent import LeanAgent, LifelongResult


def test_forgetting_is_the_change_in_r10_since_each_repository_was_learnt(tmp_path):
    """The pass listener with a stand-in trainer whose R@10 per dataset is scripted."""
    from lean_dojo_v2.agent.lean_agent import _ForgettingTracker

    scores = {"a": [0.5, 0.4, 0.3], "b": [0.6, 0.7], "c": [0.2]}
    asked: list[tuple[str, str]] = []

    class Trainer:
        def evaluate(self, data_path, split):
            asked.append((Path(data_path).name, split))
            return {"R@10": scores[Path(data_path).name].pop(0)}

    tracker = _ForgettingTracker(Trainer())
    for k, name in enumerate("abc"):
        tracker(k, SimpleNamespace(label=name), SimpleNamespace(path=tmp_path / name), {})
    assert tracker.r10 == [[0.5], [0.4, 0.6], [0.3, 0.7, 0.2]]
    forgetting = tracker.forgetting()
    assert forgetting == {"a": pytest.approx(-0.2), "b": pytest.approx(0.1), "c": 0.0}
    assert {split for _, split in asked} == {"test"}


@pytest.mark.slow  # about a minute on 2 CPU cores (Lightning, 2 passes, 3 evaluations, 2 searches)
def test_lean_agent_trains_lifelong_reports_forgetting_and_proves(
    tmp_path, sample, tiny_encoder, tiny_causal
):
    import torch

    from lean_dojo_v2.lean_agent.config import ProverConfig, TrainingConfig

    config = TrainingConfig(
        model_name=str(tiny_encoder),
        output_dir=str(tmp_path / "ret"),
        max_steps=2,
        accelerator="cpu",
        progress_bar=False,
        report_to=["none"],
        max_seq_len=64,
        batch_size=8,
    )
    agent = LeanAgent(
        database_path=tmp_path / "db.sqlite",
        training_config=config,
        prover_config=ProverConfig(num_sampled_tactics=2, max_expansions=2, timeout=60),
        generator=str(tiny_causal),
        device="cpu",
        quiet=True,
        progress=False,
    )
    assert agent._get_build_deps() is True
    agent.setup_traced_dataset(sample)
    agent.setup_traced_dataset(sample, url="https://github.com/example/second", commit="c" * 40)
    before = agent.prove(split="val", limit=1)  # BM25 before training, and says so
    assert before.notes and "BM25" in before.notes[0]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = agent.train()
    finally:
        torch.set_num_threads(threads)
    assert isinstance(result, LifelongResult) and len(result.repositories) == 2
    assert [len(row) for row in result.r10] == [1, 2]  # after pass k: repositories 0..k
    assert set(result.forgetting) == set(result.repositories)
    first = result.repositories[0]
    if result.r10[0][0] is not None and result.r10[1][0] is not None:
        assert abs(result.forgetting[first] - (result.r10[1][0] - result.r10[0][0])) < 1e-6
    assert result.steps == 4 and result.ewc_tasks == 2  # the trainer's result reads through
    json.dumps(result.to_dict())
    assert (tmp_path / "raid" / "agents" / "leanagent" / "retriever").is_dir()
    report = agent.prove(split="val", limit=1)
    assert report.attempted == 1 and "retriever" in report.model and not report.notes
    assert type(agent.prover).__name__ == "RetrievalProver"
    metrics = agent.evaluate()
    assert len(metrics) == 2
    agent.close()
