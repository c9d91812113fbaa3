"""``--config FILE`` that cannot be read as YAML: one typed line naming the file."""

from __future__ import annotations

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.config.loading import load_config, read_config_file
from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.trainer.sft_config import SFTConfig


@pytest.mark.parametrize(
    "data", [b"lr: 1\n\xff\xfe\n", "lr: 1e-5 # café\n".encode("latin-1"), b"\x80"]
)
def test_a_config_file_that_is_not_utf8_is_a_typed_error_naming_it(tmp_path, data):
    path = tmp_path / "train.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigValueError, match=f"config file {path} is not UTF-8 text"):
        read_config_file(path)
    with pytest.raises(ConfigValueError, match="not UTF-8"):
        load_config(SFTConfig, path)


def test_a_yaml_error_is_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("lr: [1\nbatch_size: 2\n", "utf-8")
    with pytest.raises(ConfigValueError) as exc:
        read_config_file(path)
    assert "\n" not in str(exc.value) and f"config file {path} is not valid YAML" in str(exc.value)


def test_train_with_a_non_utf8_config_is_one_line_and_touches_nothing(tmp_path, capsys):
    path = tmp_path / "train.yaml"
    path.write_bytes(b"lr: 1\n\xff\n")
    out = tmp_path / "out"
    argv = ["train", "sft", "--data", str(sample_dataset_path()), "--config", str(path)]
    code = main([*argv, "-o", str(out)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 1 and "Traceback" not in err, err
    assert len(lines) == 1 and str(path) in lines[0] and "not UTF-8" in lines[0], err
    assert not out.exists()


@pytest.mark.parametrize(
    ("trainer", "key"), [("sft", "lr"), ("retrieval", "lr"), ("progress", "learning_rate")]
)
@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_set_lr_inf_is_refused_before_a_run_starts(tmp_path, capsys, trainer, key, value):
    # `--set lr=inf` used to train and save NaN weights with status 0.
    out = tmp_path / "out"
    argv = ["train", trainer, "--data", str(sample_dataset_path()), "--set", f"{key}={value}"]
    code = main([*argv, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and f"'{key}' (from --set)" in err and "finite number" in err, err
    assert not out.exists()
