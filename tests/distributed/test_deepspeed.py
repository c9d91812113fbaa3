"""DeepSpeed ZeRO-2 with ``train sft`` in two CPU processes (gloo; DeepSpeed's CPU accelerator):
our config filled into DeepSpeed's ``"auto"`` values, its ZeRO optimizer, the checkpoint layout
read back with DeepSpeed's own ``zero_to_fp32``, and resume from it in two processes to the
uninterrupted run's weights. And a DeepSpeed config that cannot run: one line, nothing written.

The two-process test takes about a minute on two cores (three launches), hence ``slow``; the
checks of a bad config run in the default suite (a second each, no process started).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.config.deepspeed import read_deepspeed_config

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
ZERO2 = REPO / "configs" / "deepspeed" / "zero2.json"
if str(REPO / "tests") not in sys.path:  # tiny_models lives in tests/
    sys.path.insert(0, str(REPO / "tests"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal_deepspeed"))


@pytest.fixture(scope="module")
def sample() -> Path:
    from lean_dojo_v2.data import sample_dataset_path

    return sample_dataset_path()


def _settings(model: Path, **extra: object) -> dict[str, object]:
    values: dict[str, object] = dict(
        model_name=str(model),
        batch_size=2,
        gradient_accumulation_steps=2,
        max_examples=16,
        lr=5e-3,
        use_cpu=True,
        progress_bar=False,
        loss_curve=False,
        report_to=["none"],
    )
    values.update(extra)
    return values


def _set_args(settings: dict[str, object]) -> list[str]:
    out: list[str] = []
    for key, value in settings.items():
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        out += ["--set", f"{key}={text}"]
    return out


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("lean-dojo-v2: error: ")
    return lines[0]


# ---------------------------------------------------------------- a config that cannot run


@pytest.mark.parametrize(
    "command, text, says",
    [
        ("sft", '{"zero_optimization": {"stage": 2,}', "is not valid JSON text"),
        ("grpo", '{"zero_optimization": {"stage": 2,}', "is not valid JSON text"),
        ("sft", '{"zero_optimization": {"stage": 7}}', "zero_optimization.stage is 7"),
        ("sft", '{"zero_optimization": {"stage": "2"}}', "zero_optimization.stage is '2'"),
        ("sft", '{"zero_optimization": 3}', "zero_optimization is 3, not an object"),
        ("sft", "[1, 2]", "is a JSON list, not an object"),
        ("sft", "\udcff", "is not valid JSON text"),
        ("sft", "[" * 100_000 + "]" * 100_000, "nested more than 1024 levels deep"),
    ],
)
def test_a_deepspeed_config_that_does_not_parse_is_one_line_and_nothing_is_written(
    tiny_model: Path,
    sample: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    text: str,
    says: str,
) -> None:
    from lean_dojo_v2.cli import main

    config = tmp_path / "ds.json"
    config.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = tmp_path / "out"
    # keys SFTConfig and GRPOConfig share
    settings = dict(model_name=str(tiny_model), max_steps=1, use_cpu=True, deepspeed=str(config))
    argv = ["train", command, "--data", str(sample), "-o", str(out), *_set_args(settings)]
    assert main(argv) != 0
    line = _one_line_error(capsys)
    assert f"deepspeed config {config}" in line and says in line, line
    assert not out.exists()


def test_a_missing_deepspeed_config_names_the_shipped_ones(
    tiny_model: Path, sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lean_dojo_v2.cli import main

    out = tmp_path / "out"
    settings = _settings(tiny_model, max_steps=1, deepspeed=str(tmp_path / "nope.json"))
    argv = ["train", "sft", "--data", str(sample), "-o", str(out), *_set_args(settings)]
    assert main(argv) != 0
    line = _one_line_error(capsys)
    assert "does not exist" in line and "configs/deepspeed/zero2.json" in line
    assert not out.exists()


def test_deepspeed_outside_a_launcher_is_one_line_naming_the_launchers(
    tiny_model: Path,
    sample: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a launcher's rank DeepSpeed looks for MPI (``mpi4py``) and fails with a traceback
    after the run directory is written; the check says what to run instead, before."""
    from lean_dojo_v2.cli import main
    from lean_dojo_v2.config.deepspeed import LAUNCHER_VARIABLES

    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "out"
    settings = _settings(tiny_model, max_steps=1, deepspeed=str(ZERO2))
    argv = ["train", "sft", "--data", str(sample), "-o", str(out), *_set_args(settings)]
    assert main(argv) != 0
    line = _one_line_error(capsys)
    assert "no launcher started this process" in line
    assert "accelerate launch" in line and "torchrun" in line and "--no_local_rank" in line
    assert not out.exists()


