"""Nothing in a run directory is lost before the new run can start, outputs
never overlap inputs (``--force`` or not), ``--export`` is an output like ``output_dir``, and one
run at a time holds a run directory. The shared pass loop with the fake trainer of
``test_pass_loop`` (no torch), plus the real CLI where a check must come before training."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.data.run_lock import RunLockedError, lock_output_dir, lock_path
from lean_dojo_v2.errors import OutputExistsError

from .test_pass_loop import Boom, FakeConfig, FakeTrainer, _dataset


class BadModel(Exception):
    pass


class FailsBeforeTraining(FakeTrainer):
    """A trainer whose model (or devices, or data) turn out bad when the run begins: nothing of
    the new run exists yet."""

    def _begin(self, run):
        raise BadModel("no model at ./misspelt")


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "training_state.json"
    }


def _finished_run(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    out, data = tmp_path / "out", _dataset(tmp_path)
    FakeTrainer(FakeConfig(output_dir=str(out))).train(data_path=data)
    assert (out / "model" / "weights").is_file()
    return out, data, _tree(out)


def _no_leftovers(out: Path) -> None:
    left = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    assert left == [], left


# ------------------------------------------------------------------ item 1: nothing deleted early


@pytest.mark.parametrize("force", [False, True])
def test_a_run_that_fails_before_it_has_anything_leaves_the_old_run_whole(tmp_path, force):
    out, data, before = _finished_run(tmp_path)
    cfg = FakeConfig(output_dir=str(out), lr=0.5, overwrite_output_dir=force)
    with pytest.raises(BadModel):
        FailsBeforeTraining(cfg).train(data_path=data)
    assert _tree(out) == before  # the trained model, config, summary: all still there
    state = json.loads((out / "training_state.json").read_text())
    assert state["finished"]
    _no_leftovers(out)


def test_the_old_run_is_replaced_once_the_new_one_has_a_checkpoint(tmp_path):
    out, data, before = _finished_run(tmp_path)
    with pytest.raises(Boom):  # fails in its first pass, after writing a checkpoint
        FakeTrainer(FakeConfig(output_dir=str(out), lr=0.5), fail_at=0).train(data_path=data)
    assert not (out / "model").exists() and (out / "checkpoints" / "pass-000" / "ckpt").is_file()
    _no_leftovers(out)
    # ... and that checkpoint is what the same command resumes.
    result = FakeTrainer(FakeConfig(output_dir=str(out), lr=0.5)).train(data_path=data)
    assert result.resumed_from == str(out / "checkpoints" / "pass-000" / "ckpt")


def test_a_finished_run_is_replaced_by_a_new_finished_one(tmp_path):
    out, data, _ = _finished_run(tmp_path)
    FakeTrainer(FakeConfig(output_dir=str(out), lr=0.5)).train(data_path=data)
    assert json.loads((out / "summary.json").read_text())["steps"] == 1
    assert "lr: 0.5" in (out / "fake_config.yaml").read_text()
    _no_leftovers(out)


@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize("force", [False, True])
def test_model_name_in_the_output_dir_is_refused_and_the_model_kept(tmp_path, inside, force):
    out, data, before = _finished_run(tmp_path)
    model = out / "model" if inside else out
    cfg = FakeConfig(output_dir=str(out), model_name=str(model), overwrite_output_dir=force)
    with pytest.raises(OutputExistsError, match="new output_dir") as info:
        FakeTrainer(cfg).train(data_path=data)
    assert "\n" not in str(info.value) and f"model_name={model}" in str(info.value)
    assert _tree(out) == before


def test_an_output_dir_holding_the_model_is_refused_even_with_force(tmp_path):
    data = _dataset(tmp_path)
    model = tmp_path / "work" / "base-model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    cfg = FakeConfig(output_dir=str(tmp_path / "work"), model_name=str(model))
    cfg.overwrite_output_dir = True
    with pytest.raises(OutputExistsError, match="overlaps model_name"):
        FakeTrainer(cfg).train(data_path=data)
    assert (model / "config.json").read_text() == "{}"


def test_continuing_from_a_finished_run_into_a_new_output_dir_works(tmp_path):
    out, data, _ = _finished_run(tmp_path)
    cfg = FakeConfig(output_dir=str(tmp_path / "next"), model_name=str(out / "model"))
    assert FakeTrainer(cfg).train(data_path=data).steps == 1


# ------------------------------------------------------------------ item 3: one run per directory


def test_a_second_run_into_a_locked_directory_fails_at_once_naming_the_holder(tmp_path):
    out, data, before = _finished_run(tmp_path)
    with lock_output_dir(out):
        trainer = FakeTrainer(FakeConfig(output_dir=str(out), lr=0.5))
        with pytest.raises(RunLockedError) as info:
            trainer.train(data_path=data)
        assert trainer.calls == []
    msg = str(info.value)
    assert "\n" not in msg and f"pid {os.getpid()} on {socket.gethostname()}" in msg
    assert isinstance(info.value, OutputExistsError)
    assert _tree(out) == before
    assert not lock_path(out).exists()  # released by the holder


def test_a_run_started_from_inside_another_run_into_its_directory_is_refused(tmp_path):
    out, data = tmp_path / "out", _dataset(tmp_path)
    seen: list[BaseException] = []

    class Nested(FakeTrainer):
        def _begin(self, run):
            try:
                FakeTrainer(FakeConfig(output_dir=str(out), lr=0.9)).train(data_path=data)
            except RunLockedError as exc:
                seen.append(exc)

    Nested(FakeConfig(output_dir=str(out))).train(data_path=data)
    assert len(seen) == 1
    assert "lr: 0.1" in (out / "fake_config.yaml").read_text()


def test_a_run_holding_the_lock_in_another_process_is_named(tmp_path):
    out, data = tmp_path / "out", _dataset(tmp_path)
    code = (
        "import sys, time\n"
        "from lean_dojo_v2.data.run_lock import lock_output_dir\n"
        f"with lock_output_dir({str(out)!r}):\n"
        "    print('locked', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid} "):
            FakeTrainer(FakeConfig(output_dir=str(out))).train(data_path=data)
        assert not out.exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # Released when the holder ends: now the run goes ahead.
    assert FakeTrainer(FakeConfig(output_dir=str(out))).train(data_path=data).steps == 1


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path):
    out, data = tmp_path / "out", _dataset(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00"}
    lock_path(out).write_text(json.dumps(stale))
    assert FakeTrainer(FakeConfig(output_dir=str(out))).train(data_path=data).steps == 1
    assert not lock_path(out).exists()


def test_the_lock_is_released_when_the_run_fails(tmp_path):
    out, data = tmp_path / "out", _dataset(tmp_path)
    with pytest.raises(Boom):
        FakeTrainer(FakeConfig(output_dir=str(out)), fail_at=0).train(data_path=data)
    assert not lock_path(out).exists()
    with lock_output_dir(out):  # free again
        pass


# ------------------------------------------------------------------ item 2: --export


def _retrieval_argv(tmp_path: Path, data: Path, export: Path, *extra: str) -> list[str]:
    return [
        "train",
        "retrieval",
        "--data",
        str(data),
        "-o",
        str(tmp_path / "run"),
        "--export",
        str(export),
        "--set",
        f"model_name={tmp_path / 'no-such-model'}",
        *extra,
    ]


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.fixture
def dataset_copy(tmp_path: Path) -> Path:
    import shutil

    from lean_dojo_v2.data import sample_dataset_path

    dst = tmp_path / "dataset"
    shutil.copytree(sample_dataset_path(), dst)
    return dst


@pytest.mark.parametrize("where", ["dataset", "inside-dataset", "run", "inside-run", "above-run"])
def test_export_onto_an_input_or_the_run_is_refused_even_with_force_before_training(
    tmp_path, capsys, dataset_copy, where
):
    from lean_dojo_v2.cli import main

    run = tmp_path / "run"
    export = {
        "dataset": dataset_copy,
        "inside-dataset": dataset_copy / "retriever",
        "run": run,
        "inside-run": run / "retriever",
        "above-run": tmp_path,
    }[where]
    files = sorted(p.name for p in dataset_copy.rglob("*"))
    # The model does not exist: had the export been checked after training, this would fail on
    # the model instead.
    assert main(_retrieval_argv(tmp_path, dataset_copy, export, "--force")) == 1
    line = _one_line_error(capsys)
    assert "overlaps" in line and str(export) in line
    assert sorted(p.name for p in dataset_copy.rglob("*")) == files
    assert not run.exists()


def test_export_onto_a_foreign_directory_needs_force(tmp_path, capsys, dataset_copy):
    from lean_dojo_v2.cli import main

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    assert main(_retrieval_argv(tmp_path, dataset_copy, foreign)) == 1
    assert "--force" in _one_line_error(capsys)
    assert (foreign / "notes.txt").read_text() == "keep"
    assert not (tmp_path / "run").exists()


def test_trainer_export_checks_the_run_directory_too(tmp_path):
    from lean_dojo_v2.trainer.run_dir import check_export_dir

    run = tmp_path / "run"
    with pytest.raises(OutputExistsError, match="run directory"):
        check_export_dir(run, out=run, inputs=[], force=True)
    with pytest.raises(OutputExistsError, match="overlaps the input"):
        check_export_dir(tmp_path / "d" / "x", out=run, inputs=[tmp_path / "d"], force=True)
    assert (
        check_export_dir(tmp_path / "exp", out=run, inputs=[], force=False)
        == (tmp_path / "exp").resolve()
    )


# ------------------------------------------------------------------ item 1 with the real SFT trainer


def test_sft_bad_input_into_a_finished_run_leaves_it_whole(tiny_model_dir, sample_path, tmp_path):
    import shutil

    from lean_dojo_v2.errors import LeanDojoError, ModelNotFoundError
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    from .conftest import fast_settings

    out = tmp_path / "run"
    SFTTrainer(str(tiny_model_dir), output_dir=out, **fast_settings(max_steps=1)).train(
        data_path=sample_path
    )
    before = sorted(p.name for p in out.iterdir())
    weights = (out / "model.safetensors").read_bytes()
    assert "model.safetensors" in before

    # A misspelt model path, --force or not.
    for force in (False, True):
        with pytest.raises(ModelNotFoundError):
            SFTTrainer(
                str(tmp_path / "misspelt-model"),
                output_dir=out,
                overwrite_output_dir=force,
                **fast_settings(max_steps=1),
            ).train(data_path=sample_path)
        assert sorted(p.name for p in out.iterdir()) == before
        assert (out / "model.safetensors").read_bytes() == weights

    # A truncated train.json.
    data = tmp_path / "data"
    shutil.copytree(sample_path, data)
    train = data / "random" / "train.json"
    train.write_bytes(train.read_bytes()[: len(train.read_bytes()) // 2])
    with pytest.raises(LeanDojoError):
        SFTTrainer(str(tiny_model_dir), output_dir=out, **fast_settings(max_steps=1)).train(
            data_path=data
        )
    assert sorted(p.name for p in out.iterdir()) == before
    assert (out / "model.safetensors").read_bytes() == weights
    _no_leftovers(out)
