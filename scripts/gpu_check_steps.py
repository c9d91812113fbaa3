"""One step of the GPU check (``scripts/gpu_check.py`` runs each in a process of its own):

    python scripts/gpu_check_steps.py STEP --work DIR --result FILE [--cpu-smoke]

writes ``{"status": "pass" | "fail" | "skip", "figures": {...}, "reason": "..."}`` to FILE. A
step returns its figures (pass), raises :class:`StepSkipped` (it cannot run here: no CUDA, one
GPU) or :class:`StepFailed` (it ran, but a figure is outside what the check accepts); any other
exception is a failure with its type and message.

Models: random weights with the shapes of SmolLM2-135M and of DeepSeek-Prover-V2-7B (Llama
architecture, their vocabulary sizes), and the tests' tiny tokenizer (``tests/tiny_models.py``;
token ids it lacks decode to nothing, which costs a decode nothing). With ``--cpu-smoke`` every
step runs on the CPU with the tests' tiny model instead, so a test can run the check's code
without a GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests", ROOT / "benchmarks"):  # tiny_models, generation_bench
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

if TYPE_CHECKING:
    from lean_dojo_v2.models.loading import LoadedModel

# Llama shapes of the two models users train and prove with; random weights. tie_word_embeddings
# off: tied, a random model echoes its last input token (tests/tiny_models.py).
SIZES: dict[str, dict[str, Any]] = {
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        rope_theta=100000.0,
        max_position_embeddings=8192,
    ),
    "deepseek-prover-v2-7b": dict(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=30,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=102400,
        rope_theta=10000.0,
        max_position_embeddings=4096,
    ),
}
# Upstream LeanDojo-v2's learning rate for full fine-tuning: at 2e-5 most Adam steps are smaller
# than half a bf16 rounding step of the weights, so weights held in bf16 would lose them.
UPSTREAM_LR = 2e-5
KEEPS_UPDATES = 0.9  # bf16 must change at least this fraction of what float32 changes
# The GRPO steps' common settings: a LoRA adapter, rewards replayed from the bundled sample.
GRPO_LORA: dict[str, Any] = dict(
    lora_config=True,
    max_prompt_len=200,
    lr=1e-4,
    progress_bar=False,
    curves=False,
    report_to=["none"],
    reward_backend="replay",
    reward_envs=1,
)


class StepSkipped(Exception):
    """The step cannot run on this machine; the message says why."""


class StepFailed(Exception):
    """The step ran, but a figure is outside what the check accepts."""

    def __init__(self, reason: str, figures: dict[str, Any]) -> None:
        super().__init__(reason)
        self.figures = figures


@dataclass
class Context:
    work: Path
    cpu_smoke: bool

    @property
    def device(self) -> str:
        return "cpu" if self.cpu_smoke else "cuda"

    def gpus(self) -> int:
        if self.cpu_smoke:
            return 0
        import torch

        return torch.cuda.device_count()

    def require_cuda(self) -> None:
        if self.cpu_smoke:
            return
        import torch

        if not torch.cuda.is_available():
            raise StepSkipped("no CUDA device")

    def saved_model(self, size: str) -> Path:
        """A random model of ``size`` saved as an HF folder under the work directory (once, for
        every step that trains from a folder); the tests' tiny model with ``--cpu-smoke``."""
        dst = self.work / ("tiny" if self.cpu_smoke else size)
        if (dst / "config.json").is_file():
            return dst
        if self.cpu_smoke:
            from tiny_models import build_tiny_causal

            return build_tiny_causal(dst)
        loaded = random_model(size, "cpu", "float32")
        loaded.model.save_pretrained(dst)
        loaded.tokenizer.save_pretrained(dst)
        return dst


