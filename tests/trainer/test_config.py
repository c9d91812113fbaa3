"""The config system: YAML + typed ``--set`` overrides, unknown keys and bad values as typed
errors naming the valid choices, every field documented, the shipped configs load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.config.loading import (
    config_fields,
    describe_config,
    dump_config,
    field_docs,
    load_config,
)
from lean_dojo_v2.errors import ConfigError, LeanDojoError
from lean_dojo_v2.trainer.errors import ConfigValueError, UnknownConfigKeyError
from lean_dojo_v2.trainer.sft_config import SFTConfig

ROOT = Path(__file__).resolve().parents[2]


def test_load_config_yaml_then_set_overrides_typed_by_field(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        "model_name: smollm2\nlr: 2e-5\nbatch_size: 4\nlora: true\n"
        "report_to: [tensorboard]\ntrl_args: {optim: adamw_torch}\n"
    )
    cfg = load_config(
        SFTConfig,
        cfg_file,
        [
            "lr=1e-4",  # a float, not YAML's text
            "batch_size=8",
            "lora=no",
            "max_examples=none",
            "lora_target_modules=q_proj,v_proj",
            "bf16=null",
            "run_name=123",  # a str field keeps the text
            "trl_args={optim: adafactor, seed: 3}",
            "epochs_per_repo=2",
        ],
    )
    assert cfg.model_name == "smollm2"
    assert cfg.lr == 1e-4 and isinstance(cfg.lr, float)
    assert cfg.batch_size == 8 and cfg.lora is False
    assert cfg.max_examples is None and cfg.bf16 is None
    assert cfg.lora_target_modules == ["q_proj", "v_proj"]
    assert cfg.run_name == "123"
    assert cfg.trl_args == {"optim": "adafactor", "seed": 3}
    assert cfg.epochs_per_repo == 2.0 and isinstance(cfg.epochs_per_repo, float)
    assert cfg.report_to == ["tensorboard"]


def test_yaml_reads_2e_5_as_a_float_for_float_fields(tmp_path):
    """PyYAML reads ``2e-5`` (no dot) as text; a float field takes it as the number."""
    f = tmp_path / "c.yaml"
    f.write_text("lr: 2e-5\n")
    assert load_config(SFTConfig, f).lr == 2e-5


@pytest.mark.parametrize("where", ["yaml", "set", "keyword"])
def test_unknown_config_key_is_typed_error_listing_valid_keys(tmp_path, where):
    f = tmp_path / "c.yaml"
    f.write_text("lrr: 0.1\n")
    with pytest.raises(UnknownConfigKeyError) as info:
        if where == "yaml":
            load_config(SFTConfig, f)
        elif where == "set":
            load_config(SFTConfig, None, ["lrr=0.1"])
        else:
            load_config(SFTConfig, None, {}, lrr=0.1)
    err = info.value
    assert isinstance(err, ConfigError) and isinstance(err, LeanDojoError)
    assert err.key == "lrr"
    assert err.valid == list(config_fields(SFTConfig))
    message = str(err)
    assert "'lrr'" in message and "did you mean 'lr'" in message
    assert "batch_size" in message and "output_dir" in message
    if where == "yaml":
        assert str(f) in message


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("batch_size=two", ["batch_size", "int", "two"]),
        ("lr=fast", ["lr", "float"]),
        ("lora=maybe", ["lora", "true or false"]),
        ("strategy=by_file", ["strategy", "random", "novel_premises"]),
        ("batch_size=0", ["batch_size", "at least 1"]),
        ("report_to=slack", ["report_to", "tensorboard", "wandb"]),
        ("splits=train,dev", ["splits", "train", "val", "test"]),
        ("trl_args=[1, 2]", ["trl_args", "mapping"]),
    ],
)
def test_bad_config_value_is_typed_error_naming_field_and_choices(override, words):
    with pytest.raises(ConfigValueError) as info:
        load_config(SFTConfig, None, [override])
    for word in words:
        assert word in str(info.value)


def test_set_without_equals_and_bad_files_are_typed_errors(tmp_path):
    with pytest.raises(ConfigValueError, match="key=value"):
        load_config(SFTConfig, None, ["lr"])
    with pytest.raises(ConfigValueError, match="does not exist"):
        load_config(SFTConfig, tmp_path / "missing.yaml")
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigValueError, match="mapping"):
        load_config(SFTConfig, bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("lr: [1\n")
    with pytest.raises(ConfigValueError, match="not valid YAML"):
        load_config(SFTConfig, broken)


def test_every_sft_config_field_is_documented_in_groups():
    docs = field_docs(SFTConfig)
    fields = list(config_fields(SFTConfig))
    assert sorted(docs) == sorted(fields), "document every field in SFTConfig's docstring"
    groups = {group for group, _, _ in docs.values()}
    assert len(groups) >= 5 and all(g.startswith("Parameters that control") for g in groups)
    for name, (_, type_text, text) in docs.items():
        assert "defaults to" in type_text, name
        assert len(text) > 20, f"{name} needs a sentence of explanation"
    listing = describe_config(SFTConfig)
    assert all(f"  {name} = " in listing for name in fields)


def test_dump_config_round_trips(tmp_path):
    cfg = load_config(SFTConfig, None, ["lr=3e-4", "lora=true", "trl_args={optim: sgd}"])
    again = load_config(SFTConfig, dump_config(cfg, tmp_path / "c.yaml"))
    assert again == cfg


def test_shipped_sft_configs_load():
    files = sorted((ROOT / "configs").glob("sft_*.yaml"))
    assert len(files) >= 2
    for f in files:
        cfg = load_config(SFTConfig, f)
        assert isinstance(cfg, SFTConfig), f


def test_trainer_import_and_seed_constructor_load_no_torch(tmp_path):
    """``import lean_dojo_v2.trainer`` and upstream LeanDojo-v2's constructor stay light: no torch, no model."""
    code = (
        "import sys, json\n"
        "from lean_dojo_v2.trainer.sft_trainer import SFTTrainer\n"
        "import lean_dojo_v2.trainer as t\n"
        "trainer = SFTTrainer(model_name='deepseek-ai/DeepSeek-Prover-V2-7B', "
        "output_dir='outputs-deepseek', epochs_per_repo=1, batch_size=2, lr=2e-5)\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'trl': 'trl' in sys.modules, "
        "'model': trainer.model is None, 'bs': trainer.batch_size, 'lr': trainer.lr, "
        "'out': trainer.output_dir, 'name': trainer.model_name, 'lora': trainer.lora_config}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {
        "torch": False,
        "trl": False,
        "model": True,
        "bs": 2,
        "lr": 2e-5,
        "out": "outputs-deepseek",
        "name": "deepseek-ai/DeepSeek-Prover-V2-7B",
        "lora": None,
    }
    assert list(tmp_path.iterdir()) == [], "constructing a trainer wrote files"


def test_sft_trainer_keywords_are_config_fields():
    from lean_dojo_v2.trainer import SFTTrainer

    t = SFTTrainer("smollm2", lora_config={"r": 8, "lora_alpha": 16}, max_steps=3)
    assert t.config.lora and t.config.lora_r == 8 and t.config.max_steps == 3
    with pytest.raises(UnknownConfigKeyError, match="epochs"):
        SFTTrainer("smollm2", epochs=3)
    with pytest.raises(UnknownConfigKeyError, match="lora_config"):
        SFTTrainer("smollm2", lora_config={"rank": 8})
