"""vLLM for GRPO generation, checked without vLLM or a GPU: the GPU check's ``grpo_vllm`` step
is planned, skips with its reason where vLLM or CUDA is missing while the other steps run; the
config's vLLM fields reach TRL's ``GRPOConfig`` under TRL's names; ``use_vllm`` without the
``vllm`` package is one line before anything is written; ``scripts/gpu_wheels.py --with-vllm``
plans vLLM's wheels apart from the project's."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.trainer.causal_lm_loading import plan_training
from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

from .test_gpu_check import _load

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
# `make install` never installs vllm (its wheels pull a CUDA torch): these tests see a machine
# without it, as every user of the CPU install does.


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return _load("gpu_check")


def _vllm_found(real: Any) -> Any:
    """``importlib.util.find_spec`` as on a machine with vLLM installed (any other name as is)."""
    return lambda name, *a: object() if name == "vllm" else real(name, *a)


# ------------------------------------------------------------------------ the GPU check's step


def test_the_step_is_planned_under_the_budget(gpu_check):
    plan = gpu_check.plan(list(gpu_check.STEP_NAMES), 420.0, cpu_smoke=False)
    step = plan["steps"]["grpo_vllm"]
    assert 0 < step["cap_s"] <= 420 and "vLLM" in step["what"]
    assert step["command"][1].endswith("gpu_check_steps.py") and step["command"][2] == "grpo_vllm"


@pytest.mark.parametrize("cpu_smoke", [False, True])
def test_without_vllm_the_step_skips_with_its_reason_and_the_others_run(
    gpu_check, tmp_path, monkeypatch, cpu_smoke
):
    """The step's own process (the real command) says why it skips; the steps around it (stand-ins
    that pass) run, and the check is ok: a machine without vLLM fails nothing."""
    real = gpu_check.step_command
    passes = 'import sys; open(sys.argv[1], \'w\').write(\'{"status": "pass", "figures": {}}\')'

    def command(name: str, work: Path, result: Path, *, cpu_smoke: bool) -> list[str]:
        if name == "grpo_vllm":
            return real(name, work, result, cpu_smoke=cpu_smoke)
        return [sys.executable, "-c", passes, str(result)]

    monkeypatch.setattr(gpu_check, "step_command", command)
    names = ["grpo_lora_bf16", "grpo_vllm", "ddp"]
    report = gpu_check.run_check(names, 120.0, cpu_smoke=cpu_smoke, work=tmp_path, log_dir=tmp_path)
    steps = report["steps"]
    assert {k: v["status"] for k, v in steps.items()} == {
        "grpo_lora_bf16": "pass",
        "grpo_vllm": "skip",
        "ddp": "pass",
    }
    reason = steps["grpo_vllm"]["reason"]
    assert reason == "the vllm package is not installed (scripts/gpu_wheels.py --with-vllm)"
    assert report["ok"] is True and report["counts"] == {"pass": 2, "fail": 0, "skip": 1}


def test_with_vllm_but_no_cuda_the_step_skips(tmp_path, monkeypatch):
    steps = _load("gpu_check_steps")
    monkeypatch.setattr(importlib.util, "find_spec", _vllm_found(importlib.util.find_spec))
    smoke = steps.Context(tmp_path, cpu_smoke=True)
    with pytest.raises(steps.StepSkipped, match="--cpu-smoke: vLLM generates on CUDA only"):
        steps.grpo_vllm(smoke)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(steps.StepSkipped, match="^no CUDA device$"):
            steps.grpo_vllm(steps.Context(tmp_path, cpu_smoke=False))
    assert list(tmp_path.iterdir()) == []  # skipped before any model is built


# ------------------------------------------------------------------------ the config to TRL


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize(
    "values, expected",
    [
        (
            dict(use_vllm=True, trl_args={"vllm_gpu_memory_utilization": 0.5}),
            dict(
                use_vllm=True,
                vllm_mode="colocate",
                vllm_gpu_memory_utilization=0.5,
                vllm_server_base_url=None,
            ),
        ),
        (
            dict(use_vllm=True, vllm_mode="server", vllm_server_base_url="http://gpu1:8000"),
            dict(use_vllm=True, vllm_mode="server", vllm_server_base_url="http://gpu1:8000"),
        ),
        (dict(), dict(use_vllm=False, vllm_mode="colocate", vllm_server_base_url=None)),
    ],
)
def test_the_vllm_fields_reach_trls_grpo_config(tiny, tmp_path, monkeypatch, values, expected):
    """The installed TRL's ``GRPOConfig`` built from the run's arguments (as ``train`` builds it
    before anything is written) has the config's vLLM fields under its own names."""
    from trl import GRPOConfig as TRLConfig

    trainer = GRPOTrainer(str(tiny), output_dir=tmp_path / "out", use_cpu=True, **values)
    with monkeypatch.context() as m:  # the check of the vllm package is tested below
        m.setattr(importlib.util, "find_spec", _vllm_found(importlib.util.find_spec))
        settings = trainer._trl_settings()
    assert {"use_vllm", "vllm_mode", "vllm_server_base_url"} <= settings.keys()
    monkeypatch.setattr(type(trainer), "_trl_settings", lambda self: settings)
    args = trainer._trl_args(0, tmp_path / "out", loaded=plan_training(trainer.config))
    assert isinstance(args, TRLConfig)
    assert {k: getattr(args, k) for k in expected} == expected
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("values", [dict(use_vllm=True), dict(trl_args={"use_vllm": True})])
def test_use_vllm_without_vllm_is_one_line_and_writes_nothing(tiny, tmp_path, values):
    from lean_dojo_v2.data import sample_dataset_path

    out = tmp_path / "out"
    trainer = GRPOTrainer(str(tiny), output_dir=out, use_cpu=True, max_steps=1, **values)
    with pytest.raises(ConfigValueError) as caught:
        trainer.train(data_path=sample_dataset_path())
    message = str(caught.value)
    assert "\n" not in message
    assert "vllm is not installed" in message and "pip install 'trl[vllm]'" in message
    assert "use_vllm: false" in message
    assert not out.exists()