def random_model(size: str, device: str, dtype: str) -> LoadedModel:
    """A Llama of ``size`` (:data:`SIZES`) with random weights, built on ``device`` in
    ``dtype`` (a 7B model is never built on the host first), and the tests' tokenizer."""
    import torch
    from tiny_models import tiny_tokenizer
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig

    from lean_dojo_v2.models.loading import LoadedModel

    tok = tiny_tokenizer()
    ids = dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id)
    config = LlamaConfig(**SIZES[size], **ids, eos_token_id=tok.eos_token_id)
    config.tie_word_embeddings = False
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.generation_config = GenerationConfig(**ids, eos_token_id=tok.eos_token_id)
    return LoadedModel(model.eval(), tok, "causal", device, f"random weights, {size}")


def _peak_gib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


# ------------------------------------------------------------------------------- steps


def gpu_tests(ctx: Context) -> dict[str, Any]:
    """``pytest -m gpu``: its counts. Fails when a test fails or none passed."""
    if ctx.cpu_smoke:
        raise StepSkipped("--cpu-smoke: the gpu tests skip without CUDA")
    ctx.require_cuda()
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    last = (done.stdout.strip().splitlines() or [""])[-1]
    counts = {k: 0 for k in ("passed", "failed", "skipped", "errors", "error", "deselected")}
    for part in last.strip("= ").split(","):
        words = part.split()
        if len(words) >= 2 and words[0].isdigit() and words[1] in counts:
            counts[words[1]] = int(words[0])
    figures = {
        "passed": counts["passed"],
        "failed": counts["failed"],
        "skipped": counts["skipped"],
        "errors": counts["errors"] + counts["error"],
        "summary": last,
        "exit_status": done.returncode,
    }
    if done.returncode != 0 or figures["passed"] == 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
        raise StepFailed(f"pytest -m gpu: {last}", figures)
    return figures


def sft_bf16_full(ctx: Context) -> dict[str, Any]:
    """Full SFT from the same random SmolLM2-size model, a few steps at upstream's learning
    rate, in bf16 (``dtype: auto`` on a GPU) and in float32: the fraction of the weights each
    changed. bf16 passes when it changes at least :data:`KEEPS_UPDATES` of float32's."""
    ctx.require_cuda()
    model = ctx.saved_model("smollm2-135m")
    runs = {}
    for label, dtype, bf16 in (("bf16", "auto", None), ("fp32", "float32", False)):
        runs[label] = _sft_changed_fraction(ctx, model, ctx.work / f"sft-{label}", dtype, bf16)
    ratio = runs["bf16"]["changed_fraction"] / max(runs["fp32"]["changed_fraction"], 1e-12)
    figures = {"model": model.name, **runs, "bf16_over_fp32": round(ratio, 3)}
    figures["lr"] = UPSTREAM_LR
    if not ratio >= KEEPS_UPDATES:
        raise StepFailed(f"bf16 changed {ratio:.2f}x the weights float32 did", figures)
    return figures


