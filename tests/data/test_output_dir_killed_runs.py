"""A finished run survives runs killed with SIGKILL before their first checkpoint.

A run that starts afresh over a finished one sets the finished one aside (``.<name>.ldv2-<pid>-*.old``)
until it has something of its own to resume. SIGKILL runs no ``finally`` block, so the set-aside
stays there; the next run must put it back, not take it for a stale staging directory and delete
it. The fast tests drive the shared pass loop (``trainer/pass_loop.py``) with a trainer that writes
a few small files; the slow ones do the same through the real SFT and GRPO trainers with a tiny
model. Every kill is a real ``kill -9`` of a child process.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# A trainer of the shared pass loop that writes a small "model": enough for the loop to set an
# old run aside, write a checkpoint, save and finish. ``kill`` names the hook that kills the
# process with SIGKILL (``begin``: before any checkpoint; ``pass``: after the first checkpoint);
# ``fail`` the hook that raises instead.
_TRAINER = textwrap.dedent(
    """
    import os, signal, sys
    from dataclasses import dataclass
    from pathlib import Path
    from lean_dojo_v2.trainer.pass_loop import CurriculumTrainer
    from lean_dojo_v2.trainer.result import DictResult


    @dataclass
    class Config:
        output_dir: str
        lr: float = 0.1
        model_name: str | None = None
        resume: bool = True
        overwrite_output_dir: bool = False


    @dataclass
    class Result(DictResult):
        steps: int
        resumed_from: str | None
        run_id: int | None = None


    class Failed(RuntimeError):
        pass


    class MiniTrainer(CurriculumTrainer):
        run_kind = "mini"
        default_model = "mini"
        config_file = "mini_config.yaml"
        not_fingerprinted = frozenset({"output_dir", "overwrite_output_dir", "resume"})

        def __init__(self, config, kill=None, fail=None):
            self.config, self.result, self.kill, self.fail = config, None, kill, fail

        def _stop(self, where):
            if self.kill == where:
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fail == where:
                raise Failed(f"failed at {where}")

        def _dataset_files(self, path):
            return [path / "data.txt"]

        def _pass_checkpoint(self, out, k):
            ckpt = out / "checkpoints" / f"pass-{k:03d}" / "ckpt"
            return ckpt if ckpt.is_file() else None

        def _model_dir(self, out):
            return out / "model"

        def _begin(self, run):
            self._stop("begin")

        def _run_pass(self, k, p, dataset, out):
            ckpt = out / "checkpoints" / f"pass-{k:03d}" / "ckpt"
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            ckpt.write_text("checkpoint")
            self._stop("pass")
            return {"label": p.label, "steps": 1}

        def _save_pass(self, out):
            (out / "model").mkdir(exist_ok=True)
            (out / "model" / "weights").write_text(f"lr={self.config.lr}")

        def _summarise(self, run):
            return Result(len(run.state["passes"]), run.resumed_from)


    if __name__ == "__main__":
        out, data, lr, kill = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
        force = len(sys.argv) > 5 and sys.argv[5] == "force"
        config = Config(output_dir=out, lr=lr, overwrite_output_dir=force)
        MiniTrainer(config, kill=kill).train(data_path=data)
    """
)


@pytest.fixture
def mini(tmp_path: Path):
    """The mini trainer's module, importable here and runnable as a child process."""
    script = tmp_path / "mini_trainer.py"
    script.write_text(_TRAINER, "utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        import mini_trainer

        yield mini_trainer
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mini_trainer", None)


def _dataset(tmp_path: Path) -> Path:
    data = tmp_path / "dataset"
    data.mkdir()
    (data / "data.txt").write_text("theorems")
    return data


def tree(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root`` (the state file left out: it records start times)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "training_state.json"
    }


def leftovers(out: Path) -> list[str]:
    """Set-aside and staging directories of ``out`` beside it (the lock file is not one)."""
    return sorted(
        p.name
        for p in out.parent.iterdir()
        if p.name.startswith(f".{out.name}.ldv2-") and p.is_dir()
    )


def _killed(script: Path, out: Path, data: Path, lr: float, where: str, *extra: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    child = subprocess.run(
        [sys.executable, str(script), str(out), str(data), str(lr), where, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]


def _finished(mini, out: Path, data: Path) -> dict[str, str]:
    mini.MiniTrainer(mini.Config(output_dir=str(out))).train(data_path=data)
    assert (out / "model" / "weights").read_text() == "lr=0.1"
    return tree(out)


@pytest.mark.parametrize("force", [False, True])
def test_a_finished_run_survives_any_number_of_runs_killed_before_their_first_checkpoint(
    mini, tmp_path, force
):
    out, data = tmp_path / "out", _dataset(tmp_path)
    script = tmp_path / "mini_trainer.py"
    finished = _finished(mini, out, data)
    for lr in (0.2, 0.3, 0.4):
        _killed(script, out, data, lr, "begin", *(["force"] if force else []))
        # The killed run's own directory is there, the finished run set aside beside it.
        assert (out / "model").exists() is False
        assert len(leftovers(out)) == 1
    # The next run fails before it has anything: the finished run is what it leaves.
    config = mini.Config(output_dir=str(out), lr=0.5, overwrite_output_dir=force)
    with pytest.raises(mini.Failed):
        mini.MiniTrainer(config, fail="begin").train(data_path=data)
    assert tree(out) == finished
    assert json.loads((out / "training_state.json").read_text())["finished"] is True
    assert leftovers(out) == []


def test_after_a_killed_run_a_new_run_replaces_the_finished_one_and_leaves_nothing_beside_it(
    mini, tmp_path
):
    out, data = tmp_path / "out", _dataset(tmp_path)
    _finished(mini, out, data)
    _killed(tmp_path / "mini_trainer.py", out, data, 0.2, "begin")
    result = mini.MiniTrainer(mini.Config(output_dir=str(out), lr=0.5)).train(data_path=data)
    assert result.steps == 1 and (out / "model" / "weights").read_text() == "lr=0.5"
    assert leftovers(out) == []


def test_a_run_killed_after_its_first_checkpoint_replaced_the_finished_one(mini, tmp_path):
    # Once the new run has a checkpoint the old run is superseded (a normal exit would have
    # removed it too); the rerun resumes the checkpoint and nothing is left beside the directory.
    out, data = tmp_path / "out", _dataset(tmp_path)
    _finished(mini, out, data)
    _killed(tmp_path / "mini_trainer.py", out, data, 0.2, "pass")
    result = mini.MiniTrainer(mini.Config(output_dir=str(out), lr=0.2)).train(data_path=data)
    assert result.resumed_from == str(out / "checkpoints" / "pass-000" / "ckpt")
    assert (out / "model" / "weights").read_text() == "lr=0.2"
    assert leftovers(out) == []


# ---------------------------------------------------------------- the real SFT and GRPO trainers

# The child starts the trainer over the finished run and kills itself with SIGKILL when training
# begins: the finished adapter is set aside by then, and no checkpoint is written yet.
_REAL_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from transformers import TrainerCallback

    kind, model, out, data, settings = sys.argv[1:5] + [json.loads(sys.argv[5])]


    class KillAtTrainBegin(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)


    if kind == "sft":
        from lean_dojo_v2.trainer.sft_trainer import SFTTrainer as Trainer
    else:
        from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer as Trainer
    Trainer(model_name=model, output_dir=out, callbacks=[KillAtTrainBegin()], **settings).train(
        data_path=data
    )
    """
)


def _real_settings(kind: str) -> dict:
    common = dict(use_cpu=True, progress_bar=False, report_to=["none"], save_steps=1000, lr=1e-2)
    common["lora_config"] = True
    if kind == "sft":
        return {**common, "batch_size": 2, "max_examples": 4, "max_steps": 1, "loss_curve": False}
    return {
        **common,
        "batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 4,
        "max_prompts": 4,
        "max_prompt_len": 200,
        "max_steps": 1,
        "curves": False,
        "reward_backend": "replay",
        "reward_envs": 1,
    }


def _trainer(kind: str):
    if kind == "sft":
        from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

        return SFTTrainer
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    return GRPOTrainer


@pytest.fixture(scope="module")
def tiny_causal(tmp_path_factory) -> Path:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("killed_runs") / "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sft", "grpo"])
def test_a_finished_adapter_survives_a_killed_rerun_of_the_real_trainer(
    kind, tiny_causal, tmp_path
):
    from transformers import TrainerCallback

    from lean_dojo_v2.data import sample_dataset_path

    data, out = sample_dataset_path(), tmp_path / kind
    settings = _real_settings(kind)
    Trainer = _trainer(kind)
    Trainer(model_name=str(tiny_causal), output_dir=out, **settings).train(data_path=data)
    assert (out / "adapter_model.safetensors").is_file()
    finished = tree(out)

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    argv = [kind, str(tiny_causal), str(out), str(data), json.dumps(settings)]
    child = subprocess.run(
        [sys.executable, "-c", _REAL_CHILD, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert not (out / "adapter_model.safetensors").exists() and len(leftovers(out)) == 1

    class Fails(Exception):
        pass

    class FailAtTrainBegin(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            raise Fails("the rerun fails before its first checkpoint")

    with pytest.raises(Fails):
        Trainer(
            model_name=str(tiny_causal),
            output_dir=out,
            callbacks=[FailAtTrainBegin()],
            **settings,
        ).train(data_path=data)
    assert tree(out) == finished  # the finished adapter, byte for byte
    assert leftovers(out) == []
