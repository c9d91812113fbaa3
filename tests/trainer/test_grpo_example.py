"""``examples/grpo.py`` runs as a user runs it (here on the tiny model: 2 SFT steps, then 2 GRPO
steps from that adapter with the Lean-checked reward on replay)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_grpo_example_runs_sft_then_grpo_and_prints_the_reward(tiny_model_dir, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "grpo.py"),
            str(tmp_path / "out"),
            "--sft-steps",
            "2",
            "--grpo-steps",
            "2",
            "--prompts",
            "4",
            "--model",
            str(tiny_model_dir),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SFT: 2 steps" in proc.stdout and "GRPO (grpo): 2 steps on 4 prompts" in proc.stdout
    assert "rewards checked by replay: mean reward" in proc.stdout
    assert (tmp_path / "out" / "grpo" / "adapter_model.safetensors").is_file()
    assert (tmp_path / "out" / "grpo" / "grpo_curves.png").is_file()
