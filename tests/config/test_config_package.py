"""``lean_dojo_v2.config`` is layer 0: the settings and the config system, whose names are one
object wherever they are offered (``lean_dojo_v2.trainer.errors`` and the trainer package give
the same error classes); its errors keep their families (``except TrainerError`` still catches
``EmptyDatasetError``)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

import lean_dojo_v2.config as config_pkg
import lean_dojo_v2.config.loading as loading
import lean_dojo_v2.config.loading as trainer_config
import lean_dojo_v2.errors as errors
import lean_dojo_v2.trainer as trainer_pkg
import lean_dojo_v2.trainer.errors as trainer_errors


@pytest.mark.parametrize("name", sorted(config_pkg._EXPORTS))
def test_config_system_names_are_one_object_everywhere(name):
    assert getattr(config_pkg, name) is getattr(loading, name)
    assert getattr(trainer_config, name) is getattr(loading, name)


@pytest.mark.parametrize(
    "name", ["TrainerError", "EmptyDatasetError", "ConfigValueError", "UnknownConfigKeyError"]
)
def test_moved_errors_are_one_class_everywhere(name):
    cls = getattr(errors, name)
    assert getattr(trainer_errors, name) is cls
    assert getattr(trainer_pkg, name) is cls
    assert cls.__module__ == "lean_dojo_v2.errors"


def test_moved_errors_keep_their_families():
    assert issubclass(errors.EmptyDatasetError, errors.TrainerError)
    assert issubclass(errors.EmptyDatasetError, ValueError)
    assert issubclass(trainer_errors.TrainingStateError, errors.TrainerError)
    for cls in (errors.ConfigValueError, errors.UnknownConfigKeyError):
        assert issubclass(cls, errors.ConfigError) and issubclass(cls, errors.LeanDojoError)
    assert issubclass(errors.UnknownConfigKeyError, KeyError)
    assert issubclass(errors.ConfigValueError, ValueError)
    with pytest.raises(trainer_errors.TrainerError):
        raise errors.EmptyDatasetError("no examples")


def test_unknown_key_error_survives_pickling_with_its_fields():
    exc = errors.UnknownConfigKeyError("sise", ["size", "name"], source="--set", config="Toy")
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is errors.UnknownConfigKeyError
    fields = (again.key, again.valid, again.source, again.config)
    assert fields == ("sise", ["size", "name"], "--set", "Toy")
    assert str(again) == str(exc) and "did you mean 'size'" in str(exc)


def test_importing_the_settings_loads_neither_the_config_system_nor_yaml(tmp_path):
    code = (
        "import sys, json\n"
        "from lean_dojo_v2.config import get_settings\n"
        "own = sorted(m for m in sys.modules if m.startswith('lean_dojo_v2'))\n"
        "print(json.dumps({'own': own, 'yaml': 'yaml' in sys.modules}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "lean_dojo_v2.config.loading" not in report["own"]
    assert "lean_dojo_v2.config.cli" not in report["own"]
    assert report["yaml"] is False


def test_loading_through_the_package_imports_on_first_use():
    assert "load_config" in dir(config_pkg) and "cli" in dir(config_pkg)
    with pytest.raises(AttributeError, match="no_such_name"):
        config_pkg.no_such_name  # noqa: B018
