"""The config of :class:`~lean_dojo_v2.trainer.sft_trainer.SFTTrainer` (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass

from .causal_lm import REPORT_TO_CHOICES, SPLITS, STRATEGIES, need
from .causal_lm_config import CausalLMConfig

__all__ = ["REPORT_TO_CHOICES", "SPLITS", "STRATEGIES", "SFTConfig"]


@dataclass
class SFTConfig(CausalLMConfig):
    r"""Configuration of :class:`~lean_dojo_v2.trainer.sft_trainer.SFTTrainer`: supervised
    fine-tuning of a causal LM on (goal state → next tactic) pairs from traced proofs.

    Load it from YAML with ``load_config(SFTConfig, "configs/sft_smollm2_cpu.yaml", ["lr=1e-4"])``
    or on the command line with ``lean-dojo-v2 train sft --config FILE --set lr=1e-4``. Anything of
    TRL's or transformers' training arguments not listed here goes in ``trl_args``.

    Parameters:
        > Parameters that control the model

        model_name (`str` or `None`, *optional*, defaults to `None`):
            What to fine-tune: a Hugging Face model id (offline: only one already in the local cache),
            a local model directory, a `.gguf` file, or `smollm2`. `None` is the bundled default
            (SmolLM2-135M-Instruct), which trains on a CPU in minutes.
        dtype (`str`, *optional*, defaults to `"auto"`):
            Training precision: `auto` (bf16 on a CUDA device that supports it, fp32 on the CPU),
            `float32`, `bfloat16` or `float16`. Full fine-tuning in bf16/fp16 keeps float32 weights
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
        use_premises (`bool`, *optional*, defaults to `False`):
            Put the premises each tactic uses into its prompt (for a model that is later given
            retrieved premises at inference).
        max_seq_len (`int`, *optional*, defaults to `1024`):
            Longest example (prompt + tactic) in tokens. Longer ones are left out, never cut: a cut
            prompt would not be what the model sees at inference, and a cut tactic is no tactic.
        max_examples (`int` or `None`, *optional*, defaults to `None`):
            Use only the first this many examples (smoke runs and benchmarks). `None`: all.

        > Parameters that control the training

        epochs_per_repo (`float`, *optional*, defaults to `1.0`):
            Epochs of each pass: one pass per repository of the curriculum (on everything seen so
            far), or one pass on a dataset directory.
        batch_size (`int`, *optional*, defaults to `1`):
            Examples per device per optimizer micro-step.
        gradient_accumulation_steps (`int`, *optional*, defaults to `1`):
            Micro-steps per optimizer step; the effective batch is `batch_size` ×
            `gradient_accumulation_steps` × number of processes.
        lr (`float`, *optional*, defaults to `2e-5`):
            Peak learning rate of AdamW. LoRA usually wants more (1e-4 to 2e-4).
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
            Seed of data order, dropout and initialisation (0 to 2**32 - 1); a resumed run
            reproduces the same steps.

        > Parameters that control checkpoints and outputs

        output_dir (`str`, *optional*, defaults to `"outputs"`):
            Where the trained model (or adapter), checkpoints, logs and the loss curve go. It must be
            new, empty or written by lean-dojo-v2 (see `overwrite_output_dir`).
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
            Log the loss every this many optimizer steps (TensorBoard, the loss curve, `--json`).
        report_to (`list[str]`, *optional*, defaults to `["tensorboard"]`):
            Loggers: `tensorboard` (offline, under `output_dir/logs`), `wandb` (needs the `wandb`
            package and a login or `WANDB_MODE=offline`), or `none`.
        run_name (`str` or `None`, *optional*, defaults to `None`):
            Name of the run in the loggers. `None`: the output directory's name.
        progress_bar (`bool`, *optional*, defaults to `True`):
            Show a progress bar while training; `False` trains quietly (the losses still go to
            the loggers, the loss curve and the summary).
        loss_curve (`bool`, *optional*, defaults to `True`):
            Write the training loss as `output_dir/loss_curve.png`.

        > Parameters that control distributed training

        deepspeed (`str` or `None`, *optional*, defaults to `None`):
            Path to a DeepSpeed JSON config (ZeRO stage, offload, ...), handed to transformers as
            is. Launch with `accelerate launch` or `deepspeed` for several GPUs (docs/training.md).
        trl_args (`dict[str, Any]`, *optional*, defaults to `{}`):
            Further keyword arguments of `trl.SFTConfig` / `transformers.TrainingArguments`
            (e.g. `{optim: adamw_torch_fused, fsdp: "full_shard"}`); they override the values
            derived from the fields above. An unknown name is an error listing the valid ones;
            keys that would write outside `output_dir` (`output_dir`, `logging_dir`, `hub_*`,
            `push_to_hub`, `report_to`, ...) are refused, naming the field to use instead.
    """

    # Declared in CausalLMConfig (shared with GRPOConfig): model, LoRA, strategy, splits, the
    # training, output, logging and scale-out fields.
    # data
    use_premises: bool = False
    max_seq_len: int = 1024
    max_examples: int | None = None
    # logging
    loss_curve: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        need(self, self.max_seq_len >= 8, "max_seq_len", "at least 8")
        need(
            self,
            self.max_examples is None or self.max_examples >= 1,
            "max_examples",
            "None or at least 1",
        )
