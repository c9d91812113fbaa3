"""Layer 3 (trainer): the in-batch contrast of a data-parallel retriever run, over every process.

Under DDP each process embeds its own batch; :class:`CrossRankBatch` gathers every process's
query and candidate embeddings (and what the mask needs: premise ids, targets, positives) so the
masked contrastive loss of :mod:`..retrieval_loss` sees the batch one process with all of them
would (``docs/training.md``, "Devices"). :func:`mean_scores` averages per-query validation scores
over the processes, a query counted once however a sampler spread or repeated it;
:func:`freeze_unreached` freezes what DDP would wait for in vain. Collectives run on
``torch.distributed``'s default group (Lightning's).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

    from ...models.retrieval import PremiseEncoder
    from ..retrieval_data import RetrievalBatch


def process_group() -> tuple[int, int]:
    """``(rank, processes)`` of the default process group (Lightning's); ``(0, 1)`` without one
    (or before Lightning has started the other processes)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_gather_rows(t: Tensor) -> list[Tensor]:
    """Every process's ``t`` in rank order (their first dimensions may differ; no gradient)."""
    import torch
    import torch.distributed as dist

    n = torch.tensor([len(t)], device=t.device)
    sizes = [torch.zeros_like(n) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, n)
    padded = t.new_zeros((int(max(sizes)), *t.shape[1:]))
    padded[: len(t)] = t.detach()
    parts = [torch.zeros_like(padded) for _ in sizes]
    dist.all_gather(parts, padded)
    return [p[: int(s)] for p, s in zip(parts, sizes, strict=True)]


class CrossRankBatch:
    """The batches of every process of a data-parallel run as one in-batch contrast, the batch
    one process would make of them: queries and candidates gathered in rank order (each process
    keeps the gradient of its own), ``targets`` moved to their place among all candidates, and
    ``mask`` over all candidates. A row's own process's candidates keep the batch's mask; another
    process's are masked where they are positives of the row's goal; a premise met on several
    processes counts once (its later copies are masked). Each process computes this whole loss, so
    its backward is scaled by ``world``: DDP's gradient average then gives the gradient of the one
    loss."""

    def __init__(self, batch: RetrievalBatch) -> None:
        import torch

        targets, positive_mask, positives = batch.targets, batch.positive_mask, batch.positives
        self.rank, self.world = process_group()
        dev = targets.device

        def ids(names: Sequence[str]) -> Tensor:  # the same on every process (hash() is not)
            digests = [hashlib.blake2b(n.encode(), digest_size=7).digest() for n in names]
            return torch.tensor([int.from_bytes(d, "big") for d in digests], device=dev).long()

        cand, tgt = all_gather_rows(ids(batch.candidate_names)), all_gather_rows(targets)
        rows = [len(t) for t in tgt]
        starts = [sum(len(c) for c in cand[:r]) for r in range(self.world)]
        self.targets = torch.cat([t + s for t, s in zip(tgt, starts, strict=True)])
        every = torch.cat(cand)
        # (row, premise id) of every row's positives; then the rows' own processes' masks.
        pairs = [(i, x) for i, p in enumerate(positives) for x in ids(sorted(p)).tolist()]
        local = torch.tensor(pairs, dtype=torch.long, device=dev).reshape(-1, 2)
        first = [sum(rows[:r]) for r in range(self.world)]
        local_mask = positive_mask.new_zeros((len(targets), len(every)), dtype=torch.bool)
        local_mask[:, starts[self.rank] : starts[self.rank] + positive_mask.shape[1]] = (
            positive_mask
        )
        mask = torch.cat(all_gather_rows(local_mask))
        for r, got in enumerate(all_gather_rows(local)):
            hit = (got[:, 1:] == every[None, :]).nonzero()
            own = (hit[:, 1] < starts[r]) | (hit[:, 1] >= starts[r] + len(cand[r]))
            mask[got[hit[own, 0], 0] + first[r], hit[own, 1]] = True
        later_copy = torch.tril(every[:, None] == every[None, :], diagonal=-1).any(1)
        self.mask = mask | later_copy[None, :]

    def __call__(self, queries: Tensor, candidates: Tensor) -> tuple[Tensor, Tensor]:
        """Every process's query and candidate embeddings; this process's keep their graph."""
        import torch

        out = []
        for t in (queries, candidates):
            parts = all_gather_rows(t)
            parts[self.rank] = t
            out.append(torch.cat(parts))
        return out[0], out[1]


def average_gradients(grads: Sequence[Tensor]) -> None:
    """Replace each of ``grads`` by its mean over the processes (what DDP does after backward)."""
    import torch.distributed as dist

    for g in grads:
        dist.all_reduce(g)
        g /= dist.get_world_size()


def mean_scores(scores: dict[int, list[float]]) -> list[float]:
    """The mean of each score over every process's queries (``scores``: query position → its
    scores). A position met on several processes (a sampler's padding) counts once; the sums
    run in query order, so any number of processes gives one process's numbers exactly."""
    import torch.distributed as dist

    if process_group()[1] > 1:
        parts: list[dict[int, list[float]] | None] = [None] * dist.get_world_size()
        dist.all_gather_object(parts, scores)
        scores = {k: v for part in parts for k, v in (part or {}).items()}
    rows = [scores[k] for k in sorted(scores)]
    width = len(rows[0]) if rows else 0
    return [sum(r[j] for r in rows) / len(rows) for j in range(width)]


def freeze_unreached(encoder: PremiseEncoder) -> None:
    """Freeze the parameters no embedding reaches (BERT's pooler head): DDP waits for a gradient
    of every trainable parameter and stops when one never comes."""
    net = encoder.module
    was = net.training
    net.eval()  # no dropout: the probe draws nothing from the random state
    encoder.embed(encoder.tokenize(["x"])).sum().backward()
    for p in net.parameters():
        p.requires_grad_(p.requires_grad and p.grad is not None)
    net.zero_grad(set_to_none=True)
    net.train(was)


__all__ = [
    "CrossRankBatch",
    "all_gather_rows",
    "average_gradients",
    "freeze_unreached",
    "mean_scores",
    "process_group",
]
