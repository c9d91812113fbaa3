"""LeanProgress (layer 3): steps-remaining labels from traced proofs and the JSONL dataset.

- :mod:`.labels`: the labelling rule (branching proofs included) — :func:`label_tactics`,
  :func:`steps_remaining`.
- :mod:`.dataset`: :func:`progress_examples` (theorems → rows); the rows' type
  :class:`ProgressExample` and the JSONL writer and reader are :mod:`lean_dojo_v2.data.progress_jsonl`'s,
  offered here too.
- :mod:`.create_sample_dataset`: ``python -m lean_dojo_v2.lean_progress.create_sample_dataset
  --output PATH``. The package exports the module itself, which is callable as the function
  ``create_sample_dataset(output, data=None, force=False)`` and holds upstream's ``main``,
  ``parse_args`` and ``SAMPLE_DATA``.
- :mod:`.train_steps_model`: upstream LeanDojo-v2's training script (``python -m
  lean_dojo_v2.lean_progress.train_steps_model --dataset FILE --output-dir DIR``) on
  ``ProgressTrainer``, with its ``build_text`` and ``tokenize_batch``.

The model is :class:`lean_dojo_v2.models.progress.ProgressModel`; training is
:class:`lean_dojo_v2.trainer.progress_trainer.ProgressTrainer`. Names are resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..data.progress_jsonl import (
        ProgressExample,
        iter_progress_jsonl,
        read_progress_jsonl,
        write_progress_jsonl,
    )
    from . import create_sample_dataset, train_steps_model
    from .dataset import progress_examples
    from .labels import TacticLabel, goal_keys, label_tactics, steps_remaining

_LAZY = {
    "TacticLabel": ".labels",
    "goal_keys": ".labels",
    "label_tactics": ".labels",
    "steps_remaining": ".labels",
    "progress_examples": ".dataset",
    "ProgressExample": "..data.progress_jsonl",
    "iter_progress_jsonl": "..data.progress_jsonl",
    "read_progress_jsonl": "..data.progress_jsonl",
    "write_progress_jsonl": "..data.progress_jsonl",
}

__all__ = [
    "ProgressExample",
    "TacticLabel",
    "create_sample_dataset",
    "goal_keys",
    "iter_progress_jsonl",
    "label_tactics",
    "progress_examples",
    "read_progress_jsonl",
    "steps_remaining",
    "train_steps_model",
    "write_progress_jsonl",
]

__getattr__, __dir__ = reexport(
    globals(), _LAZY, submodules=["labels", "dataset", "create_sample_dataset", "train_steps_model"]
)
