"""``examples/sft.py`` runs as a user runs it (here on the tiny model, two steps)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_sft_example_trains_and_generates(tiny_model_dir, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "sft.py"),
            str(tmp_path / "out"),
            "--max-steps",
            "2",
            "--model",
            str(tiny_model_dir),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trained 2 steps" in proc.stdout and "tactics for" in proc.stdout
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()
