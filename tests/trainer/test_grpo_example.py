"""``examples/grpo.py`` runs as a user runs it (here on the tiny model: the focused miniF2F set cut
to 4 goal states, set up with ``setup_traced_dataset``; an ``HFAgent`` trains 2 SFT steps, the
sampled reward, a second ``HFAgent`` on the same database 2 GRPO steps from that adapter with
the Lean-checked reward on replay, the sampled reward again, then ``prove()``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # the example end to end in its own process (20 s); make test-slow runs it
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
            "--k",
            "2",
            "--prove",
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
    out = proc.stdout
    assert "focused set:" in out and "SFT: 2 steps" in out, out
    assert re.search(r"GRPO \(dapo\): 2 steps on \d+ prompts .* rewards checked by replay", out), (
        out
    )
    m = re.search(r"lean_tactic reward of 2 sampled tactics at each of (\d+) states \(seed 0\): "
                  r"SFT (\d\.\d+) -> GRPO (\d\.\d+)", out)  # fmt: skip
    assert m and int(m.group(1)) >= 4, out
    assert re.search(
        r"best-first search at the same budget: SFT proved \d of 2, GRPO \d of 2 trained-on "
        r"theorems; backend replay",
        out,
    ), out
    assert (tmp_path / "out" / "grpo" / "adapter_model.safetensors").is_file()
    # one database: one repository, SFT's run and GRPO's
    from lean_dojo_v2.database import DynamicDatabase

    with DynamicDatabase(tmp_path / "out" / "dynamic_database.sqlite") as db:
        assert len(db.repositories()) == 1
        assert [r.kind for r in db.training_runs()] == ["sft", "grpo"]
    assert (tmp_path / "out" / "grpo" / "grpo_curves.png").is_file()
