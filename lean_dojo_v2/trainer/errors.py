"""Layer 3 (trainer): the trainers' typed errors. Each message names what is wrong and the valid
choices.

``TrainerError``, ``EmptyDatasetError`` and the config errors (``UnknownConfigKeyError``,
``ConfigValueError``) live in :mod:`lean_dojo_v2.errors` (layer 0): the config system and the
LeanProgress dataset builder raise them below this layer. They are re-exported here, the very same
classes, so ``from lean_dojo_v2.trainer.errors import ...`` and ``except TrainerError`` work as
before.
"""

from __future__ import annotations

from ..errors import (
    ConfigValueError,
    EmptyDatasetError,
    TrainerError,
    UnknownConfigKeyError,
)

__all__ = [
    "ConfigValueError",
    "EmptyDatasetError",
    "NonFiniteLossError",
    "TrainerError",
    "TrainingStateError",
    "UnknownConfigKeyError",
]


class TrainingStateError(TrainerError):
    """An ``output_dir`` holds a run of this library that cannot be resumed as asked (its config or
    data differ). Choose another ``output_dir``, or set ``overwrite_output_dir`` / ``--force``."""


class NonFiniteLossError(TrainerError):
    """The training loss or the gradients became NaN or infinite: the run stops at that step,
    before the optimizer applies them, and saves no model (the output directory keeps what it
    held). Usually a learning rate far too high; the message names the step and the value."""
