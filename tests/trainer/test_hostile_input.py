"""Hostile input to ``train sft`` / ``train grpo`` and to ``SFTTrainer`` / ``GRPOTrainer``: each
case is one typed line (the CLI: one ``error:`` line on stderr, status 1), and nothing is written
before the inputs are checked: no run directory, no lock beside it, no file in a folder the user
named elsewhere. Rewards that are infinite or never return stop a GRPO run with a typed error
naming the function, in seconds."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lean_dojo_v2.agent import AgentConfigError
from lean_dojo_v2.cli import main
from lean_dojo_v2.config.loading import load_config
from lean_dojo_v2.errors import ConfigValueError, DataFormatError, ModelNotFoundError
from lean_dojo_v2.trainer.errors import (
    OutputDirArgumentError,
    RewardFunctionError,
    RewardTimeoutError,
    UnknownAlgorithmError,
)
from lean_dojo_v2.trainer.grpo_config import GRPOConfig
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer
from lean_dojo_v2.trainer.sft_config import SFTConfig
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

from .test_grpo_trainer import grpo_settings

QUICK_GRPO = [
    "max_steps=1",
    "batch_size=4",
    "num_generations=2",
    "max_completion_length=8",
    "max_prompts=4",
    "max_prompt_len=200",
    "use_cpu=true",
    "progress_bar=false",
    "report_to=none",
    "reward_backend=replay",
    "reward_envs=1",
]


def _run_cli(command: str, data: Path, out: Path, sets: list[str], *extra: str) -> int:
    """``train COMMAND`` with ``--set`` each of ``sets``, then ``extra`` (which win)."""
    argv = ["train", command, "--data", str(data), "-o", str(out)]
    return main(argv + [a for s in sets for a in ("--set", s)] + list(extra))


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _nothing_written(out: Path) -> None:
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# ---------------------------------------------------------------------- trl_args that write


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("output_dir", "--set output_dir"),
        ("logging_dir", "output_dir/logs"),
        ("overwrite_output_dir", "--force"),
        ("push_to_hub", "upload"),
        ("hub_model_id", "upload"),
        ("hub_always_push", "upload"),
        ("log_completions_hub_repo", "upload"),
        ("report_to", "report_to"),
        ("trackio_space_id", "report_to"),
    ],
)
@pytest.mark.parametrize("config_cls", [SFTConfig, GRPOConfig])
def test_trl_args_may_not_write_elsewhere_and_name_the_field_to_use(config_cls, key, hint):
    with pytest.raises(ConfigValueError) as exc:
        load_config(config_cls, None, [f"trl_args={{{key}: somewhere}}"])
    text = str(exc.value)
    assert "\n" not in text and repr(key) in text and hint in text


def test_grpo_reward_weights_go_in_the_config_not_trl_args():
    with pytest.raises(ConfigValueError, match="use the config's reward_weights"):
        load_config(GRPOConfig, None, ["trl_args={reward_weights: [1.0, 0.5]}"])


@pytest.mark.parametrize("command", ["sft", "grpo"])
def test_cli_trl_args_output_dir_leaves_the_users_folder_untouched(
    command, sample_path, tiny_model_dir, tmp_path, capsys
):
    mine = tmp_path / "my-folder"
    (mine / "checkpoint-1").mkdir(parents=True)
    (mine / "README.md").write_text("my notes\n")
    (mine / "checkpoint-1" / "model.safetensors").write_bytes(b"my weights")
    before = _tree(mine)
    out = tmp_path / "run"
    sets = [f"model_name={tiny_model_dir}", f"trl_args={{output_dir: {mine}}}"]
    sets += QUICK_GRPO if command == "grpo" else ["max_steps=1", "use_cpu=true"]
    assert _run_cli(command, sample_path, out, sets) == 1
    line = _one_error_line(capsys)
    assert "'output_dir'" in line and "--set output_dir" in line
    assert _tree(mine) == before
    _nothing_written(out)


# ---------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["seed=-1"], "'seed' must be a whole number from 0 to 4294967295"),
        (["seed=4294967296"], "'seed' must be a whole number from 0"),
        (["trl_args={seed: -5}"], "trl_args seed must be a whole number from 0"),
        (["trl_args={data_seed: -5}"], "trl_args data_seed"),
        (["trl_args={num_iterations: -3}"], "trl_args num_iterations must be a whole number of"),
        (["trl_args={per_device_train_batch_size: 0}"], "per_device_train_batch_size"),
        (["trl_args={num_train_epochs: 0}"], "num_train_epochs must be a number above 0"),
        (["trl_args={learning_rate: -1}"], "learning_rate"),
        (["trl_args={max_steps: 0}"], "max_steps must be -1 or a whole number"),
        (["trl_args={seed: abc}"], "trl_args seed must be a whole number"),
    ],
)
@pytest.mark.parametrize("config_cls", [SFTConfig, GRPOConfig])
def test_numbers_trl_takes_unchecked_are_range_checked_with_the_config(
    config_cls, overrides, words
):
    with pytest.raises(ConfigValueError) as exc:
        load_config(config_cls, None, overrides)
    assert words in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["trl_args={temperature: 0}"], "temperature must be a number above 0"),
        (["trl_args={top_p: 1.5}"], "top_p must be a number in (0, 1]"),
        (["trl_args={num_generations: 1}"], "num_generations must be a whole number of at least 2"),
        (["trl_args={max_completion_length: 100000000}"], "from 1 to 131072"),
        (["max_completion_length=100000000"], "'max_completion_length' must be from 1 to 131072"),
        (["trl_args={beta: -0.1}"], "beta must be a number of 0 or more"),
    ],
)
def test_grpo_numbers_are_range_checked_with_the_config(overrides, words):
    with pytest.raises(ConfigValueError) as exc:
        load_config(GRPOConfig, None, overrides)
    assert words in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------------- TRL's batch rules

# (batch_size, gradient_accumulation_steps, num_generations, trl_args)
BATCHES = [
    (8, 1, 3, {}),
    (8, 1, 4, {}),
    (6, 1, 3, {}),
    (1, 3, 3, {}),
    (2, 2, 4, {}),
    (4, 1, 2, {"per_device_train_batch_size": 3}),
    (4, 1, 2, {"per_device_train_batch_size": 6}),
    (4, 1, 4, {"steps_per_generation": 2}),
    (4, 1, 8, {"steps_per_generation": 3}),
    (4, 1, 2, {"generation_batch_size": 6}),
    (4, 1, 2, {"generation_batch_size": 8}),
    (4, 1, 4, {"generation_batch_size": 12}),
    (4, 1, 2, {"generation_batch_size": 8, "steps_per_generation": 2}),
    (4, 2, 3, {"gradient_accumulation_steps": 3}),
]


def test_generation_batch_rules_agree_with_trl_and_are_checked_with_the_config():
    """Each combination is refused by our config exactly when TRL's own config refuses it."""
    from trl import GRPOConfig as TRLConfig

    for batch, accumulation, generations, trl_args in BATCHES:
        values = {
            "per_device_train_batch_size": batch,
            "gradient_accumulation_steps": accumulation,
            "num_generations": generations,
            **trl_args,
        }
        try:
            TRLConfig(output_dir="unused", use_cpu=True, report_to="none", **values)
            trl_ok = True
        except ValueError:
            trl_ok = False
        try:
            GRPOConfig(
                batch_size=batch,
                gradient_accumulation_steps=accumulation,
                num_generations=generations,
                trl_args=trl_args,
            )
            ours_ok = True
        except ConfigValueError as exc:
            assert "\n" not in str(exc)
            ours_ok = False
        assert ours_ok == trl_ok, (batch, accumulation, generations, trl_args, trl_ok)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["num_generations=3", "batch_size=8"], "use a batch_size that is a multiple of 3"),
        (["algorithm=dapo", "num_generations=3", "batch_size=2"], "num_generations=3"),
        (
            ["trl_args={per_device_train_batch_size: 3}"],
            "trl_args per_device_train_batch_size that is a multiple of 4",
        ),
        (["algorithm=gspo", "trl_args={generation_batch_size: 8}"], "algorithm 'gspo'"),
    ],
)
def test_generation_batch_errors_name_what_to_change(overrides, words):
    with pytest.raises(ConfigValueError) as exc:
        load_config(GRPOConfig, None, overrides)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_dynamic_sampling_needs_whole_groups_on_each_process(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    load_config(GRPOConfig, None, ["algorithm=grpo", "batch_size=1", "num_generations=2"])
    with pytest.raises(ConfigValueError, match="each of 2 processes"):
        load_config(GRPOConfig, None, ["algorithm=dapo", "batch_size=1", "num_generations=2"])


@pytest.mark.parametrize(
    "extra",
    [
        ["--set", "num_generations=3", "--set", "batch_size=8"],
        ["--algorithm", "dapo", "--set", "num_generations=3", "--set", "batch_size=2"],
        ["--set", "trl_args={per_device_train_batch_size: 3}"],
        ["--set", "seed=-1"],
        ["--set", "trl_args={seed: -5}"],
        ["--set", "trl_args={num_iterations: -3}"],
        ["--set", "max_completion_length=100000000"],
        ["--algorithm", ""],
        ["--algorithm", "ppo"],
    ],
)
def test_cli_grpo_bad_numbers_and_names_are_one_line_and_write_nothing(
    extra, sample_path, tiny_model_dir, tmp_path, capsys
):
    out = tmp_path / "run"
    code = _run_cli("grpo", sample_path, out, [f"model_name={tiny_model_dir}", *QUICK_GRPO], *extra)
    assert code == 1
    _one_error_line(capsys)
    _nothing_written(out)


def test_empty_or_unknown_algorithm_lists_the_valid_ones(capsys, sample_path, tmp_path):
    from lean_dojo_v2.trainer.rl.algorithms import algorithm_names

    for name in ("", "ppo"):
        with pytest.raises(UnknownAlgorithmError) as exc:
            load_config(GRPOConfig, None, {"algorithm": name})
        assert all(n in str(exc.value) for n in algorithm_names())
    assert _run_cli("grpo", sample_path, tmp_path / "o", [], "--algorithm", "") == 1
    line = _one_error_line(capsys)
    assert "unknown GRPO algorithm ''" in line and "dr_grpo" in line


# ---------------------------------------------------------------------- data and model first


@pytest.mark.parametrize("command", ["sft", "grpo"])
@pytest.mark.parametrize("bad", ["data", "model"])
def test_bad_data_or_missing_model_writes_no_run_directory(
    command, bad, sample_path, tiny_model_dir, tmp_path, capsys
):
    data = sample_path
    model = str(tiny_model_dir)
    if bad == "data":
        data = tmp_path / "train.json"
        data.write_text("this is not JSON\n")
    else:
        model = "/nonexistent/model"
    out = tmp_path / "run"
    sets = [f"model_name={model}"]
    sets += QUICK_GRPO if command == "grpo" else ["max_steps=1", "use_cpu=true"]
    assert _run_cli(command, data, out, sets) == 1
    line = _one_error_line(capsys)
    assert ("invalid JSON" if bad == "data" else "/nonexistent/model") in line
    _nothing_written(out)


def test_python_api_checks_data_and_model_before_the_run_directory(
    sample_path, tiny_model_dir, tmp_path
):
    bad = tmp_path / "train.json"
    bad.write_text("[{]")
    with pytest.raises(DataFormatError):
        GRPOTrainer(str(tiny_model_dir), output_dir=tmp_path / "a", **grpo_settings()).train(
            data_path=bad
        )
    with pytest.raises(ModelNotFoundError):
        SFTTrainer(str(tmp_path / "no-model"), output_dir=tmp_path / "b").train(
            data_path=sample_path
        )
    _nothing_written(tmp_path / "a")
    _nothing_written(tmp_path / "b")


def test_completion_longer_than_the_model_context_is_refused_before_writing(
    sample_path, tiny_model_dir, tmp_path
):
    out = tmp_path / "run"
    trainer = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=out,
        **grpo_settings(max_completion_length=900, max_prompt_len=200),
    )
    with pytest.raises(ConfigValueError) as exc:
        trainer.train(data_path=sample_path)
    text = str(exc.value)
    assert "200 + 900" in text and "1024 tokens" in text and "\n" not in text
    assert trainer.model is None
    _nothing_written(out)


