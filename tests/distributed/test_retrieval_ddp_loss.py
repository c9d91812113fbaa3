"""In-batch negatives gathered across two processes (gloo): each process's contrast holds
every process's rows and candidates (2 × its own batch), and the loss and the averaged gradients
(what DDP applies) equal one process's on the batch of both, plain and cached (GradCache) alike,
with premises shared between the processes' batches (a shared positive, shared negatives) counted
once. Also: validation scores gathered by query position count a repeated query once.

About ten seconds (two fresh interpreters, a linear encoder), so in the default suite.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from lean_dojo_v2.data.model import Pos, Premise
from lean_dojo_v2.trainer.ddp.in_batch import CrossRankBatch, mean_scores
from lean_dojo_v2.trainer.retrieval_data import RetrievalExample, collate
from lean_dojo_v2.trainer.retrieval_loss import (
    cached_contrastive_backward,
    plain_contrastive_backward,
)

pytestmark = pytest.mark.distributed

WORLD = 2
PER_RANK = 3


def _premise(name: str) -> Premise:
    return Premise("A.lean", name, f"theorem {name}", Pos(1, 1), Pos(1, 2), "theorem")


def _items() -> list[tuple[RetrievalExample, list[Premise]]]:
    """Six examples; rows 0 and 3 (on different processes) share their goal's two positives, and
    negatives recur across the halves."""

    def ex(goal: str, positive: str, positives: set[str], negatives: list[str]):
        example = RetrievalExample(goal, _premise(positive), frozenset(positives), "A.lean", None)
        return example, [_premise(n) for n in negatives]

    return [
        ex("g0", "p0", {"p0", "p1"}, ["n0", "n1"]),
        ex("g1", "p2", {"p2"}, ["n1", "n2"]),
        ex("g2", "p3", {"p3"}, ["p4", "n0"]),
        ex("g0", "p1", {"p0", "p1"}, ["n1", "n3"]),  # same goal as row 0, its other positive
        ex("g3", "p4", {"p4"}, ["n0", "p0"]),
        ex("g4", "p5", {"p5"}, ["n4", "p2"]),
    ]


def _features() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    texts = [f"g{i}" for i in range(5)] + [f"theorem {n}" for n in _names()]
    return {t: torch.randn(6, generator=g, dtype=torch.float64) for t in texts}


def _names() -> list[str]:
    return [f"p{i}" for i in range(6)] + [f"n{i}" for i in range(5)]


def _encoder() -> torch.nn.Linear:
    torch.manual_seed(1)
    return torch.nn.Linear(6, 4, dtype=torch.float64)


def _batch(items, feats):
    def tokenize(texts):
        return {"x": torch.stack([feats[t] for t in texts])}

    return collate(items, tokenize, lambda p: p.code)


def _run(batch, net, *, cached: bool, gather: CrossRankBatch | None) -> float:
    def embed(b):
        return torch.nn.functional.normalize(net(b["x"]), dim=-1)

    kwargs: dict[str, Any] = {"chunk_size": 2} if cached else {}
    fn = cached_contrastive_backward if cached else plain_contrastive_backward
    loss = fn(
        embed,
        batch.queries,
        batch.candidates,
        batch.targets,
        batch.positive_mask,
        temperature=0.1,
        gather=gather,
        **kwargs,
    )
    return float(loss)


def _worker(rank: int, port: int, out: Path) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        feats = _features()
        batch = _batch(_items()[rank * PER_RANK : (rank + 1) * PER_RANK], feats)
        result: dict[str, Any] = {"rank": rank}
        for cached in (False, True):
            net = _encoder()
            gather = CrossRankBatch(batch)
            result[f"rows_{cached}"] = (len(gather.targets), tuple(gather.mask.shape))
            result[f"loss_{cached}"] = _run(batch, net, cached=cached, gather=gather)
            grads = [p.grad for p in net.parameters()]
            for g in grads:  # DDP's average of the processes' gradients
                dist.all_reduce(g)
                g /= WORLD
            result[f"grads_{cached}"] = [g.clone() for g in grads]
        # Query 2 is on both processes (a sampler's padding): it counts once.
        mine = {0: [1.0, 0.5], 2: [0.0, 0.5]} if rank == 0 else {1: [1.0, 1.0], 2: [0.0, 0.5]}
        result["means"] = mean_scores(mine)
        out.write_bytes(pickle.dumps(result))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _two_ranks(tmp_path: Path) -> list[dict[str, Any]]:
    """Both ranks, each in a fresh interpreter (a forked one can hang on the threads of the
    tests before it)."""
    port, env = _free_port(), dict(os.environ, OMP_NUM_THREADS="1")
    outs = [tmp_path / f"rank{r}.pkl" for r in range(WORLD)]
    procs = [
        subprocess.Popen([sys.executable, __file__, str(r), str(port), str(out)], env=env)
        for r, out in enumerate(outs)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    return [pickle.loads(out.read_bytes()) for out in outs]


def test_two_processes_contrast_the_batch_of_both_as_one_process_does(tmp_path: Path):
    ranks = _two_ranks(tmp_path)
    feats = _features()
    whole = _batch(_items(), feats)
    # Candidates of both halves, deduplicated: what one process contrasts each row against.
    assert len(whole.candidate_names) == len(_names())
    for cached in (False, True):
        net = _encoder()
        loss = _run(whole, net, cached=cached, gather=None)
        for r in ranks:
            rows, mask_shape = r[f"rows_{cached}"]
            # Every process sees the gathered batch: 2 x its own rows.
            assert rows == WORLD * PER_RANK == len(whole)
            assert mask_shape[0] == rows and mask_shape[1] > len(whole.candidate_names)
            assert r[f"loss_{cached}"] == pytest.approx(loss, rel=1e-12)
            for got, want in zip(r[f"grads_{cached}"], net.parameters(), strict=True):
                torch.testing.assert_close(got, want.grad, rtol=1e-10, atol=1e-12)
    for r in ranks:
        assert r["means"] == pytest.approx([2 / 3, 2 / 3], abs=1e-15)


def test_one_process_batch_is_unchanged_without_gathering():
    items = _items()
    feats = _features()
    one = _batch(items[:PER_RANK], feats)
    assert one.positives == [ex.positives for ex, _ in items[:PER_RANK]]
    net_a, net_b = _encoder(), _encoder()
    a = _run(one, net_a, cached=False, gather=None)
    b = _run(one, net_b, cached=True, gather=None)
    assert a == pytest.approx(b, rel=1e-12)


if __name__ == "__main__":  # one rank of _two_ranks
    _worker(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
