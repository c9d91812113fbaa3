"""A real ``kill -9`` after a checkpoint, then the same call: the run resumes, its result says so,
and it ends with the weights of an uninterrupted run (the other resume tests stand in for the
kill with an exception, which runs ``finally`` blocks and exit handlers; SIGKILL runs none, and
the lock of the dead process must not block the rerun)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.trainer.run_dir import STATE_FILE
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

from .conftest import fast_settings
from .test_sft_trainer import assert_same_weights

# The child trains until the step after the first checkpoint, then kills itself with SIGKILL.
_CHILD = """
import json, os, signal, sys
from transformers import TrainerCallback
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

model, out, data, settings = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])

class KillAfterCheckpoint(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 5:
            os.kill(os.getpid(), signal.SIGKILL)

SFTTrainer(model, output_dir=out, callbacks=[KillAfterCheckpoint()], **settings).train(data_path=data)
"""


@pytest.mark.slow  # two training processes (15 s); make test-slow runs it
def test_sft_killed_with_sigkill_after_a_checkpoint_resumes_to_the_uninterrupted_weights(
    tiny_model_dir: Path, sample_path: Path, tmp_path: Path
) -> None:
    settings = fast_settings(epochs_per_repo=2, save_steps=2)
    straight = tmp_path / "straight"
    full = SFTTrainer(str(tiny_model_dir), output_dir=straight, **settings).train(
        data_path=sample_path
    )

    killed = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(tiny_model_dir),
            str(killed),
            str(sample_path),
            json.dumps(settings),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    state = json.loads((killed / STATE_FILE).read_text())
    assert state["finished"] is False
    assert (killed / "checkpoints" / "pass-000" / "checkpoint-4").is_dir()

    again = SFTTrainer(str(tiny_model_dir), output_dir=killed, **settings).train(
        data_path=sample_path
    )
    assert again.resumed_from is not None and again.resumed_from.endswith("checkpoint-4")
    summary = json.loads((killed / "summary.json").read_text())
    assert summary["resumed_from"] == again.resumed_from
    assert again.steps == full.steps
    assert_same_weights(straight, killed)