def _sft_changed_fraction(
    ctx: Context, model: Path, out: Path, dtype: str, bf16: bool | None
) -> dict[str, Any]:
    import torch
    from transformers import TrainerCallback

    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    seen: dict[str, Any] = {}

    class Watch(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            params = kw["model"].named_parameters()
            seen["before"] = {n: p.detach().float().clone() for n, p in params}
            seen["dtype"] = str(next(kw["model"].parameters()).dtype).replace("torch.", "")

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            changed = total = 0
            for name, p in kw["model"].named_parameters():
                changed += int((p.detach().float() != seen["before"][name]).sum())
                total += p.numel()
            seen["fraction"] = changed / total

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    result = SFTTrainer(
        str(model),
        output_dir=out,
        device=ctx.device,
        dtype=dtype,
        bf16=bf16,
        batch_size=2,
        lr=UPSTREAM_LR,
        max_steps=5,
        max_examples=16,
        seed=0,
        progress_bar=False,
        loss_curve=False,
        report_to=["none"],
        callbacks=[Watch()],
    ).train(data_path=sample_dataset_path())
    return {
        "changed_fraction": round(seen["fraction"], 4),
        "weights_dtype": seen["dtype"],
        "steps": result.steps,
        "first_loss": result.first_loss,
        "last_loss": result.last_loss,
        "seconds": result.seconds,
        "peak_gib": _peak_gib(),
    }


def grpo_lora_bf16(ctx: Context) -> dict[str, Any]:
    """One GRPO step with a LoRA adapter on the bf16 SmolLM2-size model, rewards replayed from
    the bundled sample. Passes when the step ran, its adapter is saved and trains in float32
    while the frozen base stays in bf16."""
    ctx.require_cuda()
    import torch

    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    model, out = ctx.saved_model("smollm2-135m"), ctx.work / "grpo"
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer = GRPOTrainer(
        str(model),
        output_dir=out,
        device=ctx.device,
        dtype="float32" if ctx.cpu_smoke else "bfloat16",
        batch_size=4,
        num_generations=2,
        max_completion_length=16,
        max_prompts=4,
        max_steps=1,
        **GRPO_LORA,
    )
    result = trainer.train(data_path=sample_dataset_path())
    dtypes: dict[str, set[str]] = {"trainable": set(), "frozen": set()}
    assert trainer.model is not None
    for p in trainer.model.parameters():
        kind = "trainable" if p.requires_grad else "frozen"
        dtypes[kind].add(str(p.dtype).replace("torch.", ""))
    figures = {
        "model": model.name,
        "steps": result.steps,
        "mean_reward": result.mean_reward_first,
        "reward_backend": result.reward_backend,
        "adapter_saved": (out / "adapter_model.safetensors").is_file(),
        "trainable_dtypes": sorted(dtypes["trainable"]),
        "frozen_dtypes": sorted(dtypes["frozen"]),
        "seconds": result.seconds,
        "peak_gib": _peak_gib(),
    }
    frozen = {"float32"} if ctx.cpu_smoke else {"bfloat16"}
    good = result.steps == 1 and figures["adapter_saved"]
    good = good and dtypes["trainable"] == {"float32"} and dtypes["frozen"] == frozen
    if not good:
        raise StepFailed("the GRPO step did not train and save a float32 adapter", figures)
    return figures


def grpo_vllm(ctx: Context) -> dict[str, Any]:
    """Two GRPO steps with LoRA on the bf16 SmolLM2-size model, generating with vLLM inside the
    training process (``use_vllm: true``, ``vllm_mode: colocate``, TRL's integration), and the
    same two steps generating with transformers: each run's seconds (vLLM starts when TRL's
    trainer is built), and the second step's seconds and rollouts (completions) per second (the
    first warms up: the first copy of the weights into vLLM, first kernels)."""
    if importlib.util.find_spec("vllm") is None:
        raise StepSkipped("the vllm package is not installed (scripts/gpu_wheels.py --with-vllm)")
    if ctx.cpu_smoke:
        raise StepSkipped("--cpu-smoke: vLLM generates on CUDA only")
    ctx.require_cuda()
    # Saved in bf16: TRL starts vLLM from the folder, and vLLM keeps the dtype its config names.
    model = ctx.work / "smollm2-135m-bf16"
    if not (model / "config.json").is_file():
        loaded = random_model("smollm2-135m", "cpu", "bfloat16")
        loaded.model.save_pretrained(str(model))
        loaded.tokenizer.save_pretrained(str(model))
    runs = {label: _grpo_two_steps(ctx, model, label) for label in ("transformers", "vllm")}
    figures: dict[str, Any] = {"model": "smollm2-135m (random weights, bf16)", **runs}
    figures["vllm_over_transformers"] = round(
        runs["vllm"]["rollouts_per_s"] / max(runs["transformers"]["rollouts_per_s"], 1e-9), 2
    )
    if any(r["steps"] != 2 for r in runs.values()):
        raise StepFailed("a GRPO run did not train its two steps", figures)
    return figures


def _grpo_two_steps(ctx: Context, model: Path, label: str) -> dict[str, Any]:
    import torch
    from transformers import TrainerCallback

    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    step_s: list[float] = []

    class StepClock(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step_s.append(-time.monotonic())

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step_s[-1] += time.monotonic()

    vllm: dict[str, Any] = dict(use_vllm=True, vllm_mode="colocate")
    # The tests' tokenizer has 500 of the model's 49,152 ids: vLLM must not detokenize (TRL
    # reads the token ids); colocated, vLLM takes this share of the GPU beside training.
    trl_args = dict(vllm_gpu_memory_utilization=0.3, generation_kwargs={"detokenize": False})
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    batch = 16  # completions per step: 4 prompts x 4 generations
    result = GRPOTrainer(
        str(model),
        output_dir=ctx.work / f"grpo-{label}",
        device=ctx.device,
        dtype="bfloat16",
        batch_size=batch,
        num_generations=4,
        max_completion_length=64,
        max_prompts=16,
        max_steps=2,
        callbacks=[StepClock()],
        **GRPO_LORA,
        **(dict(vllm, trl_args=trl_args) if label == "vllm" else {}),
    ).train(data_path=sample_dataset_path())
    last = step_s[-1] if step_s else float("nan")
    return {
        "steps": result.steps,
        "seconds": result.seconds,
        "step_seconds": [round(s, 3) for s in step_s],
        "rollouts_per_step": batch,
        "rollouts_per_s": round(batch / last, 2) if last > 0 else 0.0,
        "mean_reward": result.mean_reward_first,
        "peak_gib": _peak_gib(),
    }


def decode_smollm2(ctx: Context) -> dict[str, Any]:
    return _decode(ctx, "smollm2-135m", states=16, samples=8, max_new_tokens=32)


def decode_7b(ctx: Context) -> dict[str, Any]:
    return _decode(ctx, "deepseek-prover-v2-7b", states=16, samples=8, max_new_tokens=32)


def _decode(
    ctx: Context, size: str, *, states: int, samples: int, max_new_tokens: int
) -> dict[str, Any]:
    """Our batched sampling (``HFTacticGenerator``, all states in one call) against
    transformers' batched ``generate`` of the same left-padded prompts, samples and token
    budget, timed after a warm-up of each (``benchmarks/generation_bench.py``'s two timers).
    Random weights rarely stop early, so both decode about the whole budget."""
    ctx.require_cuda()
    import torch
    from generation_bench import real_states, run, run_hf

    from lean_dojo_v2.models.generator import HFTacticGenerator

    if ctx.cpu_smoke:
        from lean_dojo_v2.models import load_model

        loaded = load_model(str(ctx.saved_model(size)), device="cpu", dtype="float32")
        states, samples, max_new_tokens = 4, 2, 8
    else:
        torch.cuda.reset_peak_memory_stats()
        loaded = random_model(size, "cuda", "bfloat16")
    goals = real_states(states)
    gen = HFTacticGenerator(loaded, strategy="sample", max_new_tokens=max_new_tokens, seed=0)
    gen.generate(goals[:1], 2)  # warm-up: first-call allocations, kernels
    run_hf(gen, goals[:1], 2, 4, 0)
    ours = run(gen, goals, samples, batch_size=len(goals))
    theirs = run_hf(gen, goals, samples, max_new_tokens, 0)
    params = sum(p.numel() for p in loaded.model.parameters())
    figures = {
        "model": loaded.source,
        "parameters": params,
        "dtype": str(next(loaded.model.parameters()).dtype).replace("torch.", ""),
        "states": len(goals),
        "samples_per_state": samples,
        "max_new_tokens": max_new_tokens,
        "batched": ours,
        "transformers_generate": theirs,
        "ratio_tokens_per_s": round(ours["tokens_per_s"] / theirs["tokens_per_s"], 2),
        "ratio_states_per_s": round(ours["states_per_s"] / theirs["states_per_s"], 2),
        "peak_gib": _peak_gib(),
    }
    finite = all(math.isfinite(v) and v > 0 for v in (ours["tokens_per_s"], theirs["tokens_per_s"]))
    if not finite:
        raise StepFailed("a decoder produced no tokens", figures)
    return figures


def deepspeed_zero2(ctx: Context) -> dict[str, Any]:
    """``train sft`` with ``configs/deepspeed/zero2.json`` under torchrun, one process per GPU
    (one on the CPU with ``--cpu-smoke``), three steps."""
    ctx.require_cuda()
    if importlib.util.find_spec("deepspeed") is None:
        raise StepSkipped("the deepspeed package is not installed (the deepspeed extra)")
    deepspeed = str(ROOT / "configs" / "deepspeed" / "zero2.json")
    return _torchrun_sft(ctx, "deepspeed", max(1, ctx.gpus()), deepspeed=deepspeed)


def ddp(ctx: Context) -> dict[str, Any]:
    """``train sft`` under torchrun over every GPU (data parallel), three steps."""
    ctx.require_cuda()
    gpus = ctx.gpus()
    if gpus < 2:
        raise StepSkipped(f"{gpus} GPU{'s' if gpus != 1 else ''}: DDP needs two or more")
    return _torchrun_sft(ctx, "ddp", gpus)


def _torchrun_sft(ctx: Context, label: str, processes: int, **settings: object) -> dict[str, Any]:
    from lean_dojo_v2.data import sample_dataset_path

    model, out = ctx.saved_model("smollm2-135m"), ctx.work / label
    values: dict[str, object] = dict(
        model_name=str(model),
        max_steps=3,
        batch_size=2,
        max_examples=32,
        lr=UPSTREAM_LR,
        progress_bar=False,
        loss_curve=False,
        report_to="none",
        use_cpu=ctx.cpu_smoke,
        **settings,
    )
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes)]
    cmd += ["--master_port", str(_free_port()), "-m", "lean_dojo_v2", "train", "sft"]
    cmd += ["--data", str(sample_dataset_path()), "-o", str(out)]
    for key, value in values.items():
        cmd += ["--set", f"{key}={value}"]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = round(time.monotonic() - started, 1)
    try:
        summary = json.loads((out / "summary.json").read_text("utf-8"))
    except (OSError, ValueError):
        summary = {}
    figures = {
        "model": model.name,
        "processes": processes,
        "steps": summary.get("steps"),
        "first_loss": summary.get("first_loss"),
        "last_loss": summary.get("last_loss"),
        "seconds": seconds,
        "exit_status": done.returncode,
        "model_saved": (out / "model.safetensors").is_file(),
        "saved_dtypes": _saved_dtypes(out / "model.safetensors"),
    }
    if done.returncode != 0 or summary.get("steps") != 3 or not figures["model_saved"]:
        print(done.stdout[-3000:], done.stderr[-6000:], sep="\n")
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise StepFailed(f"torchrun train sft ({label}) did not finish 3 steps: {last}", figures)
    return figures