def test_deepspeed_without_the_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lean_dojo_v2.config import deepspeed as ds_config
    from lean_dojo_v2.errors import ConfigValueError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "deepspeed" else real(name)
    )
    with pytest.raises(ConfigValueError, match=r"pip install 'lean-dojo-v2\[deepspeed\]'"):
        ds_config.check_deepspeed_run(ZERO2)


def test_the_shipped_deepspeed_configs_pass_the_check() -> None:
    for stage in (2, 3):
        data = read_deepspeed_config(REPO / "configs" / "deepspeed" / f"zero{stage}.json")
        zero = data["zero_optimization"]
        assert isinstance(zero, dict) and zero["stage"] == stage
        # The batch, accumulation, clipping and precision come from our config (filled below).
        assert data["train_micro_batch_size_per_gpu"] == "auto"
        assert data["gradient_accumulation_steps"] == "auto"


# ---------------------------------------------------------------- two processes, for real

# One rank of a run that records what DeepSpeed was given and runs, then stops both ranks right
# after the checkpoint of step 2 (as a lost machine would: the run is unfinished).
_CHILD = """
import json, os, sys
from transformers import TrainerCallback
from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

model, out, data, settings, report = sys.argv[1:6]
settings = json.loads(settings)
settings.pop("model_name")

class RecordThenStop(TrainerCallback):
    def on_train_begin(self, args, state, control, optimizer=None, **kwargs):
        import torch.distributed as dist
        inner = getattr(optimizer, "optimizer", optimizer)
        info = {"config": args.hf_deepspeed_config.config, "optimizer": type(inner).__name__,
                "world_size": dist.get_world_size(), "backend": dist.get_backend()}
        with open(f"{report}.{dist.get_rank()}", "w") as f:
            json.dump(info, f, default=str)

    def on_save(self, args, state, control, **kwargs):
        import torch.distributed as dist
        if state.global_step == 2:
            dist.barrier()  # both ranks have written their part of the checkpoint
            os._exit(3)

SFTTrainer(model, output_dir=out, callbacks=[RecordThenStop()], **settings).train(data_path=data)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(launcher: str, program: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``program`` in two CPU processes under ``accelerate launch`` or ``torchrun`` (one free
    port each, so that runs beside each other do not meet)."""
    port = str(_free_port())
    if launcher == "accelerate":
        head = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
        head += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
        head += ["--main_process_port", port]
    else:
        head = ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", port]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", DS_ACCELERATOR="cpu")
    return subprocess.run(
        [sys.executable, *head, *program],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )


