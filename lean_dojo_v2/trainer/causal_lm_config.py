"""The config fields both trainers of causal LMs on TRL share, declared, documented and checked
once (no torch here): :class:`~lean_dojo_v2.trainer.sft_config.SFTConfig` and
:class:`~lean_dojo_v2.trainer.grpo_config.GRPOConfig` extend :class:`CausalLMConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..config.loading import (
    check_finite_floats,
    config_field,
    require,
    require_at_least,
    require_device,
    require_one_of,
    require_positive,
)
from .trl_args import SEED_MAX, check_trl_arg_values

REPORT_TO_CHOICES = ("tensorboard", "wandb", "none")
STRATEGIES = ("random", "novel_premises")
SPLITS = ("train", "val", "test")


@dataclass
class CausalLMConfig:
    r"""What every run of a causal LM on TRL is configured by: the model and its LoRA adapter, the
    dataset's splits, the optimisation, checkpoints, logging and scale-out. Not a config of its
    own: ``SFTConfig`` and ``GRPOConfig`` extend it, and ``--help-config`` lists these fields
    with theirs.

    Parameters:
        > Parameters that control the model

        model_name (`str` or `None`, *optional*, defaults to `None`):
            What to train: a Hugging Face model id (offline: only one already in the local cache),
            a local model directory, a `.gguf` file, `smollm2`, or a folder an `SFTTrainer` run
            wrote (a LoRA adapter is trained on with `lora`, merged into its base without).
            `None` is the bundled default (SmolLM2-135M-Instruct), which trains on a CPU in
            minutes.
        dtype (`str`, *optional*, defaults to `"auto"`):
            Training precision: `auto` (bf16 on a CUDA device that supports it, fp32 on the CPU),
            `float32`, `bfloat16` or `float16`. Full training in bf16/fp16 keeps float32 weights
            and trains under autocast (updates at small learning rates would be rounded away in
            bf16 weights); LoRA keeps the frozen base in this dtype and trains a float32 adapter.
        device (`str`, *optional*, defaults to `"auto"`):
            `auto` (CUDA when there is one), `cpu` or `cuda`. Under `accelerate launch` each process
            takes the device accelerate gives it.
        lora (`bool`, *optional*, defaults to `False`):
            Train a LoRA adapter (PEFT) instead of every weight. Only the adapter is saved (a few MB);
            see `merge_lora` for a full model too.
        lora_r (`int`, *optional*, defaults to `16`):
            Rank of the LoRA update matrices.
        lora_alpha (`int`, *optional*, defaults to `32`):
            LoRA scaling numerator (the update is scaled by `lora_alpha / lora_r`).
        lora_dropout (`float`, *optional*, defaults to `0.05`):
            Dropout probability on the LoRA branch's input.
        lora_target_modules (`list[str]`, *optional*, defaults to `["all-linear"]`):
            Module names the adapter wraps; `all-linear` wraps every linear layer but the output head.
        merge_lora (`bool`, *optional*, defaults to `False`):
            With `lora`, also write the base model with the adapter merged in, under
            `output_dir/merged` (loads without PEFT, e.g. for serving).

        > Parameters that control the data

        strategy (`str`, *optional*, defaults to `"random"`):
            Which split strategy of a LeanDojo dataset to read: `random` or `novel_premises`.
        splits (`list[str]`, *optional*, defaults to `["train"]`):
            Which splits to train on (`train`, `val`, `test`). The default leaves val/test for
            evaluation.

        > Parameters that control the training

        epochs_per_repo (`float`, *optional*, defaults to `1.0`):
            Epochs of each pass over its examples (GRPO: its prompts): one pass per repository of
            the curriculum (on everything seen so far), or one pass on a dataset directory.
        batch_size (`int`, *optional*, defaults to `1`):
            Examples per device per optimizer micro-step.
        gradient_accumulation_steps (`int`, *optional*, defaults to `1`):
            Micro-steps per optimizer step; the effective batch is `batch_size` ×
            `gradient_accumulation_steps` × number of processes.
        lr (`float`, *optional*, defaults to `2e-5`):
            Peak learning rate of AdamW. LoRA usually wants more (SFT: 1e-4 to 2e-4; RL: 1e-5 to
            1e-4).
        lr_scheduler_type (`str`, *optional*, defaults to `"linear"`):
            Learning-rate schedule after warm-up: any of transformers' (`linear`, `cosine`,
            `constant`, `constant_with_warmup`, ...).
        warmup_steps (`int`, *optional*, defaults to `0`):
            Optimizer steps of linear warm-up from 0 to `lr`.
        weight_decay (`float`, *optional*, defaults to `0.0`):
            AdamW weight decay (decoupled L2 penalty on the weights); 0 or more.
        max_grad_norm (`float`, *optional*, defaults to `1.0`):
            Gradients are clipped to this global L2 norm before each optimizer step; 0 turns
            clipping off (a negative value is refused).
        max_steps (`int`, *optional*, defaults to `-1`):
            Stop each pass after this many optimizer steps (smoke runs); `-1`: run the epochs.
        gradient_checkpointing (`bool`, *optional*, defaults to `False`):
            Recompute activations in the backward pass: less memory, about 30-50 % slower. Turn it
            on for 7B models on a GPU; leave it off on a CPU.
        bf16 (`bool` or `None`, *optional*, defaults to `None`):
            bf16 autocast (mixed precision; the trained weights stay float32). `None`: on where the
            device supports it (recent CUDA GPUs) or `dtype` is `bfloat16`, else off.
        use_cpu (`bool`, *optional*, defaults to `False`):
            Train on the CPU even when a GPU is there.
        seed (`int`, *optional*, defaults to `42`):
            Seed of data order, sampling, dropout and initialisation (0 to 2**32 - 1); a resumed
            run reproduces the same steps.

        > Parameters that control checkpoints and outputs

        output_dir (`str`, *optional*, defaults to `"outputs"`):
            Where the trained model (or adapter), checkpoints, logs and curves go. It must be new,
            empty or written by lean-dojo-v2 (see `overwrite_output_dir`).
        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            Replace `output_dir` even if it holds files lean-dojo-v2 did not write, or an unfinished
            run of another config (the CLI's `--force`). Its contents are deleted.
        resume (`bool`, *optional*, defaults to `True`):
            When `output_dir` holds an unfinished run of the same config and data, go on from its
            last checkpoint. `False`: start afresh.
        save_steps (`int`, *optional*, defaults to `200`):
            Write a checkpoint (weights, optimizer, scheduler, RNG states) every this many optimizer
            steps, and at the end of each pass.
        save_total_limit (`int` or `None`, *optional*, defaults to `2`):
            Keep at most this many checkpoints per pass (the oldest are deleted). `None`: keep all.

        > Parameters that control logging

        logging_steps (`int`, *optional*, defaults to `1`):
            Log the loss (GRPO: also reward and KL) every this many optimizer steps (TensorBoard,
            the curves, `--json`).
        report_to (`list[str]`, *optional*, defaults to `["tensorboard"]`):
            Loggers: `tensorboard` (offline, under `output_dir/logs`), `wandb` (needs the `wandb`
            package and a login or `WANDB_MODE=offline`), or `none`.
        run_name (`str` or `None`, *optional*, defaults to `None`):
            Name of the run in the loggers. `None`: the output directory's name.
        progress_bar (`bool`, *optional*, defaults to `True`):
            Show a progress bar while training; `False` trains quietly (the losses still go to
            the loggers, the curves and the summary).

        > Parameters that control scale-out

        deepspeed (`str` or `None`, *optional*, defaults to `None`):
            Path to a DeepSpeed JSON config (ZeRO stage, offload, ...), checked, then handed to
            transformers. Launch under `accelerate launch`, `torchrun` or `deepspeed
            --no_local_rank` (docs/scaling.md).
        trl_args (`dict[str, Any]`, *optional*, defaults to `{}`):
            Further keyword arguments of TRL's config (`trl.SFTConfig` or `trl.GRPOConfig`, both
            `transformers.TrainingArguments`): e.g. `{optim: adamw_torch_fused, fsdp: "full_shard"}`,
            or GRPO's `{steps_per_generation: 4, vllm_gpu_memory_utilization: 0.3}`. They override
            the values derived from the fields here. An unknown name is an error
            listing the valid ones; keys that would write outside `output_dir` (`output_dir`,
            `logging_dir`, `hub_*`, `push_to_hub`, `report_to`, ...) are refused, naming the field
            to use instead.
    """

    # model
    model_name: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = config_field(default_factory=lambda: ["all-linear"])
    merge_lora: bool = config_field(False, fingerprint=False)
    # data
    strategy: Literal["random", "novel_premises"] = "random"
    splits: list[str] = config_field(default_factory=lambda: ["train"])
    # training
    epochs_per_repo: float = 1.0
    batch_size: int = 1
    gradient_accumulation_steps: int = 1
    lr: float = 2e-5
    lr_scheduler_type: str = "linear"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_steps: int = -1
    gradient_checkpointing: bool = False
    bf16: bool | None = None
    use_cpu: bool = False
    seed: int = 42
    # outputs: where and how often, not what is trained (a run resumes across other values)
    output_dir: str = config_field("outputs", fingerprint=False)
    overwrite_output_dir: bool = config_field(False, fingerprint=False)
    resume: bool = config_field(True, fingerprint=False)
    save_steps: int = config_field(200, fingerprint=False)
    save_total_limit: int | None = config_field(2, fingerprint=False)
    # logging
    logging_steps: int = config_field(1, fingerprint=False)
    report_to: list[str] = config_field(default_factory=lambda: ["tensorboard"], fingerprint=False)
    run_name: str | None = config_field(None, fingerprint=False)
    progress_bar: bool = config_field(True, fingerprint=False)
    # scale-out
    deepspeed: str | None = None
    trl_args: dict[str, Any] = config_field(default_factory=dict)

    def __post_init__(self) -> None:
        # inf passes every range check (lr > 0) and trains NaN weights.
        check_finite_floats(self)
        require_at_least(self, 1, "batch_size", "gradient_accumulation_steps", "save_steps")
        require_at_least(self, 1, "logging_steps", "lora_r")
        require_at_least(self, 1, "save_total_limit", or_none=True)
        require_at_least(self, 0, "weight_decay", "warmup_steps")
        require_positive(self, "lr", "epochs_per_repo")
        # 0 turns clipping off in transformers; a negative value would do so silently.
        require(self, self.max_grad_norm >= 0, "max_grad_norm", "0 (no clipping) or more")
        require(self, self.max_steps == -1 or self.max_steps >= 1, "max_steps", "-1 or at least 1")
        require(self, 0 <= self.seed <= SEED_MAX, "seed", f"a whole number from 0 to {SEED_MAX}")
        require(self, 0 <= self.lora_dropout < 1, "lora_dropout", "in [0, 1)")
        require_one_of(self, "strategy", STRATEGIES)
        splits_ok = bool(self.splits) and all(s in SPLITS for s in self.splits)
        require(self, splits_ok, "splits", f"a non-empty list of {', '.join(SPLITS)}")
        reporters_ok = all(r in REPORT_TO_CHOICES for r in self.report_to)
        require(self, reporters_ok, "report_to", f"a list of {', '.join(REPORT_TO_CHOICES)}")
        require_device(self)
        require(self, bool(self.output_dir), "output_dir", "a directory path")
        targets_ok = bool(self.lora_target_modules)
        require(self, targets_ok, "lora_target_modules", "a non-empty list")
        check_trl_arg_values(self.trl_args)

    @property
    def reporters(self) -> list[str]:
        """``report_to`` without ``none``."""
        return [r for r in self.report_to if r != "none"]


__all__ = ["REPORT_TO_CHOICES", "SPLITS", "STRATEGIES", "CausalLMConfig"]
