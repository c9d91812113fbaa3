"""The GPU check: the project's CUDA paths in one call of a few minutes, one JSON object on stdout.

Each step runs in a process of its own with its own time cap (a step that fails, crashes or runs
past its cap is recorded with the reason, and the next step runs); the whole check stops starting
steps once ``--budget`` seconds are spent. The steps (``scripts/gpu_check_steps.py``):

    gpu_tests         pytest -m gpu (the tests marked gpu)
    sft_bf16_full     full SFT at SmolLM2-135M's size in bf16 and in float32, a few steps: the
                      fraction of the weights each changed (bf16 keeps its updates: >= 0.9x)
    grpo_lora_bf16    one GRPO step with LoRA in bf16 (rewards replayed from the bundled sample)
    decode_smollm2    batched sampling (HFTacticGenerator) vs transformers' generate, the same
                      prompts, samples and tokens, at SmolLM2-135M's size (random weights)
    decode_7b         the same at DeepSeek-Prover-V2-7B's size (random weights, bf16)
    deepspeed_zero2   train sft with configs/deepspeed/zero2.json under torchrun, every GPU
    ddp               train sft under torchrun over every GPU (skipped with fewer than two)
    grpo_vllm         two GRPO steps with LoRA generating with vLLM inside the training process
                      (use_vllm, vllm_mode: colocate) vs with transformers: seconds, rollouts/s
                      (skipped without the vllm package or CUDA)

    python scripts/gpu_check.py [--steps a,b] [--budget 420] [--out FILE] [--log-dir DIR]
    python scripts/gpu_check.py --dry-run      # the plan as JSON: steps, caps, commands; runs none
    python scripts/gpu_check.py --cpu-smoke    # the same steps on the CPU with tiny models

``make gpu-check`` installs the project from ``wheels/`` offline and runs this
(docs/scaling.md, "The GPU check"). Exit status 0 when no step failed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TAIL_CHARS = 2000  # of a failed step's output, in the JSON
# Below this many seconds left a step is not started: its process alone needs about as long to
# import torch and transformers.
MIN_STEP_S = 15.0


@dataclass(frozen=True)
class Step:
    name: str
    cap_s: float
    what: str


STEPS = (
    Step("gpu_tests", 150, "pytest -m gpu"),
    Step("sft_bf16_full", 90, "full SFT in bf16 vs float32: fraction of weights updated"),
    Step("grpo_lora_bf16", 90, "one GRPO step with LoRA in bf16"),
    Step("decode_smollm2", 60, "batched sampling vs transformers' generate, SmolLM2-135M size"),
    Step("decode_7b", 120, "batched sampling vs transformers' generate, 7B size"),
    Step("deepspeed_zero2", 120, "train sft with DeepSpeed ZeRO-2 under torchrun"),
    Step("ddp", 90, "train sft under torchrun over every GPU"),
    Step("grpo_vllm", 180, "two GRPO steps generating with vLLM (colocate) vs transformers"),
)
STEP_NAMES = tuple(s.name for s in STEPS)


def step_command(name: str, work: Path, result: Path, *, cpu_smoke: bool) -> list[str]:
    """The command that runs step ``name`` in a process of its own, writing its outcome to
    ``result`` (``scripts/gpu_check_steps.py``)."""
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_check_steps.py"), name]
    cmd += ["--work", str(work), "--result", str(result)]
    return cmd + (["--cpu-smoke"] if cpu_smoke else [])


def step_env() -> dict[str, str]:
    """The steps' environment: the working tree first on the path (not an older installed
    copy), no model hub."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    # The GPU image may have JAX, which would otherwise take most of the GPU's memory.
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return env


