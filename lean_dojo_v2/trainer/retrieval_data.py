"""Training examples of the retriever: (goal, positive premise) pairs, hard negatives, batches.

One example per (query, positive premise) of a
:class:`~lean_dojo_v2.models.retrieval_eval.RetrievalQuery` (a traced tactic with at least one
premise in the corpus), as in ReProver/LeanAgent. Each time an example is drawn it gets
``num_negatives`` hard negatives, all accessible at the theorem (imported files, or earlier in its
own file; :meth:`Corpus.accessible_premises`) and none a positive of the goal: up to
``num_in_file_negatives`` from the positive premise's own file (neighbouring lemmas, the hardest
to tell apart), the rest uniformly among the other accessible premises.

Draws are seeded by (seed, epoch, example), so a run (and a resumed run) sees the same negatives,
and each epoch different ones. Fewer accessible premises than asked → fewer negatives (never a
premise that Lean would not let the proof use).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data.model import Pos, Premise

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from ..data.corpus import Corpus
    from ..models.retrieval_eval import RetrievalQuery


@dataclass(frozen=True)
class RetrievalExample:
    """One (goal, positive premise) pair: ``query`` is the goal state, ``positive`` the premise,
    ``positives`` every premise name the tactic uses, ``file_path``/``pos`` where the theorem is."""

    query: str
    positive: Premise
    positives: frozenset[str]
    file_path: str
    pos: Pos | None


def build_examples(
    queries: Sequence[RetrievalQuery], corpus: Corpus, *, max_examples: int | None = None
) -> list[RetrievalExample]:
    """One example per (query, positive in the corpus), in query order; a positive not in the
    corpus is skipped (``retrieval_queries`` keeps only queries with at least one)."""
    out: list[RetrievalExample] = []
    for q in queries:
        names = frozenset(q.positives)
        for name in q.positives:
            premise = corpus.get_premise(name)
            if premise is None:
                continue
            out.append(RetrievalExample(q.state, premise, names, q.file_path, q.pos))
            if max_examples is not None and len(out) >= max_examples:
                return out
    return out


class NegativeSampler:
    """Hard negatives for examples, accessible at each example's theorem, seeded."""

    def __init__(
        self,
        corpus: Corpus,
        num_negatives: int = 3,
        num_in_file_negatives: int = 1,
        *,
        seed: int = 0,
    ) -> None:
        if not 0 <= num_in_file_negatives <= num_negatives:
            raise ValueError(
                f"num_in_file_negatives ({num_in_file_negatives}) must be between 0 and "
                f"num_negatives ({num_negatives})"
            )
        self.corpus, self.seed = corpus, seed
        self.num_negatives, self.num_in_file_negatives = num_negatives, num_in_file_negatives
        self._accessible: dict[tuple[str, Pos | None], list[Premise]] = {}

    def accessible(self, file_path: str, pos: Pos | None) -> list[Premise]:
        key = (file_path, pos)
        found = self._accessible.get(key)
        if found is None:
            if len(self._accessible) > 4096:  # bound the cache on large corpora
                self._accessible.clear()
            found = self.corpus.accessible_premises(file_path, pos)
            self._accessible[key] = found
        return found

    def sample(self, example: RetrievalExample, rng: random.Random) -> list[Premise]:
        if self.num_negatives == 0:
            return []
        near = self.accessible(example.file_path, example.pos)
        pool = [p for p in near if p.full_name not in example.positives]
        in_file = [p for p in pool if p.path == example.positive.path]
        chosen = rng.sample(in_file, min(self.num_in_file_negatives, len(in_file)))
        taken = {p.full_name for p in chosen}
        rest = [p for p in pool if p.full_name not in taken]
        chosen += rng.sample(rest, min(self.num_negatives - len(chosen), len(rest)))
        return chosen

    def rng_for(self, epoch: int, index: int) -> random.Random:
        return random.Random(f"{self.seed}:{epoch}:{index}")


class RetrievalDataset:
    """Map-style dataset of examples; an item is keyed ``(index, epoch)`` (what
    :class:`EpochSampler` yields) and is ``(example, negatives)``."""

    def __init__(self, examples: Sequence[RetrievalExample], sampler: NegativeSampler) -> None:
        self.examples = list(examples)
        self.negatives = sampler

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, key: int | tuple[int, int]) -> tuple[RetrievalExample, list[Premise]]:
        index, epoch = key if isinstance(key, tuple) else (key, 0)
        example = self.examples[index]
        return example, self.negatives.sample(example, self.negatives.rng_for(epoch, index))


