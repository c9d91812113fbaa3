"""``examples/sft.py`` runs as a user runs it (here on the tiny model, two steps): upstream LeanDojo-v2's
``SFTTrainer`` into ``HFAgent``, ``setup_traced_dataset`` on the bundled sample, ``train()``, the
trained model's tactics, ``prove()`` through replay; everything under the output folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # the example end to end in its own process (14 s); make test-slow runs it
def test_sft_example_trains_through_the_agent_and_proves(tiny_model_dir, tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    out = work / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "sft.py"),
            str(out),
            "--max-steps",
            "2",
            "--model",
            str(tiny_model_dir),
            "--prove",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=work,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trained 2 steps" in proc.stdout and "tactics for" in proc.stdout, proc.stdout
    assert re.search(r"proved \d of 1 held-out theorems; backend replay", proc.stdout), proc.stdout
    assert "backend: replay" in proc.stderr  # the notice that replay, not Lean, checks
    # full fine-tuning, as upstream LeanDojo-v2's call: a model, not an adapter
    assert (out / "model" / "model.safetensors").is_file()
    assert not (out / "model" / "adapter_config.json").exists()
    assert (out / "dynamic_database.sqlite").is_file()
    # nothing outside the output folder (no ./raid of the RAID_DIR default)
    assert [p.name for p in work.iterdir()] == ["out"]
