"""The fields the configs of the two TRL trainers share (no torch here).

:class:`~lean_dojo_v2.trainer.sft_config.SFTConfig` and
:class:`~lean_dojo_v2.trainer.grpo_config.GRPOConfig` both train a causal LM through TRL with the
same model and LoRA settings, data strategy, optimisation, checkpoints, logging and scale-out:
those fields are declared here once, with their checks. Each subclass documents every field in its
own docstring (in its trainer's words: what ``--help-config`` prints), adds its own fields and
may give a shared one another default (GRPO: ``batch_size``, ``output_dir``, ``save_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..config.loading import check_finite_floats
from .causal_lm import check_causal_lm_fields


@dataclass
class CausalLMConfig:
    """The shared fields of ``SFTConfig`` and ``GRPOConfig`` (documented there); not a config of
    its own."""

    # model
    model_name: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    merge_lora: bool = False
    # data
    strategy: Literal["random", "novel_premises"] = "random"
    splits: list[str] = field(default_factory=lambda: ["train"])
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
    # outputs
    output_dir: str = "outputs"
    overwrite_output_dir: bool = False
    resume: bool = True
    save_steps: int = 200
    save_total_limit: int | None = 2
    # logging
    logging_steps: int = 1
    report_to: list[str] = field(default_factory=lambda: ["tensorboard"])
    run_name: str | None = None
    progress_bar: bool = True
    # scale-out
    deepspeed: str | None = None
    trl_args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # inf passes every range check (lr > 0) and trains NaN weights.
        check_finite_floats(self)
        check_causal_lm_fields(self)

    @property
    def reporters(self) -> list[str]:
        """``report_to`` without ``none``."""
        return [r for r in self.report_to if r != "none"]


__all__ = ["CausalLMConfig"]