@pytest.mark.slow  # a whole `train grpo` process (8 s); the in-process test above checks the same
def test_train_grpo_with_use_vllm_prints_one_line_and_writes_nothing(tiny, tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "lean_dojo_v2", "train", "grpo", "--data"]
    cmd += [str(REPO / "lean_dojo_v2" / "resources" / "leandojo_b4_sample"), "-o", str(out)]
    cmd += ["--set", f"model_name={tiny}", "--set", "use_vllm=true", "--set", "use_cpu=true"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "lean-dojo-v2: error: use_vllm is true but vllm is not installed: "
        "`pip install 'trl[vllm]'` on a CUDA machine, or set use_vllm: false"
    ]
    assert not out.exists()


# ------------------------------------------------------------------------ the wheel folder


def test_wheel_plan_adds_vllm_only_when_asked(tmp_path):
    script = [sys.executable, str(REPO / "scripts" / "gpu_wheels.py"), "--print"]
    plans = {}
    for flag in ([], ["--with-vllm"]):
        done = subprocess.run(
            [*script, "--out", str(tmp_path / "w"), *flag],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        plans[bool(flag)] = json.loads(done.stdout)
    assert plans[False]["vllm"] is None
    vllm = plans[True]["vllm"]
    assert vllm[vllm.index("-d") + 1] == str(tmp_path / "w" / "vllm")
    assert "--no-deps" not in vllm and "--only-binary=:all:" in vllm
    # The versions the installed TRL's vllm extra accepts.
    assert any(a.startswith("vllm>=") or a.startswith("vllm<=") for a in vllm)
    assert not (tmp_path / "w").exists()
