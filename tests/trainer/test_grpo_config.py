"""GRPOConfig and GRPO's prompt rows without a model: the config loads from every YAML in
configs/grpo (upstream LeanDojo-v2's design keys with a logged note each), unknown keys and bad values are
one-line errors listing the valid choices (API, YAML, ``--set``), and the rows of the bundled real
sample carry exactly the columns the rewards read, in tactic and in proof mode."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lean_dojo_v2.config.loading import describe_config, load_config
from lean_dojo_v2.data.dataset import load_theorems
from lean_dojo_v2.errors import ConfigValueError, UnknownConfigKeyError
from lean_dojo_v2.trainer.errors import EmptyDatasetError
from lean_dojo_v2.trainer.grpo_config import DEFAULT_REWARDS, GRPOConfig
from lean_dojo_v2.trainer.grpo_data import (
    COLUMNS,
    build_prompt_rows,
    check_prompt_theorems,
    difficulty,
    theorem_key,
)

ROOT = Path(__file__).resolve().parents[2]
ALGORITHMS = [
    "grpo",
    "dr_grpo",
    "dapo",
    "bnpo",
    "gspo",
    "cispo",
    "sapo",
    "gdpo",
    "dgpo",
    "grpo_dpo",
]


@pytest.fixture(scope="module")
def theorems(sample_path):
    return load_theorems(sample_path / "random" / "train.json")


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "grpo").glob("*.yaml")), ids=str)
def test_every_grpo_yaml_loads_and_its_algorithm_resolves(path):
    from lean_dojo_v2.trainer.rl.algorithms import resolve_algorithm

    cfg = load_config(GRPOConfig, path)
    alg = resolve_algorithm(cfg.algorithm, cfg.algorithm_config)
    assert (cfg.batch_size * cfg.gradient_accumulation_steps) % cfg.num_generations == 0
    if path.stem in ALGORITHMS:
        assert alg.name == path.stem and cfg.lora and cfg.dtype == "bfloat16"
        assert "DeepSeek-Prover-V2-7B" in cfg.model_name


def test_one_yaml_per_algorithm_and_the_cpu_config():
    names = {p.stem for p in (ROOT / "configs" / "grpo").glob("*.yaml")}
    assert set(ALGORITHMS) | {"seed_style"} == names
    cfg = load_config(GRPOConfig, ROOT / "configs" / "grpo_smollm2_cpu.yaml")
    assert cfg.use_cpu and cfg.model_name == "smollm2" and cfg.reward_backend == "replay"


def test_seed_yaml_keys_map_to_ours_with_a_note_each(caplog):
    with caplog.at_level(logging.INFO, logger="lean_dojo_v2.config.loading"):
        cfg = load_config(GRPOConfig, ROOT / "configs" / "grpo" / "seed_style.yaml")
    assert cfg.model_name == "deepseek-ai/DeepSeek-Prover-V2-7B"
    assert cfg.lora and cfg.lora_r == 64 and cfg.lr == 1e-5 and cfg.epochs_per_repo == 1
    assert cfg.rewards == ["lean_tactic", "format"] and cfg.algorithm == "grpo_dpo"
    assert cfg.num_generations == 8 and cfg.max_proof_steps == 4
    notes = " ".join(r.getMessage() for r in caplog.records)
    for old, new in [
        ("base_model", "model_name="),
        ("lora_rank", "lora_r=64"),
        ("learning_rate", "lr="),
        ("num_train_epochs", "epochs_per_repo="),
        ("reward_type", "rewards="),
    ]:
        assert f"'{old}'" in notes and new in notes, notes


def test_an_own_field_wins_over_a_seed_alias(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 0.1\nlr: 0.001\nreward_type: composite\n", "utf-8")
    cfg = load_config(GRPOConfig, path)
    assert cfg.lr == 0.001 and cfg.rewards == []  # "composite" is our default composite


def test_unknown_config_key_lists_valid_ones_from_api_yaml_and_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("num_generation: 4\n", "utf-8")
    for call in (
        lambda: load_config(GRPOConfig, None, {}, num_generation=4),
        lambda: load_config(GRPOConfig, path),
        lambda: load_config(GRPOConfig, None, ["num_generation=4"]),
    ):
        with pytest.raises(UnknownConfigKeyError) as exc:
            call()
        text = str(exc.value)
        assert "\n" not in text and "num_generation" in text and "num_generations" in text


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("mode", "tactics", "'tactic', 'proof'"),
        ("reward_backend", "pantograph", "'auto', 'replay', 'lean'"),
        ("vllm_mode", "remote", "'colocate', 'server'"),
        ("num_generations", "1", "at least 2"),
        ("top_p", "0", "in (0, 1]"),
        ("lr", "inf", "finite"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_choices(key, value, words):
    with pytest.raises(ConfigValueError) as exc:
        load_config(GRPOConfig, None, [f"{key}={value}"])
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_help_config_documents_every_field():
    from lean_dojo_v2.config.loading import config_fields, field_docs

    docs = field_docs(GRPOConfig)
    assert set(config_fields(GRPOConfig)) == set(docs)
    assert all(text for _g, _t, text in docs.values())
    assert "Parameters that control the reward checks" in describe_config(GRPOConfig)


def test_default_rewards_are_the_lean_checked_composite_of_the_mode():
    cfg = GRPOConfig()
    assert cfg.reward_names() == ["lean_tactic", "format"]
    assert [cfg.weight_of(n) for n in cfg.reward_names()] == [1.0, 0.1]
    proof = GRPOConfig(mode="proof", reward_weights={"format": 0.5})
    assert proof.reward_names() == list(DEFAULT_REWARDS["proof"]) == ["lean_proof", "format"]
    assert proof.weight_of("format") == 0.5
    mine = GRPOConfig(rewards=["algebra", "efficiency"])
    assert mine.weight_of("algebra") == 1.0


def test_tactic_rows_are_the_search_prompts_of_each_traced_state(theorems, tiny_tok):
    from lean_dojo_v2.models.prompts import render_prompt

    built = build_prompt_rows(theorems, tiny_tok, mode="tactic")
    traced = [(t, i, tt) for t in theorems for i, tt in enumerate(t.traced_tactics)]
    assert len(built.rows) == len(traced) == 128
    for row, (t, i, tt) in zip(built.rows, traced, strict=True):
        assert tuple(row) == COLUMNS
        assert row["prompt"] == render_prompt(tiny_tok, tt.state_before)
        assert row["theorem_key"] == f"{t.file_path}::{t.full_name}" and row["step"] == i
        assert row["recorded_tactic"] == tt.tactic.strip() and row["mode"] == "tactic"
        assert 0.0 <= row["difficulty"] <= 1.0
    assert set(built.theorems) == {r["theorem_key"] for r in built.rows}


def test_proof_rows_one_per_theorem_with_its_recorded_proof(theorems, tiny_tok):
    from lean_dojo_v2.models.prompts import render_proof_prompt

    built = build_prompt_rows(theorems, tiny_tok, mode="proof")
    with_proofs = [t for t in theorems if t.traced_tactics]
    assert len(built.rows) == len(with_proofs) == 42
    row, t = built.rows[0], with_proofs[0]
    assert row["prompt"] == render_proof_prompt(tiny_tok, t.traced_tactics[0].state_before)
    assert row["recorded_tactic"].splitlines()[0] == t.traced_tactics[0].tactic.strip()
    assert row["step"] == 0 and row["mode"] == "proof"


def test_sorry_tactics_are_left_out_and_long_prompts_never_cut(theorems, tiny_tok):
    import copy

    t = copy.deepcopy(next(t for t in theorems if len(t.traced_tactics) >= 2))
    t.traced_tactics[1].tactic = "exact sorry"
    tactic = build_prompt_rows([t], tiny_tok, mode="tactic")
    assert tactic.stats.sorry_dropped == 1 and all(
        "sorry" not in r["recorded_tactic"] for r in tactic.rows
    )
    with pytest.raises(EmptyDatasetError, match="use sorry/admit"):
        build_prompt_rows([t], tiny_tok, mode="proof")
    capped = build_prompt_rows(theorems, tiny_tok, max_prompt_len=200, max_prompts=5)
    assert len(capped.rows) == 5 and capped.stats.too_long_dropped > 0
    assert all(len(tiny_tok(r["prompt"])["input_ids"]) <= 200 for r in capped.rows)
    with pytest.raises(EmptyDatasetError, match="raise max_prompt_len"):
        build_prompt_rows(theorems, tiny_tok, max_prompt_len=10)


def test_data_without_traced_tactics_fails_before_a_model_loads(theorems):
    term_mode = [t for t in theorems if not t.traced_tactics]
    with pytest.raises(EmptyDatasetError, match="none of its .* theorems has traced tactics"):
        check_prompt_theorems(term_mode, "tactic", source="X")
    with pytest.raises(EmptyDatasetError, match="holds no theorems"):
        check_prompt_theorems([], "proof")
    assert check_prompt_theorems(theorems, "proof").prompts == 42


def test_difficulty_from_category_or_proof_length(theorems):
    import copy

    t = copy.deepcopy(next(t for t in theorems if t.traced_tactics))
    t.extra["difficulty"] = "Hard"
    assert difficulty(t) == 1.0
    t.extra.clear()
    n = len(t.traced_tactics)
    assert difficulty(t) == min(1.0, (n - 1) / 9)
    assert theorem_key(t) == f"{t.file_path}::{t.full_name}"
