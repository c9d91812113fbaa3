"""``LeanSFTTrainer``: on a CPU, TRL's fused LM head projects only the labelled positions, with the
loss and gradients of TRL's own path (the tiny random Llama, a prompt-and-completion batch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch


def _batch() -> dict[str, torch.Tensor]:
    """Two rows: a 12- and a 9-token prompt (label -100, the second left-padded), then a 3-token
    completion each, as TRL's collator gives them with ``completion_only_loss``."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 400, (2, 15), generator=gen)
    labels = ids.clone()
    labels[:, :12] = -100
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def _loss_and_grads(model: Any, projected: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    from trl.trainer import utils as trl_utils

    real = trl_utils._ChunkedLogProbFunction.apply

    def counting(hidden: torch.Tensor, *args: Any) -> Any:
        projected.append(hidden.shape[0])  # the positions the head projects
        return real(hidden, *args)

    model.zero_grad()
    trl_utils._ChunkedLogProbFunction.apply = counting
    try:
        loss = model(**_batch(), fused_lm_head=True).loss
    finally:
        trl_utils._ChunkedLogProbFunction.apply = real
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_the_head_projects_only_labelled_positions_with_trls_loss_and_gradients(
    tiny_model_dir: Path,
) -> None:
    from transformers import AutoModelForCausalLM
    from trl.trainer import utils as trl_utils
    from trl.trainer.utils import add_fused_lm_head

    from lean_dojo_v2.trainer.sft_trl_trainer import labelled_positions_only

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32)
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    hook = trl_utils._use_triton

    trl_path: list[int] = []
    trl_loss, trl_grads = _loss_and_grads(model, trl_path)
    ours: list[int] = []
    with labelled_positions_only():
        with labelled_positions_only():  # nested uses share the swap
            assert trl_utils._use_triton is not hook
        assert trl_utils._use_triton is not hook
        loss, grads = _loss_and_grads(model, ours)
    assert trl_utils._use_triton is hook  # undone on leaving

    assert trl_path == [2 * 14]  # every position of both rows (labels shifted by one)
    assert ours == [2 * 3]  # the three completion tokens of each row
    assert float(loss) == pytest.approx(float(trl_loss), abs=1e-6)
    assert len(grads) == len(trl_grads) > 0
    for ours_grad, trl_grad in zip(grads, trl_grads, strict=True):
        torch.testing.assert_close(ours_grad, trl_grad, atol=1e-6, rtol=1e-5)


def test_sft_trains_with_lean_sft_trainer(tiny_model_dir: Path) -> None:
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer
    from lean_dojo_v2.trainer.sft_trl_trainer import LeanSFTTrainer

    trainer = SFTTrainer(str(tiny_model_dir), output_dir="unused")
    assert trainer._trl_classes()[1] is LeanSFTTrainer
