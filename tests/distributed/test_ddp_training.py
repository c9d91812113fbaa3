"""``train sft`` and ``train grpo`` under data parallelism: two CPU processes (gloo) started by
``accelerate launch --config_file configs/accelerate/cpu_ddp.yaml``, the tiny random Llama of
``tests/tiny_models.py`` and the bundled real sample.

- SFT in two processes of batch 2 ends with the weights of one process of batch 4 (the same
  global batch and seed), within 1e-5; rank 0 alone writes the run directory (one summary, the
  old contents set aside once and removed); a run stopped after a checkpoint two processes wrote
  resumes in two processes to the same weights.
- GRPO in two processes (each generating its share of the completions, the rewards gathered)
  logs the loss, the mean reward and each reward function's mean of one process, step by step,
  and (trained with plain SGD, see ``GRPO_SGD_LR``) ends with its weights within 1e-4;
  stopped after a checkpoint two processes wrote, it resumes in two processes to the weights of
  the uninterrupted two-process run (measured: identical, max |dw| = 0).
- Bad input: more processes than the data can share, and a run directory locked by another run:
  one line of ours on stderr, non-zero exit, nothing written.

Why 1e-5 for SFT: both runs take the same examples in the same order (the sampler is seeded
alike; accelerate gives rank r the r-th half of each global batch) and DDP averages the two
halves' gradients; TRL normalises the loss by the completion tokens of the whole global batch
(``average_tokens_across_devices``), so the averaged gradient is the one-process gradient up to
float32 summation order (~1e-7 relative). AdamW divides each gradient by its running magnitude
(+ eps 1e-8), so the relative noise turns into update noise mostly where a gradient is near eps:
measured max |Δw| = 2.4e-6 after 4 steps at lr 5e-3 (2026-11-27), while the weights move by
1.3e-2 and one process at half the batch ends 2.4e-2 away. 1e-5 is 4× the measured value and
1,000× below what a different batch changes.

Each launch starts two Python processes that import torch and transformers (15-30 s on two
shared cores, even for a run refused before training), so every test here is ``slow``; the
decisions they rest on are checked without a launch in ``test_ddp_decisions.py`` (default suite).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
CPU_DDP = REPO / "configs" / "accelerate" / "cpu_ddp.yaml"
if str(REPO / "tests") not in sys.path:  # tiny_models lives in tests/
    sys.path.insert(0, str(REPO / "tests"))

SFT_TOLERANCE = 1e-5
# GRPO's weight check trains with plain SGD: each update is lr × the averaged gradient, so the
# two runs' float32 summation-order noise (~1e-7 relative) stays ~1e-7 relative in the weights on
# any CPU. Adam divides by the gradient's running magnitude, so where a gradient is near zero that
# noise becomes an update of up to lr (measured 4.7e-4 after 3 steps at lr 1e-2 on one 2-core
# machine, 0 on another). lr 0.1 moves the tiny model's weights by ~2e-2 in 3 steps (measured),
# 200× the 1e-4 the two runs may differ by.
GRPO_SGD_LR = 0.1
GRPO_WEIGHT_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal_ddp"))


@pytest.fixture(scope="module")
def sample() -> Path:
    from lean_dojo_v2.data import sample_dataset_path

    return sample_dataset_path()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(program: list[str], cwd: Path, *, processes: int = 2) -> subprocess.CompletedProcess[str]:
    """``program`` (``-m lean_dojo_v2 ...`` or a script and its arguments) in ``processes`` CPU
    processes under ``accelerate launch``, each launch on a free port of its own; 0: one plain
    process, no launcher (the reference). One thread per process: two share the cores."""
    head: list[str] = []
    if processes:
        head = ["-m", "accelerate.commands.launch", "--config_file", str(CPU_DDP)]
        head += ["--num_processes", str(processes), "--main_process_port", str(_free_port())]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env["TRANSFORMERS_OFFLINE"] = "1"
    command = [sys.executable, *head, *program]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=400)


def _set_args(settings: dict[str, object]) -> list[str]:
    return [a for key, value in settings.items() for a in ("--set", f"{key}={value}")]


def _settings(model: Path, **extra: object) -> dict[str, object]:
    """A quick run of the tiny model on the CPU, every step logged."""
    values: dict[str, object] = dict(model_name=model, use_cpu=True, logging_steps=1)
    values.update(progress_bar=False, report_to="none", **extra)
    return values


def _sft(model: Path, sample: Path, out: Path, **extra: object) -> list[str]:
    settings = _settings(model, max_steps=4, max_examples=16, lr=5e-3, loss_curve=False)
    settings.update(extra)
    return ["train", "sft", "--data", str(sample), "-o", str(out), "--json", *_set_args(settings)]


def _history(out: Path) -> list[dict[str, object]]:
    state = json.loads((out / "training_state.json").read_text())
    return [entry for p in state["passes"] for entry in p["history"]]


def _max_difference(a: Path, b: Path) -> float:
    """max |w_a − w_b| over every weight of the models saved in ``a`` and ``b``."""
    from safetensors.torch import load_file

    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    return max(float((wa[k].float() - wb[k].float()).abs().max()) for k in wa)


def _our_errors(stderr: str) -> list[str]:
    """The lines lean-dojo-v2 wrote as errors (the launcher adds its own report after them)."""
    return [line for line in stderr.splitlines() if line.startswith("lean-dojo-v2: error: ")]


@pytest.fixture(scope="module")
def one_process_sft(
    tiny_model: Path, sample: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The reference: one process, batch 4, 4 steps."""
    out = tmp_path_factory.mktemp("ddp_reference") / "one"
    done = _run(
        ["-m", "lean_dojo_v2", *_sft(tiny_model, sample, out, batch_size=4)],
        out.parent,
        processes=0,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


# ---------------------------------------------------------------- bad input


@pytest.mark.slow
def test_more_processes_than_examples_is_one_line_and_nothing_is_written(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = _run(["-m", "lean_dojo_v2", *_sft(tiny_model, sample, out, max_examples=1)], tmp_path)
    assert done.returncode != 0
    lines = _our_errors(done.stderr)
    assert len(lines) == 1, done.stderr[-3000:]  # rank 0 says it; rank 1 finds the same
    assert "at most 1 examples for 2 processes" in lines[0] and "--num_processes 1" in lines[0]
    assert "Traceback" not in done.stderr.split("lean-dojo-v2: error: ")[0]
    assert not done.stdout.strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no lock file


@pytest.mark.slow
def test_more_processes_than_a_generation_batch_of_prompts_is_one_line(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    """One prompt, groups of 2, batch 2: one process takes 1 prompt per generation batch, two
    take 2 (TRL's sampler would yield no batch)."""
    out = tmp_path / "out"
    settings = dict(model_name=tiny_model, use_cpu=True, batch_size=2, num_generations=2)
    settings.update(max_prompts=1, reward_backend="replay")
    argv = ["train", "grpo", "--data", str(sample), "-o", str(out), *_set_args(settings)]
    done = _run(["-m", "lean_dojo_v2", *argv], tmp_path)
    assert done.returncode != 0
    lines = _our_errors(done.stderr)
    assert len(lines) == 1, done.stderr[-3000:]
    assert "at most 1 prompts, fewer than the 2 one generation batch takes" in lines[0]
    assert "on 2 processes" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_locked_run_directory_stops_every_process_with_one_line(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    """The main process finds the lock; the other does not wait for it forever nor try the
    lock itself: it is told, and both exit."""
    from lean_dojo_v2.data.run_lock import lock_output_dir

    out = tmp_path / "out"
    with lock_output_dir(out):
        done = _run(["-m", "lean_dojo_v2", *_sft(tiny_model, sample, out, batch_size=2)], tmp_path)
    assert done.returncode != 0
    lines = _our_errors(done.stderr)
    assert len(lines) == 1 and "is in use by another run" in lines[0], done.stderr[-3000:]
    assert not out.exists()


# ---------------------------------------------------------------- SFT


@pytest.mark.slow
def test_sft_in_two_processes_ends_with_one_process_weights_and_rank0_writes(
    tiny_model: Path, sample: Path, one_process_sft: Path, tmp_path: Path
) -> None:
    # A directory of someone else's, replaced with --force: set aside once (by rank 0), removed
    # once the run has something in its place.
    out = tmp_path / "two"
    out.mkdir()
    (out / "notes.txt").write_text("not ours")
    argv = [*_sft(tiny_model, sample, out, batch_size=2), "--force"]
    done = _run(["-m", "lean_dojo_v2", *argv], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]

    summaries = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 1  # rank 0 prints it
    assert summaries[0]["steps"] == 4 and summaries[0]["examples"] == 16
    assert json.loads((out / "summary.json").read_text())["steps"] == 4
    assert not (out / "notes.txt").exists()
    assert [
        p.name for p in tmp_path.iterdir() if p.name.startswith(".two")
    ] == []  # lock released, old contents removed

    difference = _max_difference(out, one_process_sft)
    print(f"max |w_2proc - w_1proc| = {difference:.3g} (tolerance {SFT_TOLERANCE})")
    assert difference <= SFT_TOLERANCE
    assert _max_difference(out, tiny_model) > 1e-3  # it trained
    one, two = _history(one_process_sft), _history(out)
    assert [e["step"] for e in two] == [e["step"] for e in one] == [1, 2, 3, 4]
    for a, b in zip(one, two, strict=True):
        assert abs(float(a["loss"]) - float(b["loss"])) <= 1e-5, (a, b)  # type: ignore[arg-type]


# Stops both processes right after the checkpoint of step 2 (as a lost machine would).
_STOP_AFTER_CHECKPOINT = """
import os, sys
from transformers import TrainerCallback

class StopAfterCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        import torch.distributed as dist
        if state.global_step == 2:
            dist.barrier()  # both processes have written their part (their rng state)
            os._exit(3)

from lean_dojo_v2.trainer.causal_lm_trainer import CausalLMTrainer
callbacks = CausalLMTrainer._pass_callbacks
CausalLMTrainer._pass_callbacks = lambda *a: [*callbacks(*a), StopAfterCheckpoint()]
from lean_dojo_v2.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_sft_resumes_in_two_processes_from_a_checkpoint_two_processes_wrote(
    tiny_model: Path, sample: Path, one_process_sft: Path, tmp_path: Path
) -> None:
    out = tmp_path / "stopped"
    argv = _sft(tiny_model, sample, out, batch_size=2, save_steps=2)
    child = tmp_path / "stop_after_checkpoint.py"
    child.write_text(_STOP_AFTER_CHECKPOINT)
    done = _run([str(child), *argv], tmp_path)
    assert done.returncode != 0 and not (out / "summary.json").exists(), done.stderr[-3000:]
    checkpoint = out / "checkpoints" / "pass-000" / "checkpoint-2"
    for name in ("model.safetensors", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"):
        assert (checkpoint / name).is_file(), name
    assert json.loads((out / "training_state.json").read_text())["finished"] is False

    done = _run(["-m", "lean_dojo_v2", *argv], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["resumed_from"] == str(checkpoint) and summary["steps"] == 4
    difference = _max_difference(out, one_process_sft)
    print(f"resumed in 2 processes vs 1 process straight: max |dw| = {difference:.3g}")
    assert difference <= SFT_TOLERANCE


# ---------------------------------------------------------------- GRPO

# `train grpo` with generation made a function of each prompt and its place in its group, the
# same in one process and in two: sampled tokens differ with the number of processes (TRL seeds
# each process apart), what is compared here is everything else. In each group the first
# completion is a well-formed tactic, the second one too for one prompt in three, else a markdown
# fence (the format reward's 0): the groups' mean rewards differ, so a mean over one process's
# share would differ from the mean over both.
_DETERMINISTIC_GENERATION = """
import sys
import torch
from transformers import AutoTokenizer
from transformers.generation.utils import GenerationMixin

tok = AutoTokenizer.from_pretrained(sys.argv[1])
GOOD, BAD = tok("simp [h]")["input_ids"], tok("```lean\\nsimp\\n```")["input_ids"]

def generate(self, input_ids=None, attention_mask=None, **kwargs):
    seen, rows = {}, []
    for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
        prompt = tuple(i for i, m in zip(ids, mask) if m)
        n = seen[prompt] = seen.get(prompt, -1) + 1
        good = n == 0 or sum(prompt) % 3 == 0
        rows.append((GOOD if good else BAD) + [tok.eos_token_id])
    width = max(map(len, rows))
    rows = [r + [tok.eos_token_id] * (width - len(r)) for r in rows]
    return torch.cat([input_ids, torch.tensor(rows, dtype=input_ids.dtype)], dim=1)

GenerationMixin.generate = generate
from lean_dojo_v2.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_grpo_in_two_processes_logs_one_process_loss_and_rewards_step_by_step(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    child = tmp_path / "deterministic_generation.py"
    child.write_text(_DETERMINISTIC_GENERATION)
    settings = _settings(tiny_model, num_generations=2, max_completion_length=16, max_prompts=8)
    # Plain SGD: see GRPO_SGD_LR for why Adam's weights cannot be compared across processes.
    settings.update(max_prompt_len=200, max_steps=3, lr=GRPO_SGD_LR, curves=False)
    settings.update(reward_backend="replay", reward_envs=1, trl_args={"optim": "sgd"})
    runs = {}
    for processes, batch in ((0, 4), (2, 2)):  # 2 prompts × 2 completions a step either way
        out = tmp_path / f"p{processes}"
        argv = ["train", "grpo", "--data", str(sample), "-o", str(out), "--json"]
        argv += _set_args({**settings, "batch_size": batch})
        done = _run([str(child), str(tiny_model), *argv], tmp_path, processes=processes)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[processes] = out
    one, two = _history(runs[0]), _history(runs[2])
    assert [e["step"] for e in two] == [e["step"] for e in one] == [1, 2, 3]
    for a, b in zip(one, two, strict=True):
        print(
            f"step {a['step']}: loss {a['loss']} / {b['loss']}, reward {a['reward']} / {b['reward']}"
        )
        assert abs(a["loss"] - b["loss"]) <= 1e-6  # type: ignore[operator]
        assert abs(a["reward"] - b["reward"]) <= 1e-6  # type: ignore[operator]
        assert a["rewards"] == pytest.approx(b["rewards"], abs=1e-6)
    assert len({e["reward"] for e in one}) > 1  # the steps' groups differ: the check can fail
    # Each process checks its share: the counts of the pass are summed over both.
    checks = [json.loads((runs[p] / "summary.json").read_text())["passes"][0] for p in (0, 2)]
    print("reward checks, 1 / 2 processes:", [c["reward_checks"] for c in checks])
    scored = [c["reward_checks"]["checks"] + c["reward_checks"]["cache_hits"] for c in checks]
    assert scored[0] == scored[1] == 3 * 4  # 3 steps of 4 completions
    assert any(e["loss"] != 0 for e in one)  # advantages were not all zero
    difference = _max_difference(runs[2], runs[0])
    print(f"GRPO weights after 3 steps: max |w_2proc - w_1proc| = {difference:.3g}")
    moved = _max_difference(runs[0], tiny_model)
    print(f"GRPO weights moved by max |w_1proc - w_0| = {moved:.3g}")
    assert difference <= GRPO_WEIGHT_TOLERANCE and moved > 20 * GRPO_WEIGHT_TOLERANCE


def _without_main(script: str) -> str:
    """``script`` up to its ``from lean_dojo_v2.cli import main`` line (the code it patches in)."""
    return script.split("from lean_dojo_v2.cli import main")[0]


# Deterministic generation (as above) and a stop right after the checkpoint of step 2.
_GRPO_STOP_AFTER_CHECKPOINT = (
    _without_main(_DETERMINISTIC_GENERATION)
    + _without_main(_STOP_AFTER_CHECKPOINT).replace("import os, sys", "import os")
    + "from lean_dojo_v2.cli import main\nsys.exit(main(sys.argv[2:]))\n"
)


@pytest.mark.slow
def test_grpo_resumes_in_two_processes_to_the_uninterrupted_run(
    tiny_model: Path, sample: Path, tmp_path: Path
) -> None:
    """Two processes stopped after the checkpoint of step 2 (both wrote their rng state), then
    resumed in two processes: steps 3 and 4 log the loss and rewards of an uninterrupted
    two-process run, and the weights end where that run's end."""
    straight_child = tmp_path / "deterministic_generation.py"
    straight_child.write_text(_DETERMINISTIC_GENERATION)
    stop_child = tmp_path / "stop_after_checkpoint.py"
    stop_child.write_text(_GRPO_STOP_AFTER_CHECKPOINT)
    settings = _settings(tiny_model, num_generations=2, max_completion_length=16, max_prompts=8)
    settings.update(max_prompt_len=200, max_steps=4, lr=1e-2, curves=False, batch_size=2)
    settings.update(reward_backend="replay", reward_envs=1, save_steps=2)

    def argv(out: Path) -> list[str]:
        head = ["train", "grpo", "--data", str(sample), "-o", str(out), "--json"]
        return [str(tiny_model), *head, *_set_args(settings)]

    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    done = _run([str(straight_child), *argv(straight)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]

    done = _run([str(stop_child), *argv(stopped)], tmp_path)
    assert done.returncode != 0 and not (stopped / "summary.json").exists(), done.stderr[-3000:]
    checkpoint = stopped / "checkpoints" / "pass-000" / "checkpoint-2"
    for name in ("model.safetensors", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"):
        assert (checkpoint / name).is_file(), name

    done = _run([str(straight_child), *argv(stopped)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["resumed_from"] == str(checkpoint) and summary["steps"] == 4

    expected = {e["step"]: e for e in _history(straight)}
    resumed = {e["step"]: e for e in _history(stopped)}
    assert {3, 4} <= resumed.keys()
    for step in (3, 4):
        a, b = expected[step], resumed[step]
        print(f"step {step}: loss {a['loss']} / {b['loss']}, reward {a['reward']} / {b['reward']}")
        assert abs(a["loss"] - b["loss"]) <= 1e-6  # type: ignore[operator]
        assert abs(a["reward"] - b["reward"]) <= 1e-6  # type: ignore[operator]
    difference = _max_difference(stopped, straight)
    print(f"GRPO resumed in 2 processes vs straight: max |dw| = {difference:.3g}")
    assert difference <= 1e-5 and _max_difference(straight, tiny_model) > 1e-3
