"""The config of :class:`~lean_dojo_v2.trainer.sft_trainer.SFTTrainer` (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.loading import config_field, require_at_least
from .causal_lm_config import CausalLMConfig

__all__ = ["SFTConfig"]


@dataclass
class SFTConfig(CausalLMConfig):
    r"""Configuration of :class:`~lean_dojo_v2.trainer.sft_trainer.SFTTrainer`: supervised
    fine-tuning of a causal LM on (goal state → next tactic) pairs from traced proofs. The fields
    it shares with ``GRPOConfig`` are documented once, in ``CausalLMConfig``.

    Parameters:
        > Parameters that control the data

        use_premises (`bool`, *optional*, defaults to `False`):
            Put the premises each tactic uses into its prompt (for a model that is later given
            retrieved premises at inference).
        max_seq_len (`int`, *optional*, defaults to `1024`):
            Longest example (prompt + tactic) in tokens. Longer ones are left out, never cut: a cut
            prompt would not be what the model sees at inference, and a cut tactic is no tactic.
        max_examples (`int` or `None`, *optional*, defaults to `None`):
            Use only the first this many examples (smoke runs and benchmarks). `None`: all.

        > Parameters that control logging

        loss_curve (`bool`, *optional*, defaults to `True`):
            Write the training loss as `output_dir/loss_curve.png`.
    """

    # data
    use_premises: bool = False
    max_seq_len: int = 1024
    max_examples: int | None = None
    # logging
    loss_curve: bool = config_field(True, fingerprint=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        require_at_least(self, 8, "max_seq_len")
        require_at_least(self, 1, "max_examples", or_none=True)
