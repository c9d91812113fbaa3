"""A full disk during training: ``train sft`` ends in one line naming the filesystem, and the
same command afterwards resumes from the last whole checkpoint, passing over one the full disk
cut short (transformers writes a checkpoint's ``trainer_state.json`` last)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from lean_dojo_v2.cli import main
from lean_dojo_v2.trainer.causal_lm_trainer import pass_checkpoint


def _checkpoint(folder: Path, step: int, *, whole: bool) -> Path:
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "adapter_model.safetensors").write_bytes(b"\0" * 16)
    if whole:
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return path


def test_a_checkpoint_cut_short_is_passed_over_for_the_one_before(tmp_path):
    folder = tmp_path / "checkpoints" / "pass-000"
    _checkpoint(folder, 2, whole=True)
    _checkpoint(folder, 10, whole=True)
    cut = _checkpoint(folder, 12, whole=False)
    assert pass_checkpoint(tmp_path, 0) == folder / "checkpoint-10"
    (cut / "trainer_state.json").write_text('{"global_st')  # cut mid-write
    assert pass_checkpoint(tmp_path, 0) == folder / "checkpoint-10"
    (folder / "checkpoint-10" / "trainer_state.json").unlink()
    assert pass_checkpoint(tmp_path, 0) == folder / "checkpoint-2"
    (folder / "checkpoint-2" / "trainer_state.json").unlink()
    assert pass_checkpoint(tmp_path, 0) is None
    assert pass_checkpoint(tmp_path, 1) is None


def test_train_sft_on_a_full_disk_is_one_line_and_the_rerun_resumes(
    sample_path, tiny_model_dir, tmp_path, capsys, monkeypatch
):
    """The second checkpoint's optimizer state hits ENOSPC after part of it is written (what
    ``torch.save`` does on a full disk); the rerun resumes from the first checkpoint."""
    import torch

    real_save = torch.save
    saves = {"n": 0}

    def save_on_a_disk_that_fills_up(obj, f, *args, **kwargs):
        if str(f).endswith("optimizer.pt"):
            saves["n"] += 1
            if saves["n"] == 2:
                with open(f, "wb") as fh:
                    fh.write(b"\0" * 4096)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(f))
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save_on_a_disk_that_fills_up)
    out = tmp_path / "run"
    argv = ["train", "sft", "--data", str(sample_path), "-o", str(out)]
    for s in (
        f"model_name={tiny_model_dir}",
        "max_steps=3",
        "save_steps=1",
        "batch_size=2",
        "max_examples=6",
        "use_cpu=true",
        "progress_bar=false",
        "loss_curve=false",
    ):
        argv += ["--set", s]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith("lean-dojo-v2: error: the disk is full"), err
    assert "resumes from the last whole checkpoint" in lines[0]
    folder = out / "checkpoints" / "pass-000"
    assert (folder / "checkpoint-2").is_dir()  # cut short: no trainer_state.json
    assert not (folder / "checkpoint-2" / "trainer_state.json").exists()

    monkeypatch.setattr(torch, "save", real_save)
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 3
    assert str(summary["resumed_from"]).endswith("pass-000/checkpoint-1")
