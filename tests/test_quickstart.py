"""``lean-dojo-v2 quickstart``: the bundled data, the focused set, the pipeline with a tiny model,
bad input, and (slow) the real default run's claim: training reaches search."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data.dataset import DatasetDir
from lean_dojo_v2.quickstart.focused import MAX_TACTIC_CHARS, focused_theorems, is_focused
from lean_dojo_v2.quickstart.minif2f import build_dataset, bundled_dataset_path, is_held_out

ROOT = Path(__file__).resolve().parents[1]
MINIF2F = (
    ROOT / "tests" / "data" / "real" / "minictx" / "derived" / "minif2f_test_traced_tactics.json"
)
REQUIRED = ("backend", "attempted", "proved", "expansions", "seconds", "plot", "adapter")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("quickstart") / "tiny")


def _tiny_args(model: Path, out: Path, *extra: str) -> list[str]:
    sets = [
        f"model_name={model}",
        "train_steps=1",
        "batch_size=4",
        "num_samples=2",
        "max_new_tokens=4",
        "max_expansions=1",
        "max_theorems=2",
        "threads=1",
    ]
    return ["quickstart", "--out", str(out), *extra] + [a for s in sets for a in ("--set", s)]


# -- the data ------------------------------------------------------------------------------------


def test_bundled_dataset_is_what_build_dataset_writes(tmp_path):
    built = build_dataset(json.loads(MINIF2F.read_text("utf-8")), tmp_path / "built")
    bundled = bundled_dataset_path()
    names = sorted(
        str(p.relative_to(built)) for p in built.rglob("*") if p.is_file() and p.name[0] != "."
    )
    assert names == [
        "corpus.jsonl",
        "metadata.json",
        *(f"random/{s}.json" for s in ("test", "train", "val")),
        "traced_files.jsonl",
    ]
    for name in names:
        assert (bundled / name).read_bytes() == (built / name).read_bytes(), name
    assert (bundled / "SOURCE.txt").is_file()


def test_split_and_focused_set():
    d = DatasetDir(bundled_dataset_path())
    train, test = d.theorems("random", "train"), d.theorems("random", "test")
    assert (len(train), len(test)) == (44, 12)
    assert not any(is_held_out(t.full_name) for t in train)
    assert all(is_held_out(t.full_name) for t in test)
    focused_train, focused_test = focused_theorems(train), focused_theorems(test)
    assert (len(focused_train), len(focused_test)) == (34, 10)
    assert sum(len(t.traced_tactics) for t in focused_train) == 46
    for t in focused_train + focused_test:
        assert 1 <= len(t.traced_tactics) <= 2
        assert all(len(tt.tactic) <= MAX_TACTIC_CHARS for tt in t.traced_tactics)
    long_proof = next(t for t in train if len(t.traced_tactics) > 2)
    assert not is_focused(long_proof)


# -- the pipeline with a tiny model --------------------------------------------------------------


def test_tiny_run_then_reuse(capsys, tiny_model, tmp_path):
    out = tmp_path / "qs"
    code, stdout, _ = _run(capsys, *_tiny_args(tiny_model, out, "--json"))
    assert code == 0
    report = json.loads(stdout.strip().splitlines()[-1])
    for key in REQUIRED:
        assert key in report
        if key not in ("plot", "adapter", "backend"):
            assert key in report["untrained"]
    assert report["backend"] == "replay" and report["attempted"] == 4
    assert report["untrained"]["attempted"] == 4
    assert set(report["splits"]) == {"train", "held_out"}
    assert Path(report["plot"]).is_file() and Path(report["plot"]).stat().st_size > 0
    assert (Path(report["adapter"]) / "adapter_config.json").is_file()
    assert report["training"]["reused"] is False and report["training"]["steps"] == 1
    assert "backend: replay" in stdout and "only" in stdout
    assert json.loads((out / "report.json").read_text()) == report

    code, stdout, _ = _run(capsys, *_tiny_args(tiny_model, out, "--json"))
    again = json.loads(stdout.strip().splitlines()[-1])
    assert code == 0 and again["training"]["reused"] is True
    assert again["training"]["first_loss"] == report["training"]["first_loss"]
    assert again["untrained"]["reused"] is True and report["untrained"]["reused"] is False
    assert again["untrained"]["splits"] == report["untrained"]["splits"]
    assert "reusing the adapter" in stdout and "first run's" in stdout

    code, stdout, _ = _run(capsys, *_tiny_args(tiny_model, out, "--json", "--retrain"))
    third = json.loads(stdout.strip().splitlines()[-1])
    assert code == 0 and third["training"]["reused"] is False
    assert third["untrained"]["reused"] is False


# -- bad input: one line, nothing written ---------------------------------------------------------


def test_foreign_output_dir_is_refused_untouched(capsys, tiny_model, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = _run(capsys, *_tiny_args(tiny_model, out))
    assert code == 1 and err.count("\n") == 1 and "did not write" in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_missing_model_fails_before_output(capsys, tmp_path):
    out = tmp_path / "qs"
    code, _, err = _run(
        capsys, "quickstart", "--out", str(out), "--set", f"model_name={tmp_path / 'nope'}"
    )
    assert code == 1 and err.count("\n") == 1 and "error:" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "setting",
    [
        "train_steps=0",
        "temperature=-1",
        "max_theorems=0",
        "bogus=1",
        "search_dtype=float16",
        "lora_dropout=1",
    ],
)
def test_bad_setting_is_one_line(capsys, tmp_path, setting):
    out = tmp_path / "qs"
    code, _, err = _run(capsys, "quickstart", "--out", str(out), "--set", setting)
    assert code == 1 and err.count("\n") == 1
    assert not out.exists()


# -- the disk fills up during training -----------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A directory on a 16 MiB filesystem of its own (tmpfs) where this process may mount one
    (root), so that the disk fills for real; None where it may not."""
    import shutil
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None:
        yield None
        return
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(disk: Path, leave: int) -> Path:
    """Fill the filesystem of ``disk`` with a ballast file, then give back ``leave`` bytes."""
    import errno

    ballast = disk / "ballast"
    chunk = b"\0" * (1 << 16)
    with open(ballast, "wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(ballast, max(0, ballast.stat().st_size - leave))
    return ballast


@pytest.mark.slow
@pytest.mark.parametrize("room_kib", [160, 300], ids=["weights", "optimizer"])
def test_disk_full_during_training_is_one_line_and_a_rerun_recovers(
    capsys, tiny_model, tmp_path, small_disk, monkeypatch, room_kib
):
    """The disk fills up while the adapter's checkpoint is written. Where a tmpfs can be mounted
    (root), the ENOSPC is real: when training starts the disk is filled with a ballast file but
    for ``room_kib``: the dataset and the run's config fit, and then the checkpoint's weights do
    not (160 KiB: safetensors fails, saying why) or its optimizer state does not (300 KiB:
    ``torch.save`` fails, saying only "unexpected pos"). Elsewhere the optimizer state's writer
    (``torch.save``) raises ``OSError(ENOSPC)`` after writing part of its file, as a full disk
    makes it."""
    import errno

    from lean_dojo_v2.quickstart import run as quickstart_run

    disk = small_disk or tmp_path
    out = disk / "qs"
    real_train = quickstart_run._train
    ballast: list[Path] = []

    def train_on_a_full_disk(config, train, out_dir, say):
        if small_disk is not None:
            ballast.append(_fill(disk, leave=room_kib * 1024))
        else:
            import torch

            def save(obj, f, *args, **kwargs):
                with open(f, "wb") as fh:
                    fh.write(b"\0" * 4096)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(f))

            monkeypatch.setattr(torch, "save", save)
        return real_train(config, train, out_dir, say)

    monkeypatch.setattr(quickstart_run, "_train", train_on_a_full_disk)
    code, _, err = _run(capsys, *_tiny_args(tiny_model, out))
    assert code == 1, err
    # The progress bars of training go to stderr too; the error is one line, the last.
    assert "Traceback" not in err and err.count("lean-dojo-v2: error:") == 1, err
    line = err[err.index("lean-dojo-v2: error:") :]
    assert line.startswith("lean-dojo-v2: error: the disk is full") and line.count("\n") == 1
    mount = disk
    while not os.path.ismount(mount):
        mount = mount.parent
    assert str(out) in line and f"free on the filesystem mounted at {mount}" in line
    # Nothing a rerun would take for finished: the adapter's summary and settings (what its
    # reuse needs) are not there, nor a report (whose untrained figures a rerun reuses).
    adapter = out / quickstart_run.ADAPTER
    assert not (adapter / quickstart_run.SETTINGS).exists()
    assert not (adapter / "summary.json").exists() and not (out / "report.json").exists()

    # Room again: the same command recovers and trains.
    monkeypatch.undo()
    if small_disk is not None:
        ballast[0].unlink()
    code, stdout, err = _run(capsys, *_tiny_args(tiny_model, out, "--json"))
    assert code == 0, err
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["training"]["reused"] is False and report["training"]["steps"] == 1
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    leftovers = [p.name for p in out.iterdir() if ".ldv2-" in p.name]
    assert leftovers == [] and not any((out / "adapter" / "checkpoints").iterdir())


