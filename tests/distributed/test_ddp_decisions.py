"""What a run of several processes decides once, checked in one process (the default suite; the
launched runs of ``test_ddp_training.py`` are ``slow``): where the run starts is the main
process's decision, its refusal is raised on every process, and more processes than examples is
refused before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lean_dojo_v2.data.run_lock import RunLockedError
from lean_dojo_v2.errors import LeanDojoError
from lean_dojo_v2.system import ranks
from lean_dojo_v2.trainer import run_dir
from lean_dojo_v2.trainer.run_dir import RunStart, decided_by_main

pytestmark = pytest.mark.distributed


def _as_rank(monkeypatch: pytest.MonkeyPatch, rank: int, from_main: object = None) -> list[object]:
    """Run as process ``rank`` of two; the main process's shared value is ``from_main`` (on rank
    0: what it shares). Returns what was handed to the broadcast."""
    sent: list[object] = []

    def broadcast(value: object) -> object:
        sent.append(value)
        return value if rank == 0 else from_main

    monkeypatch.setattr(ranks, "world_size", lambda: 2)
    monkeypatch.setattr(ranks, "is_main_process", lambda: rank == 0)
    monkeypatch.setattr(ranks, "from_main_process", broadcast)
    return sent


def _never(*_: object) -> RunStart:
    raise AssertionError("only the main process decides")


def test_the_other_processes_start_where_the_main_process_wrote(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    state = {"fingerprint": "f", "passes_done": 1, "passes": [{"steps": 3}], "finished": False}
    (out / run_dir.STATE_FILE).write_text(json.dumps(state))
    _as_rank(monkeypatch, 1)
    begun = decided_by_main(_never, out)
    assert (begun.state, begun.first, begun.previous) == (state, 1, None)


def test_the_main_process_refusal_is_raised_on_every_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    message = "output directory out is in use by another run: pid 1 on h"

    def locked() -> RunStart:
        raise RunLockedError(message)

    sent = _as_rank(monkeypatch, 0)
    with pytest.raises(RunLockedError, match="in use by another run"):
        decided_by_main(locked, tmp_path / "out")
    assert sent == [(RunLockedError, message)]

    _as_rank(monkeypatch, 1, from_main=(RunLockedError, message))
    with pytest.raises(RunLockedError) as raised:
        decided_by_main(_never, tmp_path / "out")
    assert str(raised.value) == message
    assert not (tmp_path / "out").exists()


def test_a_refusal_whose_class_takes_other_arguments_arrives_as_its_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from lean_dojo_v2.trainer.errors import UnknownAlgorithmError

    text = "unknown GRPO algorithm 'x'; valid algorithms: grpo"
    _as_rank(monkeypatch, 1, from_main=(UnknownAlgorithmError, text))
    with pytest.raises(LeanDojoError, match="unknown GRPO algorithm 'x'"):
        decided_by_main(_never, tmp_path / "out")


def test_one_process_decides_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    start = RunStart({"passes_done": 0}, 0)
    assert ranks.from_main_process("x") == "x"  # no process group needed
    assert decided_by_main(lambda: start, tmp_path) is start


def test_more_processes_than_examples_fails_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The count is the examples the data gives at most (``max_examples``, tactics that are not
    ``sorry``), known before the tokenizer loads; the launched check is in test_ddp_training."""
    import sys

    from lean_dojo_v2.cli import main
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer import sft_trainer

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tiny_models import build_tiny_causal

    model = build_tiny_causal(tmp_path / "tiny")
    capsys.readouterr()
    monkeypatch.setattr(sft_trainer, "world_size", lambda: 3)
    out = tmp_path / "out"
    argv = ["train", "sft", "--data", str(sample_dataset_path()), "-o", str(out)]
    argv += ["--set", f"model_name={model}", "--set", "use_cpu=true", "--set", "max_examples=2"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at most 2 examples for 3 processes" in err[0], err
    assert not out.exists() and not (tmp_path / ".out.lock").exists()
    monkeypatch.setattr(sft_trainer, "world_size", lambda: 2)
    trainer = sft_trainer.SFTTrainer(str(model), output_dir=out, use_cpu=True)
    trainer._check_rows(2, None, "x has")  # type: ignore[arg-type]  # SFT reads no TRL value
