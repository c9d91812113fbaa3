"""HFAgent end to end with tiny models on the bundled real sample: with an SFTTrainer (LoRA, as
examples/lora.py) and with a GRPOTrainer; before train() it proves with the trainer's base model
and says so; after, with ``HFProver(output_dir, use_lora=...)``. Bad input: a trainer without an
output_dir."""

from __future__ import annotations

import pytest

from lean_dojo_v2.agent import AgentConfigError, HFAgent
from lean_dojo_v2.prover import SearchConfig

SEARCH = SearchConfig(num_samples=2, max_expansions=2, timeout=60)


def _sft(model, out, **extra):
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    values = dict(max_steps=2, use_cpu=True, progress_bar=False, report_to=["none"])
    values.update(extra)
    return SFTTrainer(
        model_name=str(model), output_dir=out, epochs_per_repo=1, batch_size=2, lr=2e-5, **values
    )


def test_sft_agent_trains_on_the_curriculum_and_proves_with_the_adapter(
    tmp_path, sample, tiny_causal, capsys
):
    from peft import LoraConfig

    trainer = _sft(tiny_causal, tmp_path / "out", lora_config=LoraConfig(r=4, lora_alpha=8))
    agent = HFAgent(
        trainer=trainer,
        database_path=tmp_path / "db.sqlite",
        device="cpu",
        search_config=SEARCH,
        progress=False,
    )
    assert agent.use_lora and agent.output_dir == tmp_path / "out"
    agent.setup_traced_dataset(sample)
    before = agent.prove(split="val", limit=1)
    err = capsys.readouterr().err
    assert "not trained yet" in err and str(tiny_causal) in err and "backend: replay" in err
    assert before.trained is False and before.model == str(tiny_causal)
    assert before.notes and "base model" in before.notes[0]
    result = agent.train()
    assert result.steps == 2 and result.adapter
    assert (tmp_path / "out" / "adapter_config.json").is_file()
    runs = agent.database.training_runs()
    assert [r.kind for r in runs] == ["sft"] and runs[0].status == "finished"
    after = agent.prove(split="val", limit=1)
    assert after.trained and after.model == str(tmp_path / "out")
    assert agent.prover.use_lora and str(agent.prover.ckpt_path) == str(tmp_path / "out")
    d = after.to_dict()
    assert d["backend"] == "replay" and d["attempted"] == len(after.outcomes) >= 1
    assert all(o["status"] in ("proved", "failed", "timeout", "error") for o in d["outcomes"])
    agent.close()


def test_grpo_agent_reads_output_dir_and_lora_config(tmp_path, sample, tiny_causal):
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    trainer = GRPOTrainer(
        str(tiny_causal),
        output_dir=tmp_path / "grpo",
        lora_config=True,
        batch_size=4,
        num_generations=2,
        max_completion_length=8,
        max_prompts=4,
        max_prompt_len=200,
        max_steps=1,
        use_cpu=True,
        progress_bar=False,
        curves=False,
        report_to=["none"],
        reward_backend="replay",
        reward_envs=1,
    )
    agent = HFAgent(
        trainer=trainer,
        database_path=tmp_path / "db.sqlite",
        device="cpu",
        search_config=SEARCH,
        quiet=True,
        progress=False,
    )
    agent.setup_traced_dataset(sample)
    result = agent.train()
    assert result.steps == 1
    report = agent.prove(split="val", limit=1)
    assert report.trained and report.attempted == 1
    assert agent.prover.use_lora and str(agent.prover.ckpt_path) == str(tmp_path / "grpo")
    agent.close()


def test_trainer_without_output_dir_is_a_one_line_error(tmp_path):
    class NoOutput:
        def train(self, repos=None, database=None):  # pragma: no cover - never called
            raise AssertionError

    for trainer in (NoOutput(), type("T", (NoOutput,), {"output_dir": ""})()):
        with pytest.raises(AgentConfigError, match="output_dir") as info:
            HFAgent(trainer=trainer, database_path=tmp_path / "db.sqlite")
        assert "\n" not in str(info.value)
    with pytest.raises(AgentConfigError, match="needs a trainer"):
        HFAgent(trainer=None)
    assert not (tmp_path / "db.sqlite").exists()


def test_prover_config_of_the_seed_sets_the_search(tmp_path):
    from lean_dojo_v2.lean_agent.config import ProverConfig

    trainer = _sft("smollm2", tmp_path / "o")
    agent = HFAgent(
        trainer, prover_config=ProverConfig(num_sampled_tactics=3, timeout=9, max_expansions=7)
    )
    c = agent.search_config
    assert (c.num_samples, c.timeout, c.max_expansions) == (3, 9.0, 7)


def test_prover_config_num_workers_sets_workers_unless_given(tmp_path):
    from lean_dojo_v2.lean_agent.config import ProverConfig

    trainer = _sft("smollm2", tmp_path / "o")
    assert HFAgent(trainer, prover_config=ProverConfig(num_workers=3)).workers == 3
    assert HFAgent(trainer, prover_config=ProverConfig(num_workers=3), workers=1).workers == 1
    assert HFAgent(trainer).workers == 1


@pytest.mark.slow  # worker processes importing torch (12 s); make test-slow runs it
def test_sft_agent_proves_with_worker_processes(tmp_path, sample, tiny_causal):
    """``workers=2``: each worker process loads the model the agent would (the base model before
    train(), the trained one after), and the results match proving in this process."""
    from lean_dojo_v2.prover.parallel import HFProverSpec

    trainer = _sft(tiny_causal, tmp_path / "out", lora_config=True)
    kwargs = dict(device="cpu", search_config=SEARCH, progress=False, quiet=True)
    kwargs["prover_kwargs"] = {"strategy": "beam"}  # deterministic: same candidates everywhere
    agent = HFAgent(trainer, database_path=tmp_path / "db.sqlite", workers=2, **kwargs)
    agent.setup_traced_dataset(sample)
    spec = agent._prover_factory()
    assert spec == HFProverSpec(str(tiny_causal), "cpu", {"use_lora": False, "strategy": "beam"})
    agent.train()
    spec = agent._prover_factory()
    assert spec == HFProverSpec(
        str(tmp_path / "out"), "cpu", {"use_lora": True, "strategy": "beam"}
    )
    par = agent.prove(split="train", limit=3, write_back=False)
    assert agent.prover is None and par.attempted == 3 and par.trained
    agent.workers = 1
    inline = agent.prove(split="train", limit=3, write_back=False)
    assert [(o.theorem, o.status, o.expansions) for o in par.outcomes] == [
        (o.theorem, o.status, o.expansions) for o in inline.outcomes
    ]
    agent.close()