def run_capped(
    cmd: list[str], cap_s: float, result: Path, log: Path, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``cmd`` for at most ``cap_s`` seconds (then its whole process group is killed) and
    return its outcome: what it wrote to ``result`` (``status``, ``figures``, ``reason``), or a
    ``fail`` whose reason says it timed out or exited without one. Never raises for the step's
    sake: a failing step is a record, not the end of the check."""
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait(timeout=cap_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            code, timed_out = proc.wait(), True
    outcome: dict[str, Any]
    if timed_out:
        outcome = {"status": "fail", "reason": f"timed out after {cap_s:g} s (its time cap)"}
    else:
        try:
            outcome = json.loads(result.read_text("utf-8"))
        except (OSError, ValueError):
            outcome = {"status": "fail", "reason": f"exited with status {code} and no result"}
    outcome["seconds"] = round(time.monotonic() - started, 1)
    if outcome["status"] == "fail":
        text = log.read_text("utf-8", errors="replace")
        outcome["log_tail"] = text[-TAIL_CHARS:]
    return outcome


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the step's process group: torchrun's workers and pytest's children with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def machine() -> dict[str, Any]:
    """The machine and the versions the figures were measured with (no torch import: the
    installed versions, and the GPUs as nvidia-smi lists them)."""
    versions = {}
    for name in ("torch", "transformers", "trl", "peft", "accelerate", "deepspeed"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    gpus: list[dict[str, Any]] = []
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version"]
        done = subprocess.run(
            [*query, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30
        )
        for line in done.stdout.splitlines():
            name, memory, driver = (part.strip() for part in line.split(","))
            gpus.append({"name": name, "memory_mib": int(memory), "driver": driver})
    return {
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "gpus": gpus,
        "versions": versions,
    }


def plan(names: list[str], budget_s: float, *, cpu_smoke: bool) -> dict[str, Any]:
    """What ``--dry-run`` prints: each step's cap and command, nothing run."""
    work, result = Path("<work>"), Path("<work>/<step>.json")
    steps = {
        s.name: {
            "cap_s": s.cap_s,
            "what": s.what,
            "command": step_command(s.name, work, result, cpu_smoke=cpu_smoke),
        }
        for s in STEPS
        if s.name in names
    }
    return {"check": "gpu_check", "dry_run": True, "budget_s": budget_s, "steps": steps}


def run_check(
    names: list[str],
    budget_s: float,
    *,
    cpu_smoke: bool,
    work: Path,
    log_dir: Path,
) -> dict[str, Any]:
    """Run the steps ``names`` in order, each under ``min(its cap, what is left of the
    budget)``; the report of every step, whatever happened to the others."""
    started, clock = datetime.now(UTC), time.monotonic()
    steps: dict[str, dict[str, Any]] = {}
    for step in STEPS:
        if step.name not in names:
            continue
        left = budget_s - (time.monotonic() - clock)
        if left < MIN_STEP_S:
            steps[step.name] = {
                "status": "skip",
                "reason": f"the check's budget of {budget_s:g} s is spent ({left:.0f} s left)",
                "cap_s": step.cap_s,
                "what": step.what,
            }
            continue
        cap = min(step.cap_s, left)
        result, log = work / f"{step.name}.json", log_dir / f"{step.name}.log"
        cmd = step_command(step.name, work, result, cpu_smoke=cpu_smoke)
        outcome = run_capped(cmd, cap, result, log, env=step_env())
        steps[step.name] = {**outcome, "cap_s": round(cap, 1), "what": step.what}
        print(f"gpu_check: {step.name}: {outcome['status']}", file=sys.stderr, flush=True)
    counts = {k: sum(s["status"] == k for s in steps.values()) for k in ("pass", "fail", "skip")}
    return {
        "check": "gpu_check",
        "mode": "cpu-smoke" if cpu_smoke else "gpu",
        "started_at": started.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - clock, 1),
        "budget_s": budget_s,
        "machine": machine(),
        "steps": steps,
        "counts": counts,
        # No failure, and something ran: a machine without CUDA skips every GPU step.
        "ok": counts["fail"] == 0 and counts["pass"] > 0,
    }


def parse_steps(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in STEP_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown step {', '.join(unknown) or '(none)'}; the steps: {', '.join(STEP_NAMES)}"
        )
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=parse_steps, default=list(STEP_NAMES))
    parser.add_argument(
        "--budget", type=float, default=420.0, help="seconds for all steps (default 420)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan; run nothing")
    parser.add_argument(
        "--cpu-smoke", action="store_true", help="the steps on the CPU with tiny models"
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--log-dir", type=Path, help="keep each step's output here")
    args = parser.parse_args(argv)

    if args.dry_run:
        report = plan(args.steps, args.budget, cpu_smoke=args.cpu_smoke)
    else:
        with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
            log_dir = args.log_dir or Path(tmp) / "logs"
            log_dir.mkdir(parents=True, exist_ok=True)
            report = run_check(
                args.steps, args.budget, cpu_smoke=args.cpu_smoke, work=Path(tmp), log_dir=log_dir
            )
    text = json.dumps(report, indent=1)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", "utf-8")
    print(text)
    return 0 if report.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
