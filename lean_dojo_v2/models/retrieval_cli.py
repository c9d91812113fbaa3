"""``lean-dojo-v2 eval retrieval``: R@k, FullRecall@k and MRR of a premise retriever on a
LeanDojo-layout dataset, scoring only the premises accessible to each theorem."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, IncompleteDatasetError

if TYPE_CHECKING:  # pragma: no cover
    from ..config.cli import ParserT
    from ..data.corpus import Corpus
    from .retrieval import Retriever

log = logging.getLogger(__name__)


def parse_ks(text: str) -> tuple[int, ...]:
    """``"1,10"`` → ``(1, 10)``: distinct positive integers, sorted; else :class:`ConfigError`."""
    ks: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        try:
            k = int(part)
        except ValueError:
            k = 0
        if k < 1:
            raise ConfigError(
                f"--k {text!r}: {part!r} is not a positive integer; write e.g. --k 1,10"
            )
        ks.add(k)
    return tuple(sorted(ks))


def add_eval_retrieval_parser(ev_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``retrieval`` on ``ev_sub`` (the subparsers of ``eval``, which the command line
    makes: ``eval prove`` is a layer above this one)."""
    p = ev_sub.add_parser(
        "retrieval",
        help="premise retrieval: R@k, FullRecall@k, MRR",
        description="Evaluate a premise retriever on the traced tactics of one split of a "
        "LeanDojo-layout dataset (tactics that use at least one corpus premise). Each tactic's "
        "state is the query; its premises are the positives; only premises accessible at the "
        "theorem (imported files, earlier in the same file) are ranked. Default retriever: the "
        "bundled all-MiniLM-L6-v2, zero-shot.",
    )
    p.add_argument("--data", required=True, metavar="DIR", help="LeanDojo-layout dataset directory")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--model",
        default=None,
        metavar="DIR|ID",
        help="an exported retriever folder (export_retriever), or an encoder id/folder (the "
        "premise index is then built on the fly from the dataset's corpus)",
    )
    which.add_argument("--bm25", action="store_true", help="the BM25 baseline (bm25s)")
    p.add_argument("--k", default="1,10", help="cut-offs for R@k and FullRecall@k (default 1,10)")
    p.add_argument("--split", default="test", choices=["train", "val", "test"])
    p.add_argument("--strategy", default="random", choices=["random", "novel_premises"])
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--batch-size", type=int, default=64, help="queries per batch (default 64)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail on a tactic premise that is not in the corpus (default: leave it out of the "
        "positives and report how many were left out)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.set_defaults(func=cmd_eval_retrieval)
    return p


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from ..data.dataset import DatasetDir
    from .retrieval_eval import QueryStats, evaluate_retriever, retrieval_queries

    ks = parse_ks(args.k)
    if args.batch_size < 1:
        raise ConfigError(f"--batch-size must be positive, got {args.batch_size}")
    data = DatasetDir(args.data)
    corpus_path = Path(args.data) / "corpus.jsonl"
    if not corpus_path.is_file():
        raise IncompleteDatasetError(args.data, ["corpus.jsonl"])
    split_path = data.split_path(args.strategy, args.split)
    if not split_path.is_file():
        raise IncompleteDatasetError(args.data, [f"{args.strategy}/{args.split}.json"])
    t0 = time.perf_counter()
    corpus = data.corpus()
    stats = QueryStats()
    queries = retrieval_queries(
        data.theorems(args.strategy, args.split), corpus, strict=args.strict, stats=stats
    )
    retriever, name = _make_retriever(args, corpus)
    metrics = evaluate_retriever(retriever, queries, ks=ks, batch_size=args.batch_size)
    result: dict[str, object] = dict(metrics)
    result.update(
        retriever=name,
        split=f"{args.strategy}/{args.split}",
        tactics=stats.tactics,
        unresolved_premise_uses=stats.unresolved_premise_uses,
        seconds=round(time.perf_counter() - t0, 3),
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(f"retrieval on {args.data} ({result['split']}), {name}: {metrics['n']} queries")
        for key, value in metrics.items():
            if key != "n":
                print(f"  {key:<16} {value:.4f}")
    return 0


def _make_retriever(args: argparse.Namespace, corpus: Corpus) -> tuple[Retriever, str]:
    if args.bm25:
        from .bm25 import BM25Retriever

        return BM25Retriever(corpus), "bm25"
    from .premise_index import DenseRetriever, PremiseIndex, is_retriever_dir, load_retriever
    from .retrieval import load_encoder

    if args.model is not None and is_retriever_dir(args.model):
        return load_retriever(args.model, device=args.device), str(args.model)
    encoder = load_encoder(args.model, device=args.device)
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    return DenseRetriever(encoder, index), str(args.model or "all-MiniLM-L6-v2")
