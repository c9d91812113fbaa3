"""Layer 3: trainers (SFT on TRL; later GRPO, retrieval, progress) and their config system.

Importing this package is cheap (no torch): the trainers load their heavy modules when they train.
``SFTTrainer`` and ``SFTConfig`` are attributes resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from .config import describe_config, load_config
    from .errors import (
        ConfigValueError,
        EmptyDatasetError,
        TrainerError,
        TrainingStateError,
        UnknownConfigKeyError,
    )
    from .progress_config import ProgressConfig
    from .progress_trainer import ProgressTrainer
    from .retrieval_config import TrainingConfig
    from .retrieval_trainer import RetrievalTrainer
    from .sft_config import SFTConfig
    from .sft_trainer import SFTTrainer

_LAZY = {
    "SFTTrainer": ".sft_trainer",
    "SFTConfig": ".sft_config",
    "load_config": ".config",
    "describe_config": ".config",
    "TrainerError": ".errors",
    "UnknownConfigKeyError": ".errors",
    "ConfigValueError": ".errors",
    "EmptyDatasetError": ".errors",
    "TrainingStateError": ".errors",
    "ProgressTrainer": ".progress_trainer",
    "ProgressConfig": ".progress_config",
    "RetrievalTrainer": ".retrieval_trainer",
    "TrainingConfig": ".retrieval_config",
}

__all__ = [
    "ConfigValueError",
    "EmptyDatasetError",
    "ProgressConfig",
    "ProgressTrainer",
    "RetrievalTrainer",
    "SFTConfig",
    "SFTTrainer",
    "TrainerError",
    "TrainingConfig",
    "TrainingStateError",
    "UnknownConfigKeyError",
    "describe_config",
    "load_config",
]


__getattr__, __dir__ = reexport(globals(), _LAZY)
