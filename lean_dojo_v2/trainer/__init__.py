"""Layer 3: the trainers and their configs (``docs/training.md``). Every trainer is built the same
way, ``XTrainer(config)`` or ``XTrainer.from_config(config_or_yaml_path)``, next to the keyword
constructor upstream LeanDojo-v2 shows for it. Importing this package is cheap (no torch): names
are resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..config.loading import describe_config, load_config
    from ..errors import ConfigValueError, EmptyDatasetError, TrainerError, UnknownConfigKeyError
    from .causal_lm_config import CausalLMConfig
    from .causal_lm_trainer import CausalLMTrainer
    from .errors import NonFiniteLossError, TrainingStateError
    from .grpo_config import GRPOConfig
    from .grpo_trainer import GRPOResult, GRPOTrainer
    from .pass_loop import CurriculumTrainer
    from .premise_selector import PremiseSelectorResult, PremiseSelectorTrainer
    from .premise_selector_config import PremiseSelectorConfig
    from .progress_config import ProgressConfig
    from .progress_trainer import ProgressResult, ProgressTrainer
    from .retrieval_config import TrainingConfig
    from .retrieval_trainer import RetrievalResult, RetrievalTrainer
    from .sft_config import SFTConfig
    from .sft_trainer import SFTTrainer, TrainResult

_LAZY = {
    "CurriculumTrainer": ".pass_loop",
    "CausalLMTrainer": ".causal_lm_trainer",
    "CausalLMConfig": ".causal_lm_config",
    "SFTTrainer": ".sft_trainer",
    "TrainResult": ".sft_trainer",
    "SFTConfig": ".sft_config",
    "GRPOTrainer": ".grpo_trainer",
    "GRPOResult": ".grpo_trainer",
    "GRPOConfig": ".grpo_config",
    "RetrievalTrainer": ".retrieval_trainer",
    "RetrievalResult": ".retrieval_trainer",
    "TrainingConfig": ".retrieval_config",
    "PremiseSelectorTrainer": ".premise_selector",
    "PremiseSelectorResult": ".premise_selector",
    "PremiseSelectorConfig": ".premise_selector_config",
    "ProgressTrainer": ".progress_trainer",
    "ProgressResult": ".progress_trainer",
    "ProgressConfig": ".progress_config",
    "load_config": "..config.loading",
    "describe_config": "..config.loading",
    "TrainerError": "..errors",
    "UnknownConfigKeyError": "..errors",
    "ConfigValueError": "..errors",
    "EmptyDatasetError": "..errors",
    "TrainingStateError": ".errors",
    "NonFiniteLossError": ".errors",
}

__all__ = [
    "CausalLMConfig",
    "CausalLMTrainer",
    "ConfigValueError",
    "CurriculumTrainer",
    "EmptyDatasetError",
    "GRPOConfig",
    "GRPOResult",
    "GRPOTrainer",
    "NonFiniteLossError",
    "PremiseSelectorConfig",
    "PremiseSelectorResult",
    "PremiseSelectorTrainer",
    "ProgressConfig",
    "ProgressResult",
    "ProgressTrainer",
    "RetrievalResult",
    "RetrievalTrainer",
    "SFTConfig",
    "SFTTrainer",
    "TrainResult",
    "TrainerError",
    "TrainingConfig",
    "TrainingStateError",
    "UnknownConfigKeyError",
    "describe_config",
    "load_config",
]

__getattr__, __dir__ = reexport(globals(), _LAZY)