def test_other_trl_refusals_come_before_anything_is_written(sample_path, tiny_model_dir, tmp_path):
    """What TRL's own config refuses (here: a batch-size search GRPO cannot do) is found by
    building it before the run directory exists, as a one-line ConfigValueError."""
    out = tmp_path / "run"
    trainer = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=out,
        **grpo_settings(trl_args={"auto_find_batch_size": True}),
    )
    with pytest.raises(ConfigValueError) as exc:
        trainer.train(data_path=sample_path)
    assert "trl.GRPOConfig" in str(exc.value) and "auto_find_batch_size" in str(exc.value)
    assert "\n" not in str(exc.value)
    _nothing_written(out)


# ---------------------------------------------------------------------- constructors


@pytest.mark.parametrize("trainer_cls", [SFTTrainer, GRPOTrainer])
@pytest.mark.parametrize("output_dir", [None, "", "  ", 123, ["a"], b"outputs"])
def test_constructor_output_dir_is_a_typed_error_the_agents_promise(trainer_cls, output_dir):
    with pytest.raises(OutputDirArgumentError) as exc:
        trainer_cls(output_dir=output_dir)
    err = exc.value
    assert isinstance(err, AgentConfigError) and isinstance(err, ConfigValueError)
    assert "output_dir" in str(err) and "\n" not in str(err)


