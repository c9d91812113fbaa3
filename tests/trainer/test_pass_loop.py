"""The shared pass loop (``trainer/pass_loop.py``) with a fake trainer: no torch, no model.

The fake "trains" by writing a counter file; its database is an in-memory stand-in that records
what the loop asks of it, so these tests see the plan, the exports, resume and the run record.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.trainer.errors import TrainingStateError
from lean_dojo_v2.trainer.pass_loop import CurriculumTrainer, Pass, PassDataset, PassRun
from lean_dojo_v2.trainer.result import DictResult


@dataclass
class FakeConfig:
    output_dir: str = "out"
    model_name: str | None = None
    lr: float = 0.1
    log_every: int = 1
    resume: bool = True
    overwrite_output_dir: bool = False


@dataclass
class FakeResult(DictResult):
    passes: list[dict[str, Any]]
    steps: int
    resumed_from: str | None
    run_id: int | None = None


class Boom(RuntimeError):
    pass


class FakeTrainer(CurriculumTrainer[FakeResult]):
    run_kind = "fake"
    default_model = "fake-model"
    config_file = "fake_config.yaml"
    not_fingerprinted = frozenset({"output_dir", "overwrite_output_dir", "resume", "log_every"})

    def __init__(self, config: FakeConfig, *, fail_at: int | None = None, per_pass=False):
        self.config = config
        self.result = None
        self.fail_at = fail_at
        self.export_per_pass = per_pass
        self.calls: list[tuple[str, Any]] = []

    def _dataset_files(self, path: Path) -> list[Path]:
        return [path / "data.txt"]

    def _pass_checkpoint(self, out: Path, k: int) -> Path | None:
        ckpt = out / "checkpoints" / f"pass-{k:03d}" / "ckpt"
        return ckpt if ckpt.is_file() else None

    def _model_dir(self, out: Path) -> Path:
        return out / "model"

    def _begin(self, run: PassRun) -> None:
        self.calls.append(("begin", (run.first, len(run.plan))))

    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        # A checkpoint of the pass under way, which the loop removes once the pass is done.
        ckpt = out / "checkpoints" / f"pass-{k:03d}" / "ckpt"
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        ckpt.write_text("x")
        if k == self.fail_at:
            raise Boom(f"pass {k} failed")
        self.calls.append(("pass", (k, p.label, dataset.path, dataset.source)))
        return {"label": p.label, "steps": k + 1}

    def _save_pass(self, out: Path) -> None:
        (out / "model").mkdir(exist_ok=True)
        (out / "model" / "weights").write_text(str(len(self.calls)))

    def _summarise(self, run: PassRun) -> FakeResult:
        passes = run.state["passes"]
        return FakeResult(passes, sum(p["steps"] for p in passes), run.resumed_from)


@dataclass
class Repo:
    name: str
    commit: str
    url: str


class FakeDatabase:
    """What the loop uses of a DynamicDatabase, recording each call."""

    def __init__(self, path: Path, repos: list[Repo]) -> None:
        self.path = path
        self.repos = repos
        self.exports: list[tuple[list[str], Path]] = []
        self.runs: dict[int, dict[str, Any]] = {}

    def sort_repositories_by_difficulty(self, refs):
        return list(self.repos)

    def export_merged_data(self, repos, dst: Path) -> None:
        dst.mkdir(parents=True, exist_ok=True)
        (dst / "corpus.jsonl").write_text("\n".join(r.name for r in repos))
        self.exports.append(([r.name for r in repos], dst))

    def start_training_run(self, kind, *, model, config, repositories) -> int:
        run_id = len(self.runs) + 1
        self.runs[run_id] = {
            "kind": kind,
            "model": model,
            "config": config,
            "repositories": [r.name for r in repositories],
            "status": "running",
        }
        return run_id

    def finish_training_run(self, run_id, *, status="finished", metrics=None, checkpoint=None):
        self.runs[run_id].update(status=status, metrics=metrics, checkpoint=checkpoint)


def _db(tmp_path: Path) -> FakeDatabase:
    repos = [Repo(f"r{i}", f"{i}" * 40, f"https://example.com/r{i}") for i in range(3)]
    return FakeDatabase(tmp_path / "db.sqlite", repos)


def _dataset(tmp_path: Path) -> Path:
    data = tmp_path / "dataset"
    data.mkdir()
    (data / "data.txt").write_text("theorems")
    return data


def test_dataset_run_is_one_pass_and_writes_state_and_summary(tmp_path):
    out = tmp_path / "out"
    data = _dataset(tmp_path)
    trainer = FakeTrainer(FakeConfig(output_dir=str(out)))
    result = trainer.train(data_path=data)

    assert trainer.calls == [("begin", (0, 1)), ("pass", (0, "dataset", data, str(data)))]
    assert result.steps == 1 and result.resumed_from is None and result.run_id is None
    assert trainer.result is result
    assert json.loads((out / "summary.json").read_text()) == result.to_dict()
    state = json.loads((out / "training_state.json").read_text())
    assert state["finished"] and state["passes_done"] == 1
    assert state["plan"]["data"] == str(data.resolve()) and len(state["plan"]["sha256"]) == 64
    assert (out / "fake_config.yaml").is_file()
    assert not (out / "checkpoints" / "pass-000").exists()  # a finished pass keeps no checkpoint


def test_database_run_passes_over_the_curriculum_and_records_the_run(tmp_path):
    out = tmp_path / "out"
    db = _db(tmp_path)
    trainer = FakeTrainer(FakeConfig(output_dir=str(out)))
    result = trainer.train(database=db)

    labels = [c[1][1] for c in trainer.calls if c[0] == "pass"]
    assert labels == [f"r{i}@{str(i) * 12}" for i in range(3)]
    # Pass k trains on the merged export of the first k + 1 repositories, in one folder.
    assert db.exports == [(["r0"], out / "data"), (["r0", "r1"], out / "data")] + [
        (["r0", "r1", "r2"], out / "data")
    ]
    sources = [c[1][3] for c in trainer.calls if c[0] == "pass"]
    assert sources[1] == f"the merged export of 2 repositories at {out / 'data'}"
    assert result.steps == 1 + 2 + 3 and result.run_id == 1
    run = db.runs[1]
    assert run["kind"] == "fake" and run["model"] == "fake-model" and run["status"] == "finished"
    assert run["repositories"] == ["r0", "r1", "r2"] and run["config"]["lr"] == 0.1
    assert run["metrics"] == result.to_dict()
    assert run["checkpoint"] == str((out / "model").resolve())


def test_per_pass_exports_go_to_their_own_folder(tmp_path):
    out = tmp_path / "out"
    db = _db(tmp_path)
    FakeTrainer(FakeConfig(output_dir=str(out)), per_pass=True).train(database=db)
    assert [dst for _, dst in db.exports] == [out / "data" / f"pass-{k:03d}" for k in range(3)]


def test_a_failed_run_resumes_after_its_last_finished_pass(tmp_path):
    out = tmp_path / "out"
    db = _db(tmp_path)
    with pytest.raises(Boom):
        FakeTrainer(FakeConfig(output_dir=str(out)), fail_at=2).train(database=db)
    assert db.runs[1]["status"] == "failed" and "pass 2 failed" in db.runs[1]["metrics"]["error"]
    state = json.loads((out / "training_state.json").read_text())
    assert state["passes_done"] == 2 and not state["finished"]

    # A value outside the fingerprint may change; the pass under way restarts from its checkpoint.
    trainer = FakeTrainer(FakeConfig(output_dir=str(out), log_every=5))
    result = trainer.train(database=db)
    assert trainer.calls[0] == ("begin", (2, 3))
    assert [c[1][0] for c in trainer.calls if c[0] == "pass"] == [2]
    assert result.resumed_from == str(out / "checkpoints" / "pass-002" / "ckpt")
    assert [p["steps"] for p in result.passes] == [1, 2, 3] and result.steps == 6
    assert result.run_id == 2 and db.runs[2]["status"] == "finished"


def test_a_run_resumed_without_a_checkpoint_starts_from_the_saved_model(tmp_path):
    out = tmp_path / "out"
    db = _db(tmp_path)
    with pytest.raises(Boom):
        FakeTrainer(FakeConfig(output_dir=str(out)), fail_at=1).train(database=db)
    (out / "checkpoints" / "pass-001" / "ckpt").unlink()
    result = FakeTrainer(FakeConfig(output_dir=str(out))).train(database=db)
    assert result.resumed_from == str(out / "model")


def test_an_unfinished_run_of_another_config_is_refused(tmp_path):
    out = tmp_path / "out"
    db = _db(tmp_path)
    with pytest.raises(Boom):
        FakeTrainer(FakeConfig(output_dir=str(out)), fail_at=1).train(database=db)
    with pytest.raises(TrainingStateError, match="another config"):
        FakeTrainer(FakeConfig(output_dir=str(out), lr=0.2)).train(database=db)
    # Starting afresh is allowed: resume=False.
    trainer = FakeTrainer(FakeConfig(output_dir=str(out), lr=0.2, resume=False))
    assert trainer.train(database=db).resumed_from is None
    assert trainer.calls[0] == ("begin", (0, 3))


def test_result_reads_by_key_like_the_dict_it_replaces():
    r = FakeResult(passes=[], steps=3, resumed_from=None, run_id=7)
    assert r["steps"] == 3 and r.get("run_id") == 7 and r.get("nope", 1) == 1
    assert "steps" in r and "nope" not in r and r.keys() == list(r.to_dict())
    with pytest.raises(KeyError):
        r["nope"]


def test_the_pass_loop_imports_no_torch(tmp_path):
    import subprocess

    code = (
        "import sys\n"
        "import lean_dojo_v2.trainer.pass_loop, lean_dojo_v2.trainer.sft_trainer\n"
        "import lean_dojo_v2.trainer.retrieval_trainer\n"
        "print(sorted(m for m in ('torch', 'pytorch_lightning', 'transformers') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