# -- the real default run (minutes) --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the whole quickstart: 5-6 minutes on 2 cores
def test_default_run_trained_proves_more_training_theorems(capsys, tmp_path):
    """The quickstart's claim, measured: the SFT-trained default model proves more of the theorems
    it was trained on than the untrained one, through ReplayEnv at the same budget."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    code, stdout, _ = _run(capsys, "quickstart", "--json", "--out", str(tmp_path / "qs"))
    assert code == 0
    report = json.loads(stdout.strip().splitlines()[-1])
    trained, untrained = report["splits"]["train"], report["untrained"]["splits"]["train"]
    assert trained["attempted"] == untrained["attempted"] == 34
    assert trained["proved"] > untrained["proved"]
    assert report["splits"]["held_out"]["attempted"] == 10


def test_threads_follow_the_cores_busy_now_not_the_load_average(monkeypatch) -> None:
    """Right after `pip install` the 1-minute load average still says a core is busy on an idle
    machine; the threads follow what the cores do now."""
    import os

    import psutil

    from lean_dojo_v2.quickstart.config import auto_threads

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 1.2, 0.9))
    busy = {"percent": 0.0}  # psutil's figure: the machine's use in percent
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval: busy["percent"])
    assert auto_threads() == 2  # idle now, whatever the average says
    busy["percent"] = 60.0  # 1.2 of 2 cores busy
    assert auto_threads() == 1
    busy["percent"] = 100.0
    assert auto_threads() == 1  # at least one
