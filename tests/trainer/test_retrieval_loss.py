# ruff: noqa: F811  (pytest fixtures imported from test_retrieval_fixtures)
"""The retriever's loss: masked pairs contribute nothing (gradient check), several positives per
goal, and the cached (GradCache) variant equals the plain one in loss and parameter gradients."""

from __future__ import annotations

import pytest
import torch

from lean_dojo_v2.trainer.retrieval_loss import (  # noqa: E402
    cached_contrastive_backward,
    masked_contrastive_loss,
    plain_contrastive_backward,
)

from .test_retrieval_fixtures import build_tiny_encoder, tiny_encoder_dir  # noqa: F401


def _unit(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(
        torch.randn(*shape, generator=g, dtype=torch.float64), dim=-1
    )


def test_masked_pair_never_contributes_to_the_loss_gradient_check():
    q = _unit(3, 8, seed=1).requires_grad_(True)
    c = _unit(6, 8, seed=2).requires_grad_(True)
    targets = torch.tensor([0, 1, 2])
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[0, 4] = True  # candidate 4 is another positive of row 0's goal: masked for row 0
    mask[0, 1] = True  # so is candidate 1 (row 1's target)
    per_row = masked_contrastive_loss(q, c, targets, mask, temperature=0.1, reduction="none")
    (grad_c,) = torch.autograd.grad(per_row[0], c, retain_graph=True)
    assert torch.all(grad_c[4] == 0) and torch.all(grad_c[1] == 0)  # masked: exactly zero
    assert grad_c[3].abs().sum() > 0  # an ordinary negative does get a gradient
    assert grad_c[0].abs().sum() > 0  # and the target
    # Moving a masked candidate anywhere leaves row 0's loss unchanged.
    moved = c.detach().clone()
    moved[4] = -moved[0]
    moved[1] = moved[0]
    again = masked_contrastive_loss(
        q.detach(), moved, targets, mask, temperature=0.1, reduction="none"
    )
    assert again[0].item() == pytest.approx(per_row[0].item(), abs=1e-12)
    # Without the mask the same pair is a negative and changes the loss.
    unmasked = masked_contrastive_loss(
        q.detach(), c.detach(), targets, None, temperature=0.1, reduction="none"
    )
    assert unmasked[0].item() > per_row[0].item()


def test_masked_loss_equals_hand_computed_infonce():
    q = _unit(2, 4, seed=3)
    c = _unit(4, 4, seed=4)
    targets = torch.tensor([2, 0])
    mask = torch.tensor([[True, False, True, False], [False, False, False, False]])
    got = masked_contrastive_loss(q, c, targets, mask, temperature=0.5, reduction="none")
    s = q @ c.T / 0.5
    row0 = -(s[0, 2] - torch.logsumexp(s[0, [1, 2, 3]], 0))  # candidate 0 masked
    row1 = -(s[1, 0] - torch.logsumexp(s[1], 0))
    assert got[0].item() == pytest.approx(row0.item(), rel=1e-12)
    assert got[1].item() == pytest.approx(row1.item(), rel=1e-12)


def test_several_positives_of_one_goal_each_target_with_the_others_masked():
    # One goal with two positives gives two rows; each row's other positive is masked, so the
    # two positives are never pushed apart from the goal.
    q0 = _unit(1, 8, seed=5)
    q = torch.cat([q0, q0]).requires_grad_(True)
    c = _unit(4, 8, seed=6).requires_grad_(True)
    targets = torch.tensor([0, 1])
    mask = torch.tensor([[True, True, False, False], [True, True, False, False]])
    per_row = masked_contrastive_loss(q, c, targets, mask, temperature=0.1, reduction="none")
    (g0,) = torch.autograd.grad(per_row[0], c, retain_graph=True)
    (g1,) = torch.autograd.grad(per_row[1], c)
    assert torch.all(g0[1] == 0) and torch.all(g1[0] == 0)


def _encoder(path, dropout=0.0):
    from lean_dojo_v2.models.retrieval import load_encoder

    return load_encoder(str(path), device="cpu", max_length=64)


def _grads(module):
    return {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("chunk_size", [1, 3, 64])
def test_cached_loss_equals_plain_loss_and_parameter_gradients(tmp_path, chunk_size):
    enc = _encoder(build_tiny_encoder(tmp_path / "enc", seed=3))
    enc.module.train()
    queries = enc.tokenize(
        ["n : ℕ\n⊢ n + 0 = n", "a b : ℕ\n⊢ a + b = b + a", "⊢ 0 < 2", "x : ℝ\n⊢ 0 ≤ x ^ 2"]
    )
    cands = enc.tokenize(
        ["Nat.add_zero", "Nat.add_comm", "Nat.zero_lt_two", "sq_nonneg", "Nat.succ_le", "mul_comm"]
    )
    targets = torch.tensor([0, 1, 2, 3])
    mask = torch.zeros(4, 6, dtype=torch.bool)
    mask[1, 5] = True
    mask[0, 1] = True

    enc.module.zero_grad(set_to_none=True)
    plain = plain_contrastive_backward(enc.embed, queries, cands, targets, mask, temperature=0.05)
    g_plain = _grads(enc.module)
    enc.module.zero_grad(set_to_none=True)
    cached = cached_contrastive_backward(
        enc.embed, queries, cands, targets, mask, temperature=0.05, chunk_size=chunk_size
    )
    g_cached = _grads(enc.module)
    assert cached.item() == pytest.approx(plain.item(), rel=1e-5, abs=1e-6)
    assert g_plain.keys() == g_cached.keys() and len(g_plain) > 10
    for name in g_plain:
        torch.testing.assert_close(g_cached[name], g_plain[name], rtol=1e-4, atol=1e-6, msg=name)


def test_cached_loss_replays_dropout_so_gradients_match_the_cached_embeddings(tmp_path):
    # With dropout on, each chunk's re-encoding must draw the dropout masks its cached pass drew;
    # then loss and gradients equal those of a with-grad pass over the same chunks.
    enc = _encoder(build_tiny_encoder(tmp_path / "enc", seed=4, dropout=0.3))
    enc.module.train()
    queries = enc.tokenize(["⊢ a ∧ b", "⊢ a ∨ b", "⊢ ¬ a"])
    cands = enc.tokenize(["And.intro", "Or.inl", "Not.intro", "absurd"])
    targets = torch.tensor([0, 1, 2])

    def chunks(batch):
        return [{k: v[i : i + 2] for k, v in batch.items()} for i in (0, 2)]

    torch.manual_seed(0)
    enc.module.zero_grad(set_to_none=True)
    q = torch.cat([enc.embed(b) for b in chunks(queries)])
    c = torch.cat([enc.embed(b) for b in chunks(cands)])
    ref = masked_contrastive_loss(q, c, targets)
    ref.backward()
    g_ref = _grads(enc.module)

    torch.manual_seed(0)
    enc.module.zero_grad(set_to_none=True)
    loss = cached_contrastive_backward(enc.embed, queries, cands, targets, None, chunk_size=2)
    g_cached = _grads(enc.module)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    for name in g_ref:
        torch.testing.assert_close(g_cached[name], g_ref[name], rtol=1e-4, atol=1e-6, msg=name)
    # Dropout is really on: another seed gives another loss.
    torch.manual_seed(1)
    with torch.no_grad():
        other = masked_contrastive_loss(enc.embed(queries), enc.embed(cands), targets)
    assert other.item() != pytest.approx(ref.item(), rel=1e-6)


def test_extra_loss_is_added_and_backpropagated_by_both_variants(tmp_path):
    enc = _encoder(build_tiny_encoder(tmp_path / "enc", seed=5))
    queries = enc.tokenize(["⊢ a = a", "⊢ b = b"])
    cands = enc.tokenize(["rfl", "Eq.refl"])
    targets = torch.tensor([0, 1])
    p0 = next(enc.module.parameters())
    extra = lambda: (p0.float() ** 2).sum() * 0.5  # noqa: E731
    enc.module.zero_grad(set_to_none=True)
    base = plain_contrastive_backward(enc.embed, queries, cands, targets)
    g_base = p0.grad.clone()
    for fn in (plain_contrastive_backward, cached_contrastive_backward):
        enc.module.zero_grad(set_to_none=True)
        total = fn(enc.embed, queries, cands, targets, extra_loss=extra)
        assert total.item() == pytest.approx(base.item() + extra().item(), rel=1e-5)
        torch.testing.assert_close(p0.grad, g_base + p0.detach(), rtol=1e-4, atol=1e-6)