def test_hf_agent_over_a_trainer_without_output_dir_raises_agent_config_error(tmp_path):
    from lean_dojo_v2.agent import HFAgent

    with pytest.raises(AgentConfigError, match="output_dir"):
        HFAgent(trainer=SFTTrainer(output_dir=None), database_path=tmp_path / "db.sqlite")
    assert not (tmp_path / "db.sqlite").exists()


@pytest.mark.parametrize("trainer_cls", [SFTTrainer, GRPOTrainer])
def test_constructor_arguments_of_the_wrong_type_are_typed_errors(trainer_cls, tmp_path):
    cases = [
        (dict(model_name=123), "model_name"),
        (dict(callbacks=5), "callbacks"),
        (dict(callbacks=[object()]), "on_* hooks"),
        (dict(callbacks="StopOnNonFinite"), "callbacks"),
    ]
    for kwargs, words in cases:
        with pytest.raises(ConfigValueError) as exc:
            trainer_cls(output_dir=tmp_path / "o", **kwargs)
        assert words in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ConfigValueError, match="from_config takes a config of type"):
        trainer_cls.from_config(["lr", 1e-5])
    with pytest.raises(ConfigValueError, match="from_config takes a config of type"):
        trainer_cls.from_config({1: 1e-5})
    # A path object is a path: a local model directory.
    trainer = trainer_cls(model_name=tmp_path / "model", output_dir=tmp_path / "o")
    assert trainer.config.model_name == str(tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


def test_from_config_refuses_the_other_trainers_config():
    with pytest.raises(ConfigValueError, match="GRPOConfig, got SFTConfig"):
        GRPOTrainer.from_config(SFTConfig())
    with pytest.raises(ConfigValueError, match="SFTConfig, got GRPOConfig"):
        SFTTrainer.from_config(GRPOConfig())


# ---------------------------------------------------------------------- rewards


def test_guard_reward_times_out_and_refuses_infinite_rewards():
    from lean_dojo_v2.trainer.rl.rewards.trl_adapter import guard_reward

    release = threading.Event()

    def never_returns(completions, **kwargs):
        release.wait()
        return [0.0] * len(completions)

    def infinite(completions, **kwargs):
        return [1.0, float("-inf")]

    def no_reward(completions, **kwargs):
        return [float("nan"), 0.5]

    try:
        start = time.monotonic()
        with pytest.raises(RewardTimeoutError) as exc:
            guard_reward(never_returns, timeout=0.2)(completions=["a", "b"])
        assert time.monotonic() - start < 5
        assert "'never_returns'" in str(exc.value) and "reward_timeout=0.2" in str(exc.value)
    finally:
        release.set()
    with pytest.raises(RewardFunctionError, match="'infinite' returned -inf for completion 1"):
        guard_reward(infinite, timeout=5)(completions=["a", "b"])
    guarded = guard_reward(no_reward, timeout=None)
    assert guarded.__name__ == "no_reward"
    assert guarded(completions=["a", "b"])[1] == 0.5


def test_a_reward_that_never_returns_stops_training_in_seconds(
    sample_path, tiny_model_dir, tmp_path
):
    release = threading.Event()

    def stuck(completions, **kwargs):
        release.wait()
        return [0.0] * len(completions)

    trainer = GRPOTrainer(
        str(tiny_model_dir),
        reward_func=stuck,
        output_dir=tmp_path / "run",
        **grpo_settings(max_steps=1, reward_timeout=0.5),
    )
    start = time.monotonic()
    try:
        with pytest.raises(RewardTimeoutError) as exc:
            trainer.train(data_path=sample_path)
    finally:
        release.set()
    assert time.monotonic() - start < 120
    assert "'stuck'" in str(exc.value) and "\n" not in str(exc.value)


def test_an_infinite_reward_stops_training_naming_the_function(
    sample_path, tiny_model_dir, tmp_path
):
    def jackpot(completions, **kwargs):
        return [float("inf")] + [0.0] * (len(completions) - 1)

    trainer = GRPOTrainer(
        str(tiny_model_dir),
        reward_func=jackpot,
        output_dir=tmp_path / "run",
        **grpo_settings(max_steps=1),
    )
    with pytest.raises(RewardFunctionError) as exc:
        trainer.train(data_path=sample_path)
    assert "'jackpot' returned inf" in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------------- trl_args' value types


@pytest.mark.parametrize("command", ["sft", "grpo"])
@pytest.mark.parametrize(
    ("trl_args", "words"),
    [
        ("{fsdp: 5}", "trl_args fsdp expects str | None | bool, got 5"),
        ("{ddp_timeout: soon}", "trl_args ddp_timeout expects int, got 'soon'"),
    ],
)
def test_a_trl_args_value_of_the_wrong_type_is_one_line_before_the_model_loads(
    command, trl_args, words, sample_path, tiny_model_dir, tmp_path, capsys, monkeypatch
):
    """TRL's config takes both without a word; ``fsdp: 5`` then failed with a traceback once
    the model was loaded and the run directory written, ``ddp_timeout: soon`` never."""

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded before trl_args were checked")

    monkeypatch.setattr("lean_dojo_v2.trainer.causal_lm_trainer.load_causal_lm", no_loading)
    out = tmp_path / "run"
    sets = [f"model_name={tiny_model_dir}", f"trl_args={trl_args}"]
    sets += QUICK_GRPO if command == "grpo" else ["max_steps=1", "use_cpu=true"]
    assert _run_cli(command, sample_path, out, sets) == 1
    line = _one_error_line(capsys)
    assert words in line and "fix or remove it in trl_args" in line
    _nothing_written(out)