def _saved_dtypes(path: Path) -> list[str]:
    """The dtypes of the weights in a saved ``model.safetensors`` (DeepSpeed's bf16 mode saves
    its bf16 copy, not its float32 master weights)."""
    if not path.is_file():
        return []
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        return sorted({str(f.get_slice(k).get_dtype()) for k in f.keys()})


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


STEP_FUNCTIONS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "gpu_tests": gpu_tests,
    "sft_bf16_full": sft_bf16_full,
    "grpo_lora_bf16": grpo_lora_bf16,
    "grpo_vllm": grpo_vllm,
    "decode_smollm2": decode_smollm2,
    "decode_7b": decode_7b,
    "deepspeed_zero2": deepspeed_zero2,
    "ddp": ddp,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=sorted(STEP_FUNCTIONS))
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--cpu-smoke", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    ctx = Context(args.work, args.cpu_smoke)
    outcome: dict[str, Any]
    try:
        outcome = {"status": "pass", "figures": STEP_FUNCTIONS[args.step](ctx)}
    except StepSkipped as exc:
        outcome = {"status": "skip", "reason": str(exc)}
    except StepFailed as exc:
        outcome = {"status": "fail", "reason": str(exc), "figures": exc.figures}
    except Exception as exc:  # a failing step is a record: the check goes on with the next
        import traceback

        traceback.print_exc()
        text = " ".join(str(exc).split())[:500]
        outcome = {"status": "fail", "reason": f"{type(exc).__name__}: {text}"}
    args.result.write_text(json.dumps(outcome, default=str), "utf-8")
    return 0 if outcome["status"] != "fail" else 1


if __name__ == "__main__":
    sys.exit(main())