@pytest.mark.slow
def test_zero2_in_two_cpu_processes_fills_our_config_checkpoints_and_resumes_exactly(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    import torch
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
    from safetensors.torch import load_file

    settings = _settings(tiny_model, max_steps=4, save_steps=2, deepspeed=str(ZERO2))
    cli = ["-m", "lean_dojo_v2", "train", "sft", "--data", str(sample), "--json"]

    # 1. Stopped after the checkpoint of step 2.
    stopped, report = tmp_path / "stopped", tmp_path / "report"
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    args = [str(tiny_model), str(stopped), str(sample), json.dumps(settings), str(report)]
    done = _launch("accelerate", [str(child), *args], tmp_path)
    assert done.returncode != 0 and not (stopped / "summary.json").exists(), done.stderr[-3000:]

    # Our config in DeepSpeed's "auto" values: batch per process, accumulation, the global
    # batch over both processes, clipping, precision (float32 on the CPU), the bucket size from
    # the model's hidden size (64); ZeRO-2's optimizer over gloo.
    for rank in (0, 1):
        info = json.loads(Path(f"{report}.{rank}").read_text())
        ds = info["config"]
        assert ds["train_micro_batch_size_per_gpu"] == 2
        assert ds["gradient_accumulation_steps"] == 2
        assert ds["train_batch_size"] == 2 * 2 * 2
        assert ds["gradient_clipping"] == 1.0
        assert ds["bf16"] == {"enabled": False}
        assert ds["zero_optimization"]["stage"] == 2
        assert ds["zero_optimization"]["reduce_bucket_size"] == 64 * 64
        assert info["optimizer"] == "DeepSpeedZeroOptimizer"
        assert (info["world_size"], info["backend"]) == (2, "gloo")

    # The checkpoint's layout: transformers' files, DeepSpeed's engine state and one optimizer
    # shard per rank (ZeRO-2 partitions the optimizer state), the rng state of each rank.
    ckpt = stopped / "checkpoints" / "pass-000" / "checkpoint-2"
    assert (ckpt / "latest").read_text().strip() == "global_step2"
    shards = sorted(p.name for p in (ckpt / "global_step2").iterdir())
    assert shards == [
        "mp_rank_00_model_states.pt",
        "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "zero_pp_rank_1_mp_rank_00_optim_states.pt",
    ]
    for name in ("model.safetensors", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"):
        assert (ckpt / name).is_file(), name
    # Read back with DeepSpeed's own tool: the float32 weights its shards hold are the model's.
    fp32 = get_fp32_state_dict_from_zero_checkpoint(str(ckpt))
    saved = load_file(str(ckpt / "model.safetensors"))
    assert fp32.keys() == saved.keys()
    for key, value in saved.items():
        assert torch.equal(fp32[key].float(), value.float()), key

    # 2. The user's command, in two processes again: resumes from that checkpoint.
    done = _launch("accelerate", [*cli, "-o", str(stopped), *_set_args(settings)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((stopped / "summary.json").read_text())
    assert summary["resumed_from"] == str(ckpt) and summary["steps"] == 4

    # 3. The same run uninterrupted (under torchrun): the same weights. Both runs do the same
    # float32 operations in the same order (the resumed one restores DeepSpeed's optimizer shards,
    # the scheduler, each rank's rng and the data position), so the bound is float32 round-off,
    # 1e-6, and the measured difference is 0.
    straight = tmp_path / "straight"
    done = _launch("torchrun", [*cli, "-o", str(straight), *_set_args(settings)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = (
        load_file(str(stopped / "model.safetensors")),
        load_file(str(straight / "model.safetensors")),
    )
    start = load_file(str(tiny_model / "model.safetensors"))
    assert a.keys() == b.keys()
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6
    assert max((a[k] - start[k]).abs().max().item() for k in a) > 1e-3  # it trained


@pytest.mark.slow
def test_zero3_in_two_cpu_processes_saves_the_whole_model(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    """ZeRO-3 leaves each rank a slice of every weight; the saved model is gathered from both
    (saved from rank 0's slices alone it was empty tensors: 3 KB for this model)."""
    from safetensors.torch import load_file

    zero3 = REPO / "configs" / "deepspeed" / "zero3.json"
    settings = _settings(tiny_model, max_steps=2, lr=5e-3, deepspeed=str(zero3))
    out = tmp_path / "zero3"
    cli = ["-m", "lean_dojo_v2", "train", "sft", "--data", str(sample), "-o", str(out)]
    done = _launch("accelerate", [*cli, *_set_args(settings)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    saved, start = (
        load_file(str(out / "model.safetensors")),
        load_file(str(tiny_model / "model.safetensors")),
    )
    assert {k: v.shape for k, v in saved.items()} == {k: v.shape for k, v in start.items()}
    assert max((saved[k] - start[k]).abs().max().item() for k in saved) > 1e-3  # it trained
    assert json.loads((out / "summary.json").read_text())["steps"] == 2