class EpochSampler:
    """Shuffles ``range(n)`` by (seed, epoch) and yields ``(index, epoch)`` keys; Lightning calls
    :meth:`set_epoch` at each epoch start (so resumed runs reproduce the order).

    With ``lengths`` (e.g. the characters of each example's goal) and ``batch_size``, examples are
    grouped by length: the shuffled order is cut into mega-batches of 50 batches, each sorted by
    length, cut into batches, and the batches are shuffled. Batches then hold goals of similar
    length and pad far less (the goals of real proofs range from a few to hundreds of tokens).
    """

    def __init__(
        self,
        n: int,
        seed: int = 0,
        shuffle: bool = True,
        *,
        lengths: Sequence[int] | None = None,
        batch_size: int = 1,
    ) -> None:
        if lengths is not None and len(lengths) != n:
            raise ValueError(f"{len(lengths)} lengths for {n} examples")
        self.n, self.seed, self.shuffle = n, seed, shuffle
        self.lengths = list(lengths) if lengths is not None else None
        self.batch_size = max(1, int(batch_size))
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[int, int]]:
        order = list(range(self.n))
        rng = random.Random(f"{self.seed}:order:{self.epoch}")
        if self.shuffle:
            rng.shuffle(order)
        lengths = self.lengths
        if lengths is not None:
            mega = self.batch_size * 50
            batches: list[list[int]] = []
            for s in range(0, len(order), mega):
                chunk = sorted(order[s : s + mega], key=lambda i: -lengths[i])
                batches += [
                    chunk[b : b + self.batch_size] for b in range(0, len(chunk), self.batch_size)
                ]
            if self.shuffle:
                rng.shuffle(batches)
            order = [i for b in batches for i in b]
        return iter([(i, self.epoch) for i in order])


@dataclass
class RetrievalBatch:
    """A collated batch. ``queries``/``candidates`` are tokenized (CPU tensors), ``targets``
    ``[B]`` the index of each row's positive among the candidates, ``positive_mask`` ``[B, M]``
    the candidates that are positives of the row's goal, ``positives`` each row's positive names
    (what another process's candidates are masked by, :class:`~.ddp.in_batch.CrossRankBatch`)."""

    queries: dict[str, Tensor]
    candidates: dict[str, Tensor]
    targets: Tensor
    positive_mask: Tensor
    candidate_names: list[str]
    positives: list[frozenset[str]] = field(default_factory=list)

    def to(self, device: torch.device | str) -> RetrievalBatch:
        return RetrievalBatch(
            {k: v.to(device) for k, v in self.queries.items()},
            {k: v.to(device) for k, v in self.candidates.items()},
            self.targets.to(device),
            self.positive_mask.to(device),
            self.candidate_names,
            self.positives,
        )

    def __len__(self) -> int:
        return len(self.targets)


def collate(
    items: Sequence[tuple[RetrievalExample, Sequence[Premise]]],
    tokenize: Callable[[Sequence[str]], Mapping[str, Tensor]],
    premise_text: Callable[[Premise], str],
) -> RetrievalBatch:
    """Batch ``(example, negatives)`` items: candidates are the positives first, then negatives,
    deduplicated by premise name."""
    import torch

    index: dict[str, int] = {}
    cands: list[Premise] = []

    def add(p: Premise) -> int:
        i = index.get(p.full_name)
        if i is None:
            i = index[p.full_name] = len(cands)
            cands.append(p)
        return i

    targets = [add(ex.positive) for ex, _ in items]
    for _, negs in items:
        for p in negs:
            add(p)
    names = [p.full_name for p in cands]
    mask = torch.tensor([[n in ex.positives for n in names] for ex, _ in items], dtype=torch.bool)
    return RetrievalBatch(
        queries=dict(tokenize([ex.query for ex, _ in items])),
        candidates=dict(tokenize([premise_text(p) for p in cands])),
        targets=torch.tensor(targets, dtype=torch.long),
        positive_mask=mask,
        candidate_names=names,
        positives=[ex.positives for ex, _ in items],
    )


class Collator:
    """A picklable ``collate_fn`` (DataLoader workers) bound to an encoder's tokenizer."""

    def __init__(self, tokenize: Callable[[Sequence[str]], Mapping[str, Tensor]]) -> None:
        self.tokenize = tokenize

    def __call__(
        self, items: Sequence[tuple[RetrievalExample, Sequence[Premise]]]
    ) -> RetrievalBatch:
        from ..models.retrieval import premise_text

        return collate(items, self.tokenize, premise_text)


__all__ = [
    "Collator",
    "EpochSampler",
    "NegativeSampler",
    "RetrievalBatch",
    "RetrievalDataset",
    "RetrievalExample",
    "build_examples",
    "collate",
]
