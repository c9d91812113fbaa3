"""`train retrieval` with Lightning DDP in two CPU processes (gloo), against one process.

Two processes of ``batch_size`` 4 train like one process of ``batch_size`` 8: the same examples in
each step (each process takes its share of the one order), in-batch negatives gathered across the
processes, DDP's average of the gradients — so the same weights after the same steps, validation
with the same R@k (13 val queries: one process validates a repeated one, counted once), and the
run record, checkpoints and encoder written by rank 0 alone (the same files as one process's, one
summary line). GradCache under DDP gives the weights of plain training; a database curriculum with
EWC under DDP gives one process's Fisher and weights.

Tolerance: float32 weights after three AdamW steps agree to ~2e-6 here; the differences come from
summing the gradient in another order (two halves averaged instead of one sum), which Adam's
normalised step can amplify to a few ulps of lr. ``atol=2e-5`` (lr 1e-3) is far below one step's
change (~1e-3) and far above that noise.

Each DDP run starts three interpreters and takes 20-60 s on two busy cores, hence ``slow``; one
bad-input check runs in the default suite (no process is started).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
for extra in (REPO / "tests", REPO / "tests" / "trainer"):  # tiny_models, the encoder fixture
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_retrieval_fixtures import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny_bert_ddp"))


def _train(
    out: Path,
    encoder: Path,
    *,
    devices: int,
    batch: int,
    extra: dict[str, str] | None = None,
    db: Path | None = None,
) -> tuple[dict, list[str]]:
    """Run ``train retrieval`` in its own interpreter (on ``db``'s curriculum, or the bundled
    sample); returns (summary, the JSON lines it printed)."""
    done = _launch(_command(out, encoder, devices, batch, extra, db))
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]), lines


def _command(
    out: Path,
    encoder: Path,
    devices: int,
    batch: int,
    extra: dict[str, str] | None,
    db: Path | None,
) -> list[str]:
    """``train retrieval``'s arguments (after ``python -m lean_dojo_v2``)."""
    values = {
        "model_name": str(encoder),
        "accelerator": "cpu",
        "devices": str(devices),
        "strategy": "ddp" if devices > 1 else "auto",
        "batch_size": str(batch),
        "max_steps": "3",
        "lr": "1e-3",
        "seed": "7",
        "max_seq_len": "64",
        "val_max_queries": "13",
        "progress_bar": "false",
        "report_to": "none",
    }
    values.update(extra or {})
    args = ["train", "retrieval", "-o", str(out)]
    args += ["--db", str(db)] if db is not None else []
    for key, value in values.items():
        args += ["--set", f"{key}={value}"]
    return args + ["--json", "--no-eval"]


def _launch(args: list[str], script: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m lean_dojo_v2 ARGS`` (or ``python SCRIPT ARGS``) in its own interpreter;
    Lightning's launcher starts the second process from the same command line."""
    head = [str(script)] if script is not None else ["-m", "lean_dojo_v2"]
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("LOCAL_RANK", None)
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, *head, *args], capture_output=True, text=True, env=env, timeout=400
    )


def _weights(out: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(out / "encoder" / "model.safetensors"))


def _close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=2e-5, msg=k)


def _files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if "ldv2" not in p.name)


