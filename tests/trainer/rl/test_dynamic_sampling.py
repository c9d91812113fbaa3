"""Dynamic-sampling helpers on hand-made TRL generation outputs: select groups, concatenate
rounds of different widths (prompts left-padded, completions right-padded), cut, count tokens;
and TRL's shuffle/split keeps our per-sample DPO tags on their rows."""

from __future__ import annotations

import torch

from lean_dojo_v2.trainer.rl.dynamic_sampling import (
    concat_outputs,
    flat_group_mask,
    local_num_items,
    select_groups,
    take_rows,
)

PAD = 9


def _round(prompt_width: int, completion_width: int, rows: int, base: int) -> dict:
    """A generation output of ``rows`` rows whose ids encode the row (base + row index)."""
    ids = torch.arange(base, base + rows)
    return {
        "prompt_ids": ids.unsqueeze(1).repeat(1, prompt_width),
        "prompt_mask": torch.ones(rows, prompt_width, dtype=torch.long),
        "completion_ids": ids.unsqueeze(1).repeat(1, completion_width),
        "completion_mask": torch.ones(rows, completion_width, dtype=torch.long),
        "advantages": ids.float(),
        "old_per_token_logps": -ids.float().unsqueeze(1).repeat(1, completion_width),
        "num_items_in_batch": torch.tensor(rows * completion_width),
    }


def test_select_groups_keeps_whole_groups_in_order() -> None:
    out = _round(2, 3, 6, base=0)  # 3 groups of 2
    kept = select_groups(out, torch.tensor([True, False, True]), 2)
    assert kept["advantages"].tolist() == [0, 1, 4, 5]
    assert kept["completion_ids"][:, 0].tolist() == [0, 1, 4, 5]
    assert kept["num_items_in_batch"].item() == 18  # scalars untouched (recomputed by the caller)
    assert select_groups(out, torch.tensor([False] * 3), 2)["advantages"].numel() == 0


def test_concat_pads_prompts_left_and_completions_right() -> None:
    a = _round(prompt_width=2, completion_width=3, rows=2, base=10)
    b = _round(prompt_width=4, completion_width=1, rows=2, base=20)
    merged = concat_outputs([a, b], pad_token_id=PAD)
    assert merged["prompt_ids"].tolist() == [
        [PAD, PAD, 10, 10],
        [PAD, PAD, 11, 11],
        [20, 20, 20, 20],
        [21, 21, 21, 21],
    ]
    assert merged["prompt_mask"].tolist()[0] == [0, 0, 1, 1]
    assert merged["completion_ids"].tolist() == [
        [10, 10, 10],
        [11, 11, 11],
        [20, PAD, PAD],
        [21, PAD, PAD],
    ]
    assert merged["completion_mask"].tolist()[2] == [1, 0, 0]
    assert merged["old_per_token_logps"].tolist()[3] == [-21.0, 0.0, 0.0]
    assert merged["advantages"].tolist() == [10, 11, 20, 21]
    # Token count of the merged batch: 2 × 3 + 2 × 1.
    assert local_num_items(merged).item() == 8
    cut = take_rows(merged, 3)
    assert cut["advantages"].tolist() == [10, 11, 20] and local_num_items(cut).item() == 7


def test_concat_skips_empty_rounds_and_tool_mask_counts() -> None:
    a = _round(2, 2, 2, base=0)
    empty = select_groups(_round(3, 5, 2, base=5), torch.tensor([False]), 2)
    merged = concat_outputs([empty, a], pad_token_id=PAD)
    assert merged["completion_ids"].shape == (2, 2)  # the empty round's width does not count
    merged["tool_mask"] = torch.tensor([[1, 0], [1, 1]])
    assert local_num_items(merged).item() == 3


def test_flat_groups_are_reexported() -> None:
    assert flat_group_mask(torch.tensor([0.0, 0.0, 1.0, 0.0]), 2).tolist() == [True, False]


def test_trl_shuffle_and_split_keep_dpo_tags_aligned() -> None:
    from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

    out = _round(2, 3, 8, base=0)
    out["dpo_group"] = torch.arange(8) // 2
    out["dpo_reward"] = torch.arange(8).float() * 10
    torch.manual_seed(0)
    for chunk in split_tensor_dict(shuffle_sequence_dict(out), 2):
        row = chunk["completion_ids"][:, 0]
        assert (chunk["dpo_group"] == row // 2).all()
        assert (chunk["dpo_reward"] == row.float() * 10).all()
        assert chunk["num_items_in_batch"].item() == 24
