"""Layer 3: trainers (SFT and GRPO on TRL, retrieval, progress) and their config system.

Importing this package is cheap (no torch): the trainers load their heavy modules when they train.
``SFTTrainer``, ``GRPOTrainer`` and their configs are attributes resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .config import describe_config, load_config
    from .errors import (
        ConfigValueError,
        EmptyDatasetError,
        NonFiniteLossError,
        TrainerError,
        TrainingStateError,
        UnknownConfigKeyError,
    )
    from .grpo_config import GRPOConfig
    from .grpo_trainer import GRPOResult, GRPOTrainer
    from .pass_loop import CurriculumTrainer
    from .progress_config import ProgressConfig
    from .progress_trainer import ProgressResult, ProgressTrainer
    from .retrieval_config import TrainingConfig
    from .retrieval_trainer import RetrievalResult, RetrievalTrainer
    from .sft_config import SFTConfig
    from .sft_trainer import SFTTrainer, TrainResult

_LAZY = {
    "CurriculumTrainer": ".pass_loop",
    "SFTTrainer": ".sft_trainer",
    "TrainResult": ".sft_trainer",
    "SFTConfig": ".sft_config",
    "GRPOTrainer": ".grpo_trainer",
    "GRPOResult": ".grpo_trainer",
    "GRPOConfig": ".grpo_config",
    "load_config": ".config",
    "describe_config": ".config",
    "TrainerError": ".errors",
    "UnknownConfigKeyError": ".errors",
    "ConfigValueError": ".errors",
    "EmptyDatasetError": ".errors",
    "TrainingStateError": ".errors",
    "NonFiniteLossError": ".errors",
    "ProgressTrainer": ".progress_trainer",
    "ProgressResult": ".progress_trainer",
    "ProgressConfig": ".progress_config",
    "RetrievalTrainer": ".retrieval_trainer",
    "RetrievalResult": ".retrieval_trainer",
    "TrainingConfig": ".retrieval_config",
}

__all__ = [
    "ConfigValueError",
    "CurriculumTrainer",
    "EmptyDatasetError",
    "GRPOConfig",
    "GRPOResult",
    "GRPOTrainer",
    "NonFiniteLossError",
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
