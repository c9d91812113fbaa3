"""The retriever's loss: masked in-batch contrastive (InfoNCE) and its cached (GradCache) variant.

Row ``i``'s target is candidate ``targets[i]``; every other candidate of the batch is a negative
for it, **except** those that are also positives of row ``i``'s goal (``positive_mask``): they are
masked out of the softmax, neither rewarded nor pushed away. This is the LeanHammer premise
selector's loss; LeanAgent/ReProver regressed cosine similarities onto 0/1 labels with MSE
instead. :func:`cached_contrastive_backward` computes the same loss and gradients with the memory
of one chunk of texts (Gao et al., "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup", 2021), replaying each chunk's random state so dropout masks match. Under data
parallelism, :class:`~.ddp.in_batch.CrossRankBatch` makes every process's batch one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from .ddp.in_batch import CrossRankBatch

    Chunk = tuple[int, int, tuple[Tensor, Tensor | None]]  # start, stop, random state


def masked_logits(
    query_emb: Tensor,
    cand_emb: Tensor,
    targets: Tensor,
    positive_mask: Tensor | None,
    temperature: float,
) -> Tensor:
    """``[B, M]`` similarities / ``temperature``, with ``-inf`` where ``positive_mask`` marks a
    candidate that is a positive of the row's goal other than the row's own target."""
    import torch

    logits = query_emb @ cand_emb.T / temperature
    if positive_mask is None:
        return logits
    if positive_mask.shape != logits.shape:
        raise ValueError(
            f"positive_mask has shape {tuple(positive_mask.shape)}, expected {tuple(logits.shape)}"
        )
    own = torch.zeros_like(positive_mask, dtype=torch.bool)
    own[torch.arange(len(targets), device=own.device), targets] = True
    drop = positive_mask.to(torch.bool) & ~own
    return logits.masked_fill(drop, float("-inf"))


def masked_contrastive_loss(
    query_emb: Tensor,
    cand_emb: Tensor,
    targets: Tensor,
    positive_mask: Tensor | None = None,
    *,
    temperature: float = 0.05,
    reduction: str = "mean",
) -> Tensor:
    """InfoNCE of each row's target among all candidates, other positives of the row masked.

    ``query_emb`` ``[B, d]``, ``cand_emb`` ``[M, d]`` (L2-normalised: dot products are cosines),
    ``targets`` ``[B]`` candidate indices, ``positive_mask`` ``[B, M]`` bool (True: candidate ``j``
    is a positive of row ``i``'s goal; the row's own target may be marked or not). ``reduction``:
    ``mean`` (over rows), ``sum`` or ``none`` (``[B]``).
    """
    import torch
    import torch.nn.functional as F

    logits = masked_logits(query_emb, cand_emb, targets, positive_mask, temperature)
    if logits.dtype not in (torch.float32, torch.float64):  # half precision: softmax in fp32
        logits = logits.float()
    return F.cross_entropy(logits, targets, reduction=reduction)


def _slice(batch: Mapping[str, Tensor], start: int, stop: int) -> dict[str, Tensor]:
    return {k: v[start:stop] for k, v in batch.items()}


def _rng_states(device: torch.device) -> tuple[Tensor, Tensor | None]:
    import torch

    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), cuda


def _set_rng_states(states: tuple[Tensor, Tensor | None], device: torch.device) -> None:
    import torch

    cpu, cuda = states
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state(cuda, device)


def contrast_loss(
    q: Tensor,
    c: Tensor,
    targets: Tensor,
    positive_mask: Tensor | None,
    temperature: float,
    gather: CrossRankBatch | None,
) -> tuple[Tensor, float]:
    """The loss of this batch (of every process's, with ``gather``) and its backward scale."""
    if gather is None:
        return masked_contrastive_loss(q, c, targets, positive_mask, temperature=temperature), 1.0
    q, c = gather(q, c)
    loss = masked_contrastive_loss(q, c, gather.targets, gather.mask, temperature=temperature)
    return loss, float(gather.world)


def cached_contrastive_backward(
    embed: Callable[[Mapping[str, Tensor]], Tensor],
    queries: Mapping[str, Tensor],
    candidates: Mapping[str, Tensor],
    targets: Tensor,
    positive_mask: Tensor | None = None,
    *,
    temperature: float = 0.05,
    chunk_size: int = 32,
    scale: float = 1.0,
    backward: Callable[[Tensor], None] | None = None,
    extra_loss: Callable[[], Tensor] | None = None,
    gather: CrossRankBatch | None = None,
    no_sync: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> Tensor:
    """Compute :func:`masked_contrastive_loss` (mean) of the texts ``queries``/``candidates``
    (tokenized batches on the encoder's device) and back-propagate ``scale`` × it into the encoder
    with the memory of ``chunk_size`` texts; returns the loss (detached).

    ``embed`` maps a tokenized chunk to its embeddings (``PremiseEncoder.embed``). ``backward``
    replaces ``Tensor.backward`` (Lightning's ``manual_backward`` under mixed precision or DDP).
    ``extra_loss`` (e.g. the EWC penalty) is added to the returned loss and back-propagated too.
    ``gather``: the batch of every process (DDP); ``no_sync`` (DDP's) holds back the gradient
    average in every backward but the last, which averages the sum of them all.
    """
    import torch

    do_backward = backward or (lambda t: t.backward())
    device = targets.device

    def encode_cached(batch: Mapping[str, Tensor]) -> tuple[Tensor, list[Chunk]]:
        chunks, parts = [], []
        n = len(next(iter(batch.values())))
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            state = _rng_states(device)
            with torch.no_grad():
                parts.append(embed(_slice(batch, start, stop)))
            chunks.append((start, stop, state))
        return torch.cat(parts).detach(), chunks

    q_cache, q_chunks = encode_cached(queries)
    c_cache, c_chunks = encode_cached(candidates)
    after = _rng_states(device)
    q_cache.requires_grad_(True)
    c_cache.requires_grad_(True)
    with torch.enable_grad():
        loss, factor = contrast_loss(q_cache, c_cache, targets, positive_mask, temperature, gather)
        q_grad, c_grad = torch.autograd.grad(loss * factor * scale, [q_cache, c_cache])
    extra = extra_loss() if extra_loss is not None else None
    steps = [
        (batch, start, stop, state, grad)
        for batch, chunks, grad in ((queries, q_chunks, q_grad), (candidates, c_chunks, c_grad))
        for start, stop, state in chunks
    ]
    for n, (batch, start, stop, state, grad) in enumerate(steps):
        _set_rng_states(state, device)
        emb = embed(_slice(batch, start, stop))
        part = (emb * grad[start:stop].to(emb.dtype)).sum()
        last = n == len(steps) - 1
        if last and extra is not None and extra.requires_grad:
            part = part + extra * scale
        with nullcontext() if last else no_sync():
            do_backward(part)
    _set_rng_states(after, device)
    return loss.detach() + (extra.detach() if extra is not None else 0.0)


def plain_contrastive_backward(
    embed: Callable[[Mapping[str, Tensor]], Tensor],
    queries: Mapping[str, Tensor],
    candidates: Mapping[str, Tensor],
    targets: Tensor,
    positive_mask: Tensor | None = None,
    *,
    temperature: float = 0.05,
    scale: float = 1.0,
    backward: Callable[[Tensor], None] | None = None,
    extra_loss: Callable[[], Tensor] | None = None,
    gather: CrossRankBatch | None = None,
) -> Tensor:
    """The same contract as :func:`cached_contrastive_backward` with one forward pass over the
    whole batch (activations of every text held at once)."""
    do_backward = backward or (lambda t: t.backward())
    q = embed(queries)
    c = embed(candidates)
    loss, factor = contrast_loss(q, c, targets, positive_mask, temperature, gather)
    extra = extra_loss() if extra_loss is not None else 0.0
    do_backward((loss * factor + extra) * scale)
    return (loss + extra).detach()


__all__ = [
    "cached_contrastive_backward",
    "contrast_loss",
    "masked_contrastive_loss",
    "masked_logits",
    "plain_contrastive_backward",
]