@pytest.fixture(scope="module")
def one_process(encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("one") / "out"
    return out, *_train(out, encoder_dir, devices=1, batch=8)


@pytest.mark.slow
def test_two_processes_train_and_validate_as_one_process_with_both_batches(
    encoder_dir: Path, one_process, tmp_path: Path
):
    one_out, one, _ = one_process
    out = tmp_path / "ddp"
    two, lines = _train(out, encoder_dir, devices=2, batch=4)
    # Every step contrasts the rows of both processes: 2 x 4, as one process's 8.
    assert two["passes"] == one["passes"] == 1
    state = json.loads((out / "training_state.json").read_text())
    one_state = json.loads((one_out / "training_state.json").read_text())
    assert state["passes"][0]["in_batch_queries"] == 8 == one_state["passes"][0]["in_batch_queries"]
    assert state["passes"][0]["examples"] == one_state["passes"][0]["examples"]
    assert two["steps"] == one["steps"] == 3
    _close(_weights(out), _weights(one_out))
    # Validation: the same R@k, MRR and FullRecall, each of the 13 queries counted once.
    assert state["passes"][0]["val_queries"] == 13
    assert two["val"] == pytest.approx(one["val"], abs=1e-6)
    # Rank 0 alone reports and writes: one summary line, the files one process writes.
    assert len(lines) == 1
    assert _files(out) == _files(one_out)
    assert state["finished"] is True


@pytest.mark.slow
def test_grad_cache_under_ddp_gives_the_weights_of_plain_training(
    encoder_dir: Path, one_process, tmp_path: Path
):
    one_out, one, _ = one_process
    out = tmp_path / "ddp_cached"
    extra = {"grad_cache": "true", "grad_cache_chunk_size": "3"}
    two, _ = _train(out, encoder_dir, devices=2, batch=4, extra=extra)
    assert two["steps"] == 3
    _close(_weights(out), _weights(one_out))


def _two_repo_db(path: Path) -> Path:
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.database import DynamicDatabase

    sample = sample_dataset_path()
    db = DynamicDatabase(path)
    db.add_repository(sample)
    db.add_repository(sample, url="https://github.com/example/other", commit="b" * 40)
    db.close()
    return path


@pytest.mark.slow
def test_ewc_curriculum_under_ddp_gives_the_fisher_and_weights_of_one_process(
    encoder_dir: Path, tmp_path: Path
):
    db = _two_repo_db(tmp_path / "db.sqlite")
    extra = {"lambda_value": "10.0", "max_steps": "2", "fisher_max_batches": "2", "validate": "0"}
    runs = {}
    for devices, batch in ((1, 8), (2, 4)):
        out = tmp_path / f"out{devices}"
        summary, _ = _train(out, encoder_dir, devices=devices, batch=batch, extra=extra, db=db)
        assert summary["ewc_tasks"] == 2 and summary["passes"] == 2
        runs[devices] = out
    _close(_weights(runs[2]), _weights(runs[1]))
    fisher = {d: torch.load(runs[d] / "ewc.pt", weights_only=True)["fisher"] for d in runs}
    # Under DDP the pooler (which no embedding reaches) is frozen: no Fisher entry, 0 in one.
    # Squared float32 gradients summed in another order: equal to 1e-4 of each tensor's scale
    # (what is ~0 in theory, a key bias's gradient, is float noise of ~1e-21 in both).
    for name, f in fisher[2].items():
        scale = float(fisher[1][name].abs().max())
        torch.testing.assert_close(f, fisher[1][name], rtol=0, atol=1e-4 * scale + 1e-12, msg=name)
    assert all(float(f.abs().sum()) == 0 for n, f in fisher[1].items() if n not in fisher[2])


# Both processes stop at the start of step STOP (a lost machine), after the checkpoints so far.
_STOP_AT_STEP = """
import os, sys
import pytorch_lightning as pl

STOP = int(os.environ["STOP_AT_STEP"])

class StopAt(pl.Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == STOP:
            trainer.strategy.barrier()  # rank 0 has written its checkpoint
            os._exit(3)

from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer
init = RetrievalTrainer.__init__

def with_stop(self, *args, **kwargs):
    init(self, *args, **kwargs)
    self.callbacks.append(StopAt())

RetrievalTrainer.__init__ = with_stop
from lean_dojo_v2.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_stopped_ddp_run_resumes_in_two_processes(encoder_dir: Path, tmp_path: Path):
    """40 examples, 2 processes of batch 4: 5 steps an epoch, 2 epochs. Stopped after the
    epoch-end checkpoint of step 5, the rerun resumes from it and ends with the weights of the
    uninterrupted two-process run (the tiny encoder has no dropout). Stopped after the mid-epoch
    checkpoint of step 2, it resumes and finishes too. Either way the summary says why a DDP
    resume is not exact in general (fresh random states; a mid-epoch one restarts its epoch)."""
    extra = {"max_steps": "-1", "max_epochs": "2", "max_examples": "40", "validate": "false"}
    straight = tmp_path / "straight"
    summary, _ = _train(straight, encoder_dir, devices=2, batch=4, extra=extra)
    assert summary["steps"] == 10 and summary["resumed_from"] is None

    child = tmp_path / "stop_at_step.py"
    child.write_text(_STOP_AT_STEP)
    for every, stop in ((5, 6), (2, 3)):
        out = tmp_path / f"stopped{stop}"
        args = _command(out, encoder_dir, 2, 4, {**extra, "save_every_n_steps": str(every)}, None)
        os.environ["STOP_AT_STEP"] = str(stop)
        try:
            done = _launch(args, child)
        finally:
            del os.environ["STOP_AT_STEP"]
        assert done.returncode != 0 and not (out / "summary.json").exists(), done.stderr[-4000:]
        assert json.loads((out / "training_state.json").read_text())["finished"] is False

        done = _launch(args)
        assert done.returncode == 0, done.stderr[-4000:]
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert len(lines) == 1  # rank 0 reports
        resumed = json.loads(lines[0])
        print(f"stopped at {stop}: {resumed}")
        # The newest checkpoint: the epoch's own at step 5, the step checkpoints' at step 2.
        checkpoint = out / "checkpoints" / "pass-000" / ("last.ckpt" if stop == 6 else "steps")
        assert resumed["resumed_from"] == str(checkpoint if stop == 6 else checkpoint / "last.ckpt")
        assert resumed["resume_exact"] is False and "epoch-end" in resumed["resume_note"]
        assert json.loads((out / "training_state.json").read_text())["finished"] is True
        if stop == 6:  # from the end of epoch 0: the same data and weights as straight
            assert resumed["steps"] == 10
            _close(_weights(out), _weights(straight))


def test_more_processes_than_examples_is_a_typed_error_before_any_process_starts(tmp_path: Path):
    from test_retrieval_fixtures import build_tiny_encoder

    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.errors import TooFewRowsError
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    enc = build_tiny_encoder(tmp_path / "enc")
    cfg = load_config(
        TrainingConfig,
        None,
        [],
        model_name=str(enc),
        output_dir=str(tmp_path / "out"),
        accelerator="cpu",
        devices="2",
        strategy="ddp",
        max_examples=1,
        progress_bar=False,
        report_to=["none"],
    )
    with pytest.raises(TooFewRowsError, match=r"1 \(goal, premise\) example\(s\) for 2 processes"):
        RetrievalTrainer(cfg).train(data_path=sample_dataset_path())


@pytest.mark.parametrize(
    ("env", "main"),
    [
        ({}, True),
        ({"LOCAL_RANK": "1"}, False),
        # Lightning's launcher on the second machine: local rank 0 there is not rank 0.
        ({"NODE_RANK": "1", "LOCAL_RANK": "0"}, False),
        ({"NODE_RANK": "0", "LOCAL_RANK": "0"}, True),
        # torchrun / accelerate set RANK, which decides.
        ({"RANK": "0", "NODE_RANK": "0", "LOCAL_RANK": "0"}, True),
        ({"RANK": "3", "NODE_RANK": "1", "LOCAL_RANK": "1"}, False),
    ],
)
def test_only_global_rank_zero_writes_under_lightnings_launcher_on_several_machines(
    env: dict[str, str], main: bool, monkeypatch: pytest.MonkeyPatch
):
    from lean_dojo_v2.system.ranks import is_main_process

    for key in ("RANK", "NODE_RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert is_main_process() is main
