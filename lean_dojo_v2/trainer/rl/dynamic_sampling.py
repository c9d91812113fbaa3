"""DAPO's dynamic sampling as pure helpers on TRL's generation outputs (no TRL import).

A generation output is the dict ``GRPOTrainer._generate_and_score_completions`` returns:
left-padded ``prompt_ids`` / ``prompt_mask``, right-padded ``completion_ids`` /
``completion_mask`` (and ``tool_mask``), per-sample tensors such as ``advantages`` ``(B,)`` and
``old_per_token_logps`` / ``ref_per_token_logps`` / ``sampling_per_token_logps`` /
``importance_sampling_ratio`` ``(B, T)`` (or ``(B, 1)``), and the scalar ``num_items_in_batch``.
The trainer keeps the non-flat groups of each round (:func:`select_groups`), concatenates the
rounds (:func:`concat_outputs`), cuts to the batch size (:func:`take_rows`) and recomputes
``num_items_in_batch`` (:func:`local_num_items`, summed over processes by the trainer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .advantages import flat_group_mask

if TYPE_CHECKING:
    import torch

__all__ = [
    "LEFT_PADDED",
    "concat_outputs",
    "flat_group_mask",
    "local_num_items",
    "select_groups",
    "select_rows",
    "take_rows",
]

# Keys padded on the left (prompts); every other 2-D tensor is right-padded (completions).
LEFT_PADDED = ("prompt_ids", "prompt_mask")
# Keys that are not per-sample: kept from the first output, recomputed by the caller.
SCALAR_KEYS = ("num_items_in_batch",)


def _pad_value(key: str, pad_token_id: int) -> float:
    if key in ("prompt_ids", "completion_ids"):
        return pad_token_id
    if key == "tool_mask":
        return 1  # TRL pads tool_mask with 1: padding is masked by completion_mask already
    return 0  # masks, log-probs, ratios: padding positions are masked out of every sum


def _rows(output: dict[str, Any]) -> int:
    return int(output["completion_ids"].size(0))


def select_rows(output: dict[str, Any], index: torch.Tensor) -> dict[str, Any]:
    """The rows ``index`` (a 1-D long tensor) of every per-sample value; scalars as they are."""
    selected: dict[str, Any] = {}
    for key, value in output.items():
        if value is None or key in SCALAR_KEYS or (hasattr(value, "ndim") and value.ndim == 0):
            selected[key] = value
        elif isinstance(value, list):
            selected[key] = [value[i] for i in index.tolist()]
        else:
            selected[key] = value[index.to(value.device)]
    return selected


def select_groups(
    output: dict[str, Any], keep: torch.Tensor, num_generations: int
) -> dict[str, Any]:
    """The rows of the groups where ``keep`` (``(Q,)`` booleans) is True, in order."""
    import torch

    rows = _rows(output)
    if keep.numel() * num_generations != rows:
        raise ValueError(f"{keep.numel()} groups of {num_generations} do not match {rows} rows")
    row_keep = keep.repeat_interleave(num_generations)
    return select_rows(output, torch.nonzero(row_keep.cpu(), as_tuple=True)[0])


def take_rows(output: dict[str, Any], n: int) -> dict[str, Any]:
    """The first ``n`` rows (cut a refilled batch to the batch size)."""
    import torch

    return select_rows(output, torch.arange(min(n, _rows(output))))


def concat_outputs(outputs: Sequence[dict[str, Any]], pad_token_id: int) -> dict[str, Any]:
    """Concatenate generation outputs along the batch, re-padding 2-D tensors to the widest
    (prompts on the left, completions and per-token values on the right). Scalar values are taken
    from the first output (``num_items_in_batch`` must be recomputed by the caller)."""
    import torch
    import torch.nn.functional as F

    outputs = [o for o in outputs if _rows(o) > 0] or list(outputs[:1])
    if len(outputs) == 1:
        return dict(outputs[0])
    keys = list(outputs[0])
    for other in outputs[1:]:
        if set(other) != set(keys):
            raise ValueError(
                f"generation outputs have different keys: {sorted(keys)} vs {sorted(other)}"
            )
    merged: dict[str, Any] = {}
    for key in keys:
        values = [o[key] for o in outputs]
        first = values[0]
        if first is None or key in SCALAR_KEYS or (hasattr(first, "ndim") and first.ndim == 0):
            merged[key] = first
        elif isinstance(first, list):
            merged[key] = [item for v in values for item in v]
        elif first.ndim == 1:
            merged[key] = torch.cat(values, dim=0)
        elif first.ndim == 2:
            width = max(v.size(1) for v in values)
            fill = _pad_value(key, pad_token_id)
            left = key in LEFT_PADDED
            padded = [
                F.pad(v, (width - v.size(1), 0) if left else (0, width - v.size(1)), value=fill)
                for v in values
            ]
            merged[key] = torch.cat(padded, dim=0)
        else:
            raise ValueError(
                f"cannot concatenate {key!r} of shape {tuple(first.shape)}: dynamic sampling "
                "supports text-only generation outputs"
            )
    return merged


def local_num_items(output: dict[str, Any]) -> torch.Tensor:
    """This process's count of loss tokens (``completion_mask × tool_mask``), as TRL counts them
    before summing over processes into ``num_items_in_batch``."""
    mask = output["completion_mask"]
    if output.get("tool_mask") is not None:
        mask = mask * output["tool_mask"]
    return mask.sum()
