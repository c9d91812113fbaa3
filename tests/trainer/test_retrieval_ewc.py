"""EWC: the Fisher information is actually computed (non-zero), the penalty is zero before the
first repository and positive after it once the weights move, and it pulls weights back."""

from __future__ import annotations

import pytest
import torch

from lean_dojo_v2.trainer.ewc import EWC, compute_fisher  # noqa: E402
from lean_dojo_v2.trainer.retrieval_loss import masked_contrastive_loss  # noqa: E402

from .test_retrieval_fixtures import build_tiny_encoder


def _real_pairs(n=12):
    """(goal state, premise name) pairs of real traced tactics of the bundled sample."""
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import DatasetDir

    pairs = []
    for thm in DatasetDir(sample_dataset_path()).theorems("random", "train"):
        for t in thm.traced_tactics:
            if t.premises:
                pairs.append((t.state_before, t.premises[0]))
    assert len(pairs) >= n
    return pairs[:n]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    from lean_dojo_v2.models.retrieval import load_encoder

    path = build_tiny_encoder(tmp_path_factory.mktemp("ewc_enc"), seed=11)
    return load_encoder(str(path), device="cpu", max_length=64)


def _batches(encoder, pairs, size=4):
    out = []
    for i in range(0, len(pairs), size):
        chunk = pairs[i : i + size]
        out.append(
            (
                encoder.tokenize([s for s, _ in chunk]),
                encoder.tokenize([p for _, p in chunk]),
                torch.arange(len(chunk)),
            )
        )
    return out


def _loss_fn(encoder):
    def loss(batch):
        q, c, targets = batch
        return masked_contrastive_loss(encoder.embed(q), encoder.embed(c), targets)

    return loss


def test_ewc_penalty_zero_before_first_repository_and_positive_after(encoder):
    module = encoder.module
    ewc = EWC(lambda_value=0.5)
    assert ewc.penalty(module).item() == 0.0  # before the first repository
    fisher = compute_fisher(module, _batches(encoder, _real_pairs()), _loss_fn(encoder))
    ewc.consolidate(module, fisher)
    # Right after consolidation θ = θ*: still zero.
    assert ewc.penalty(module).item() == pytest.approx(0.0, abs=1e-12)
    with torch.no_grad():  # the weights move (training on the next repository)
        for p in module.parameters():
            p.add_(0.01 * torch.randn_like(p))
    penalty = ewc.penalty(module)
    assert penalty.item() > 0
    assert penalty.requires_grad  # it trains the weights back
    # λ = 0 turns it off.
    assert EWC(0.0).penalty(module).item() == 0.0


def test_ewc_fisher_is_nonzero_mean_squared_gradient(encoder):
    module = encoder.module
    batches = _batches(encoder, _real_pairs())
    fisher = compute_fisher(module, batches, _loss_fn(encoder))
    names = {n for n, p in module.named_parameters() if p.requires_grad}
    assert set(fisher) == names
    total = sum(float(f.sum()) for f in fisher.values())
    assert total > 0
    assert all(float(f.min()) >= 0 for f in fisher.values())
    # It is the mean over batches of squared gradients: check one parameter by hand.
    name, param = next((n, p) for n, p in module.named_parameters() if "pooler" not in n)
    module.eval()
    expected = torch.zeros_like(param)
    for b in batches:
        module.zero_grad(set_to_none=True)
        _loss_fn(encoder)(b).backward()
        expected += param.grad.detach() ** 2
    module.zero_grad(set_to_none=True)
    torch.testing.assert_close(fisher[name], expected / len(batches), rtol=1e-4, atol=1e-10)
    # max_batches limits the estimate.
    assert compute_fisher(module, batches, _loss_fn(encoder), max_batches=1)
    assert compute_fisher(module, [], _loss_fn(encoder)) == {}


def test_ewc_penalty_gradient_pulls_weights_back_and_state_round_trips(encoder, tmp_path):
    module = encoder.module
    ewc = EWC(lambda_value=1.0)
    fisher = compute_fisher(module, _batches(encoder, _real_pairs(8)), _loss_fn(encoder))
    ewc.consolidate(module, fisher)
    star = {n: p.detach().clone() for n, p in module.named_parameters()}
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.05)
    before = ewc.penalty(module).item()
    lr = 0.5 / max(float(f.max()) for f in fisher.values())  # stable for the quadratic
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    for _ in range(3):
        opt.zero_grad()
        ewc.penalty(module).backward()
        opt.step()
    assert ewc.penalty(module).item() < before
    saved = ewc.save(tmp_path / "ewc.pt")
    again = EWC.load(saved)
    assert again.tasks == 1 and again.penalty(module).item() == pytest.approx(
        ewc.penalty(module).item(), rel=1e-6
    )
    # Fisher accumulates over repositories; θ* is the latest snapshot.
    ewc.consolidate(module, fisher)
    assert ewc.tasks == 2
    name = next(iter(fisher))
    torch.testing.assert_close(ewc.fisher[name], 2 * fisher[name])
    assert not torch.equal(ewc.params[name], star[name].float())
    with torch.no_grad():  # restore for other tests of the module-scoped encoder
        for n, p in module.named_parameters():
            p.copy_(star[n])
