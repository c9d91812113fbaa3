"""Premise-retrieval evaluation: queries from traced tactics, ranking metrics, one evaluation loop
for every :class:`~lean_dojo_v2.models.retrieval.Retriever`.

A query is one traced tactic that uses at least one premise of the corpus: its ``state_before``,
the premises its annotations name (resolved in the corpus by full name, or by
:meth:`Corpus.locate_premise` on the annotation's ``def_path``/``def_pos``), and the theorem's file
and start (only premises accessible there are ranked). Metrics (all fractions in [0, 1]):

- ``R@k``: mean over queries of the fraction of its positives found in the top ``k``;
- ``FullRecall@k``: fraction of queries with *all* positives in the top ``k``;
- ``MRR``: mean of ``1 / rank`` of the first positive (0 when none is retrieved; the ranking
  looked at is the top ``max(max(ks), mrr_depth)``);
- ``n``: number of queries.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from ..data.corpus import Corpus
from ..data.model import Pos, Theorem
from ..errors import CorpusError, ModelError
from .retrieval import Retriever

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetrievalQuery:
    """One traced tactic as a retrieval query."""

    state: str
    positives: tuple[str, ...]
    """Full names of the premises the tactic uses that are in the corpus, in order of first use."""
    file_path: str
    pos: Pos | None
    """Where the theorem starts in ``file_path`` (premises accessible there are ranked)."""
    theorem: str
    tactic_idx: int


@dataclass
class QueryStats:
    """What :func:`retrieval_queries` kept and dropped."""

    tactics: int = 0
    queries: int = 0
    premise_uses: int = 0
    unresolved_premise_uses: int = 0
    first_unresolved: str | None = None


def _resolve(corpus: Corpus, annotation) -> str | None:  # noqa: ANN001 - data.Annotation
    # The name first: several premises can share a position (the lemmas `@[simps]` generates
    # from one declaration), so the position alone may find a sibling of the premise used.
    named = corpus.get_premise(annotation.full_name)
    if named is not None and named.path == annotation.def_path:
        return named.full_name
    located = corpus.locate_premise(annotation.def_path, annotation.def_pos)
    if located is not None:
        return located.full_name
    found = corpus.get_premise(annotation.full_name)
    return found.full_name if found is not None else None


def retrieval_queries(
    theorems: Iterable[Theorem],
    corpus: Corpus,
    *,
    strict: bool = False,
    stats: QueryStats | None = None,
) -> list[RetrievalQuery]:
    """One :class:`RetrievalQuery` per traced tactic with at least one premise in ``corpus``.

    A premise use that does not resolve in the corpus is left out of the positives (counted in
    ``stats``; logged once); with ``strict`` it raises :class:`CorpusError` naming the theorem's
    file and line and the premise. A theorem whose file is not in the corpus raises
    :class:`CorpusError` (its accessible premises are unknown).
    """
    stats = stats if stats is not None else QueryStats()
    out: list[RetrievalQuery] = []
    for thm in theorems:
        if not thm.traced_tactics:
            continue
        if thm.file_path not in corpus:
            raise CorpusError(
                f"theorem {thm.full_name} ({thm.file_path}:{thm.start.line_nb}): its file is not "
                "in corpus.jsonl; add the file (with its imports) to the corpus"
            )
        for i, tac in enumerate(thm.traced_tactics):
            stats.tactics += 1
            positives: list[str] = []
            for a in tac.annotations:
                stats.premise_uses += 1
                name = _resolve(corpus, a)
                if name is None:
                    where = (
                        f"{thm.file_path}:{thm.start.line_nb} ({thm.full_name}, tactic {i}): "
                        f"premise {a.full_name!r} (defined at {a.def_path}:{a.def_pos.line_nb}) "
                        "is not in the corpus"
                    )
                    if strict:
                        raise CorpusError(where + "; add its file to corpus.jsonl")
                    stats.unresolved_premise_uses += 1
                    if stats.first_unresolved is None:
                        stats.first_unresolved = where
                    continue
                if name not in positives:
                    positives.append(name)
            if positives:
                out.append(
                    RetrievalQuery(
                        tac.state_before,
                        tuple(positives),
                        thm.file_path,
                        thm.start,
                        thm.full_name,
                        i,
                    )
                )
    stats.queries = len(out)
    if stats.unresolved_premise_uses:
        log.warning(
            "%d premise use(s) are not in the corpus and were left out of the positives; first: %s",
            stats.unresolved_premise_uses,
            stats.first_unresolved,
        )
    return out


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(ks)
    if not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise ModelError(f"ks must be positive integers, got {ks!r}")
    return ks


def ranking_metrics(
    rankings: Sequence[Sequence[str]],
    positives: Sequence[Collection[str]],
    ks: Sequence[int] = (1, 10),
) -> dict[str, float]:
    """``R@k``, ``FullRecall@k`` (each ``k`` of ``ks``), ``MRR`` and ``n`` of ranked premise
    names against each query's positives (see the module docstring). Every query needs at least
    one positive. With no queries every metric is 0.0 and ``n`` is 0."""
    ks = _check_ks(ks)
    if len(rankings) != len(positives):
        raise ModelError(f"{len(rankings)} rankings for {len(positives)} sets of positives")
    recall = {k: 0.0 for k in ks}
    full = {k: 0.0 for k in ks}
    rr = 0.0
    for i, (ranking, pos) in enumerate(zip(rankings, positives, strict=False)):
        pos = set(pos)
        if not pos:
            raise ModelError(f"query {i} has no positives; leave such queries out")
        ranking = list(ranking)
        for k in ks:
            found = len(pos.intersection(ranking[:k]))
            recall[k] += found / len(pos)
            full[k] += float(found == len(pos))
        for rank, name in enumerate(ranking, start=1):
            if name in pos:
                rr += 1.0 / rank
                break
    n = len(rankings)
    metrics: dict[str, float] = {}
    for k in ks:
        metrics[f"R@{k}"] = recall[k] / n if n else 0.0
    for k in ks:
        metrics[f"FullRecall@{k}"] = full[k] / n if n else 0.0
    metrics["MRR"] = rr / n if n else 0.0
    metrics["n"] = n
    return metrics


def evaluate_retriever(
    retriever: Retriever,
    queries: Sequence[RetrievalQuery],
    ks: Sequence[int] = (1, 10),
    batch_size: int = 64,
    *,
    mrr_depth: int = 100,
    show_progress: bool = False,
) -> dict[str, float]:
    """Rank each query's accessible premises with ``retriever`` and score the rankings
    (:func:`ranking_metrics`)."""
    ks = _check_ks(ks)
    if batch_size < 1:
        raise ModelError(f"batch_size must be positive, got {batch_size}")
    depth = max(max(ks), mrr_depth)
    rankings: list[list[str]] = []
    starts: Iterable[int] = range(0, len(queries), batch_size)
    if show_progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="retrieving", unit="batch")
    for s in starts:
        batch = queries[s : s + batch_size]
        hits = retriever.retrieve(
            [q.state for q in batch], depth, [(q.file_path, q.pos) for q in batch]
        )
        rankings.extend([p.full_name for p, _ in row] for row in hits)
    return ranking_metrics(rankings, [q.positives for q in queries], ks)
