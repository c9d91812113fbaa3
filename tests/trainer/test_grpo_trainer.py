"""GRPOTrainer end to end with the tiny random model on the bundled real sample (CPU, seconds each):
upstream LeanDojo-v2's constructor and attributes; 2-step runs in tactic and proof mode write the model or
adapter, summary.json, training_state.json, curves and TensorBoard logs, rewarded by replay; a
database run has one pass per repository and is recorded; an interrupted run resumes and ends
with the weights of an uninterrupted one; GRPO starts from an SFT adapter; bad input (algorithm,
reward name, reward function signature or length, config key, foreign output_dir) is a one-line
error listing the valid choices; the CLI's ``--json`` and ``--help``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lean_dojo_v2.data.output_dir import is_ours
from lean_dojo_v2.errors import OutputExistsError, UnknownConfigKeyError
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

from .conftest import fast_settings
from .test_sft_trainer import Interrupt, assert_same_weights, interrupt_at

SUMMARY_KEYS = {
    "algorithm",
    "mode",
    "steps",
    "mean_reward_first",
    "mean_reward_last",
    "reward_backend",
    "dropped_groups",
    "drop_rate",
    "seconds",
    "output_dir",
    "model_dir",
    "adapter",
    "passes",
    "prompts",
    "resumed_from",
    "run_id",
    "curves",
}


def grpo_settings(**extra):
    """A quick, deterministic tiny-model GRPO run on the CPU: 2 prompts of 2 completions a step."""
    values = dict(
        batch_size=4,
        num_generations=2,
        max_completion_length=8,
        max_prompts=4,
        max_prompt_len=200,  # the shortest goal states: quicker steps
        max_steps=2,
        lr=1e-2,
        use_cpu=True,
        progress_bar=False,
        curves=False,
        report_to=["none"],
        save_steps=1000,
        reward_backend="replay",
        reward_envs=1,
    )
    values.update(extra)
    return values


def test_seed_constructor_and_attributes(tiny_model_dir, tmp_path):
    trainer = GRPOTrainer(
        model_name=str(tiny_model_dir),
        reward_func=None,
        output_dir=tmp_path / "out",
        epochs_per_repo=1,
        batch_size=8,
        lr=2e-5,
        lora_config=None,
    )
    assert trainer.model_name == str(tiny_model_dir) and trainer.output_dir == str(tmp_path / "out")
    assert (trainer.epochs_per_repo, trainer.batch_size, trainer.lr) == (1, 8, 2e-5)
    assert trainer.lora_config is None and trainer.model is None and trainer.reward_func is None
    assert trainer.model_dir == tmp_path / "out"
    assert trainer.config.algorithm == "grpo" and trainer.algorithm.name == "grpo"
    assert [s.name for s in trainer.scorers] == ["lean_tactic", "format"]
    lora = GRPOTrainer(
        str(tiny_model_dir), output_dir=tmp_path / "x", lora_config={"r": 4, "lora_alpha": 8}
    )
    assert lora.config.lora and lora.lora_config.r == 4 and lora.lora_config.lora_alpha == 8
    dapo = GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "y", algorithm="dapo")
    assert [s.name for s in dapo.scorers] == ["lean_tactic", "format", "overlong"]
    assert "dapo" in repr(dapo)


def _check_outputs(out: Path, result, *, adapter: bool, mode: str) -> None:
    summary = json.loads((out / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary["reward_backend"] == "replay" and summary["mode"] == mode
    assert summary["steps"] == result.steps == 2
    assert summary["mean_reward_first"] is not None and summary["mean_reward_last"] is not None
    state = json.loads((out / "training_state.json").read_text())
    assert state["finished"] is True and state["passes_done"] == 1
    [p] = state["passes"]
    assert [e["step"] for e in p["history"]] == [1, 2]
    assert set(p["history"][0]["rewards"]) == set(result.rewards)
    if adapter:
        assert (out / "adapter_model.safetensors").is_file()
        assert not (out / "model.safetensors").exists()
    else:
        assert (out / "model.safetensors").is_file()
    assert is_ours(out) and (out / "grpo_config.yaml").is_file()


def test_tactic_mode_lora_run_writes_adapter_summary_state_curves_and_logs(
    tiny_model_dir, sample_path, tmp_path
):
    out = tmp_path / "tactic"
    result = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=out,
        lora_config=True,
        **grpo_settings(curves=True, report_to=["tensorboard"]),
    ).train(data_path=sample_path)
    _check_outputs(out, result, adapter=True, mode="tactic")
    assert result.algorithm == "grpo" and result.prompts == 4 and result.adapter
    assert result.rewards == ["lean_tactic", "format"]
    assert (
        result.curves == str(out / "grpo_curves.png") and (out / "grpo_curves.png").stat().st_size
    )
    assert list((out / "logs" / "pass-000").glob("events.out.tfevents.*"))
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_model_dir.resolve())


def test_proof_mode_full_run_writes_the_model(tiny_model_dir, sample_path, tmp_path):
    out = tmp_path / "proof"
    result = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=out,
        mode="proof",
        **grpo_settings(max_completion_length=16, max_prompt_len=400),
    ).train(data_path=sample_path)
    _check_outputs(out, result, adapter=False, mode="proof")
    assert result.rewards == ["lean_proof", "format"]


@pytest.mark.parametrize(
    ("prompts", "steps", "killed_at"),
    [
        (8, 3, 2),  # within one epoch (8 prompts, 2 a step): killed at step 2
        (4, 4, 3),  # across an epoch boundary (2 steps an epoch): resumed from the end of epoch 1
    ],
)
def test_interrupted_run_resumes_and_ends_where_uninterrupted_does(
    tiny_model_dir, sample_path, tmp_path, prompts, steps, killed_at
):
    settings = grpo_settings(max_prompts=prompts, max_steps=steps, save_steps=1)
    straight = tmp_path / "straight"
    full = GRPOTrainer(str(tiny_model_dir), output_dir=straight, **settings).train(
        data_path=sample_path
    )
    assert full.steps == steps
    resumed = tmp_path / "resumed"
    with pytest.raises(Interrupt):
        GRPOTrainer(
            str(tiny_model_dir), output_dir=resumed, callbacks=[interrupt_at(killed_at)], **settings
        ).train(data_path=sample_path)
    last = f"checkpoint-{killed_at - 1}"
    assert (resumed / "checkpoints" / "pass-000" / last).is_dir()
    again = GRPOTrainer(str(tiny_model_dir), output_dir=resumed, **settings).train(
        data_path=sample_path
    )
    assert again.resumed_from is not None and again.resumed_from.endswith(last)
    assert again.steps == full.steps
    # The mean reward of the last step depends on which prompts it drew: the same order.
    assert again.mean_reward_last == pytest.approx(full.mean_reward_last, abs=1e-6)
    assert_same_weights(straight, resumed)


def test_database_run_one_pass_per_repository_recorded(tiny_model_dir, sample_path, tmp_path):
    from .test_sft_trainer import _two_repo_db

    with _two_repo_db(tmp_path / "db.sqlite", sample_path) as db:
        order = db.sort_repositories_by_difficulty()
        out = tmp_path / "db-run"
        result = GRPOTrainer(
            str(tiny_model_dir), output_dir=out, **grpo_settings(max_steps=1)
        ).train(database=db)
        assert result.steps == 2 and len(result.passes) == 2
        assert [p["label"] for p in result.passes] == [f"{r.name}@{r.commit[:12]}" for r in order]
        assert all(p["reward_backend"] == "replay" for p in result.passes)
        [run] = db.training_runs()
        assert (run.kind, run.status) == ("grpo", "finished") and run.id == result.run_id
        assert run.metrics["algorithm"] == "grpo" and run.metrics["steps"] == 2


def test_grpo_continues_an_sft_adapter_or_merges_it(tiny_model_dir, sample_path, tmp_path):
    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    sft = SFTTrainer(
        str(tiny_model_dir),
        output_dir=tmp_path / "sft",
        lora_config=True,
        **fast_settings(max_steps=1),
    ).train(data_path=sample_path)
    on = GRPOTrainer(
        sft.model_dir, output_dir=tmp_path / "on", lora_config=True, **grpo_settings(max_steps=1)
    ).train(data_path=sample_path)
    config = json.loads((Path(on.model_dir) / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_model_dir.resolve())  # not the SFT folder
    assert load_model(on.model_dir, device="cpu").kind == "causal"
    merged = GRPOTrainer(
        sft.model_dir, output_dir=tmp_path / "merged", **grpo_settings(max_steps=1)
    )
    merged.train(data_path=sample_path)
    assert (tmp_path / "merged" / "model.safetensors").is_file()
    assert not (tmp_path / "merged" / "adapter_config.json").exists()


def test_a_user_reward_function_list_or_tensor(tiny_model_dir, sample_path, tmp_path):
    import torch

    seen: dict[str, list] = {}

    def short_is_good(completions, **kwargs):
        seen.update(kwargs)
        return torch.tensor([1.0 / (1 + len(c)) for c in completions])

    result = GRPOTrainer(
        str(tiny_model_dir),
        reward_func=short_is_good,
        output_dir=tmp_path / "user",
        **grpo_settings(max_steps=1),
    ).train(data_path=sample_path)
    assert result.steps == 1 and result.reward_backend is None
    assert result.rewards == ["short_is_good"]
    assert {"state", "theorem_key", "recorded_tactic", "difficulty"} <= set(seen)


# ---------------------------------------------------------------------- bad input


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, text
    return text


def test_unknown_algorithm_lists_every_name(tiny_model_dir, tmp_path):
    from lean_dojo_v2.trainer.errors import UnknownAlgorithmError

    with pytest.raises(UnknownAlgorithmError) as exc:
        GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "o", algorithm="ppo")
    text = _one_line(exc.value)
    assert "ppo" in text and all(n in text for n in ("grpo", "dapo", "gspo", "dgpo", "grpo_dpo"))


def test_unknown_reward_name_and_weight_list_the_valid_ones(tiny_model_dir, tmp_path):
    from lean_dojo_v2.trainer.errors import UnknownRewardError

    with pytest.raises(UnknownRewardError) as exc:
        GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "o", rewards=["lean_tatic"])
    assert "lean_tactic" in _one_line(exc.value) and "algebra" in str(exc.value)
    with pytest.raises(UnknownConfigKeyError) as exc2:
        GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "o", reward_weights={"algebra": 1})
    assert "lean_tactic" in _one_line(exc2.value)


def test_unknown_config_key_from_the_api_and_algorithm_config(tiny_model_dir, tmp_path):
    with pytest.raises(UnknownConfigKeyError) as exc:
        GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "o", num_generation=4)
    assert "num_generations" in _one_line(exc.value)
    with pytest.raises(UnknownConfigKeyError) as exc2:
        GRPOTrainer(
            str(tiny_model_dir), output_dir=tmp_path / "o", algorithm_config={"epsilonn": 1}
        )
    assert "epsilon" in _one_line(exc2.value)


def test_unknown_trl_arg_lists_trl_grpo_config_fields(tiny_model_dir, sample_path, tmp_path):
    trainer = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=tmp_path / "o",
        **grpo_settings(trl_args={"num_iteration": 2}),
    )
    with pytest.raises(UnknownConfigKeyError) as exc:
        trainer.train(data_path=sample_path)
    assert "num_iterations" in _one_line(exc.value) and "trl.GRPOConfig" in str(exc.value)


def test_reward_function_with_a_wrong_signature_fails_in_the_constructor(tiny_model_dir, tmp_path):
    from lean_dojo_v2.trainer.errors import RewardFunctionError

    def wants_outputs(outputs):
        return [0.0] * len(outputs)

    with pytest.raises(RewardFunctionError) as exc:
        GRPOTrainer(str(tiny_model_dir), reward_func=wants_outputs, output_dir=tmp_path / "o")
    assert "completions" in _one_line(exc.value)


def test_reward_function_of_the_wrong_length_fails_at_the_first_step(
    tiny_model_dir, sample_path, tmp_path
):
    from lean_dojo_v2.trainer.errors import RewardFunctionError

    def one_short(completions, **kwargs):
        return [0.0] * (len(completions) - 1)

    trainer = GRPOTrainer(
        str(tiny_model_dir), reward_func=one_short, output_dir=tmp_path / "o", **grpo_settings()
    )
    with pytest.raises(RewardFunctionError) as exc:
        trainer.train(data_path=sample_path)
    _one_line(exc.value)


def test_too_few_prompts_for_one_generation_batch_is_a_clear_error(
    tiny_model_dir, sample_path, tmp_path
):
    from lean_dojo_v2.trainer.errors import EmptyDatasetError

    trainer = GRPOTrainer(
        str(tiny_model_dir), output_dir=tmp_path / "o", **grpo_settings(max_prompts=1)
    )
    with pytest.raises(EmptyDatasetError, match="1 prompts, fewer than the 2 one generation"):
        trainer.train(data_path=sample_path)


def test_an_existing_foreign_output_dir_is_refused_without_force(
    tiny_model_dir, sample_path, tmp_path
):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    trainer = GRPOTrainer(str(tiny_model_dir), output_dir=out, **grpo_settings(max_steps=1))
    with pytest.raises(OutputExistsError, match="did not write"):
        trainer.train(data_path=sample_path)
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and trainer.model is None


# ---------------------------------------------------------------------- CLI


def test_cli_json_last_line_and_force(tiny_model_dir, sample_path, tmp_path, capsys):
    from lean_dojo_v2.cli import main

    out = tmp_path / "cli"
    out.mkdir()
    (out / "notes.txt").write_text("x")
    sets = [
        f"model_name={tiny_model_dir}",
        "max_steps=1",
        "batch_size=4",
        "num_generations=2",
        "max_completion_length=8",
        "max_prompts=2",
        "use_cpu=true",
        "progress_bar=false",
        "report_to=none",
        "reward_backend=replay",
        "reward_envs=1",
    ]
    argv = ["train", "grpo", "--data", str(sample_path), "--algorithm", "dr_grpo", "-o", str(out)]
    argv += [a for s in sets for a in ("--set", s)]
    assert main([*argv, "--json"]) == 1  # foreign output_dir
    assert "did not write" in capsys.readouterr().err
    assert main([*argv, "--json", "--force", "--mode", "tactic"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    summary = json.loads(last)
    assert summary["algorithm"] == "dr_grpo" and summary["steps"] == 1
    assert summary["reward_backend"] == "replay" and SUMMARY_KEYS <= set(summary)


def test_cli_unknown_set_key_is_one_line(sample_path, tmp_path, capsys):
    from lean_dojo_v2.cli import main

    code = main(
        ["train", "grpo", "--data", str(sample_path), "-o", str(tmp_path / "o"), "--set", "lrr=1"]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 1 and len(lines) == 1 and "'lrr'" in lines[0] and "lr" in lines[0]
    assert not (tmp_path / "o").exists()


def test_cli_help_lists_every_algorithm_and_reward(capsys):
    from lean_dojo_v2.cli import main
    from lean_dojo_v2.trainer.rl.algorithms import algorithm_names
    from lean_dojo_v2.trainer.rl.rewards import available_scorers

    with pytest.raises(SystemExit) as exc:
        main(["train", "grpo", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert all(name in text for name in algorithm_names())
    assert all(name in text for name in available_scorers())
    assert "--algorithm" in text and "--mode" in text and "--json" in text


def test_env_crashes_and_timeouts_mid_rollout_score_as_errors_and_training_goes_on(
    tiny_model_dir, sample_path, tmp_path, monkeypatch
):
    """Every other check crashes its environment (as a dying Pantograph REPL does) or times out:
    those completions get the error reward, the run finishes its steps, the pass counts them."""
    from lean_dojo_v2.interaction import EnvCrashedError, ReplayEnv, TacticTimeout
    from lean_dojo_v2.trainer.grpo_data import theorem_key
    from lean_dojo_v2.trainer.rl.rewards import RewardContext

    class Flaky(ReplayEnv):
        calls = 0

        def run_tactic(self, state, tactic, timeout=None):
            Flaky.calls += 1
            if Flaky.calls % 3 == 1:
                raise EnvCrashedError("the REPL died (test)")
            if Flaky.calls % 3 == 2:
                return TacticTimeout("ran out of time (test)", self.backend, timeout=timeout)
            return super().run_tactic(state, tactic, timeout)

    def flaky_context(self, theorems):
        theorems = list(theorems.values()) if isinstance(theorems, dict) else list(theorems)
        env = Flaky.from_theorems(theorems)
        return RewardContext({theorem_key(t): t for t in theorems}, [env])

    monkeypatch.setattr(GRPOTrainer, "_open_context", flaky_context)
    result = GRPOTrainer(
        str(tiny_model_dir), output_dir=tmp_path / "flaky", **grpo_settings(max_steps=2)
    ).train(data_path=sample_path)
    assert result.steps == 2 and Flaky.calls > 0
    checks = result.passes[0]["reward_checks"]
    assert checks["crashes"] >= 1 and checks["timeouts"] >= 1, checks
    assert result.mean_reward_first is not None and result.mean_reward_last is not None
