"""Premise-retrieval quality: BM25, zero-shot MiniLM and the trained retriever, in one run, on
held-out real data. Prints one JSON object.

Data: the bundled LeanDojo Benchmark 4 sample (100 real mathlib4 theorems with traced tactics, its
corpus derived from the tactics' premise provenances). Two held-out protocols:

- ``random_split``: train on the sample's ``random/train`` split, test on ``random/test`` (only 9
  test queries: tactics whose premises are in the corpus).
- ``crossval``: the sample's 100 theorems in ``--folds`` folds by theorem (seeded); for each fold
  the retriever is trained from MiniLM on the other folds and every method is scored on the fold's
  queries; metrics are pooled over all held-out queries (about 100), which is far less noisy.

Metrics (fractions in [0, 1]): R@1, R@10 (mean fraction of a tactic's premises in the top k), MRR,
FullRecall@10, n (queries); only premises accessible at each theorem are ranked. The shared copy
``../shared/data/leandojo_b4`` holds the same 100 records (no corpus), so it adds no data; the run
says so when it finds it.

    python benchmarks/retrieval_quality.py [--epochs 2] [--folds 3] [--max-seq-len 128] [--threads 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

KEYS = ("R@1", "R@10", "MRR", "FullRecall@10", "n")


def _metrics(m: dict) -> dict:
    return {k: (int(m[k]) if k == "n" else round(float(m[k]), 4)) for k in KEYS}


def _pool(parts: list[dict]) -> dict:
    """Query-weighted mean of per-fold metrics (= the metrics of all held-out queries)."""
    n = sum(p["n"] for p in parts)
    out = {k: round(sum(p[k] * p["n"] for p in parts) / n, 4) for k in KEYS if k != "n"}
    out["n"] = int(n)
    return out


def _config(args, out: Path):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    return load_config(
        TrainingConfig,
        None,
        {},
        output_dir=str(out),
        overwrite_output_dir=True,
        resume=False,
        accelerator="cpu",
        devices="1",
        progress_bar=False,
        report_to=["none"],
        validate=False,
        max_epochs=args.epochs,
        max_seq_len=args.max_seq_len,
        max_steps=args.max_steps,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
    )


def _score_all(train_q, test_q, corpus, args, tmp: Path, label: str) -> dict:
    from lean_dojo_v2.models.bm25 import BM25Retriever
    from lean_dojo_v2.models.premise_index import DenseRetriever, PremiseIndex
    from lean_dojo_v2.models.retrieval import load_encoder
    from lean_dojo_v2.models.retrieval_eval import evaluate_retriever
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    res: dict = {}
    res["bm25"] = _metrics(evaluate_retriever(BM25Retriever(corpus), test_q, ks=(1, 10)))
    zero = load_encoder(None, device="cpu", max_length=args.max_seq_len)
    res["minilm_zero_shot"] = _metrics(
        evaluate_retriever(
            DenseRetriever(zero, PremiseIndex.build(corpus, zero, show_progress=False)),
            test_q,
            ks=(1, 10),
        )
    )
    t0 = time.perf_counter()
    trainer = RetrievalTrainer(_config(args, tmp / label))
    summary = trainer.fit_examples(train_q, corpus)
    enc = trainer.encoder
    enc.to("cpu")
    res["trained"] = _metrics(
        evaluate_retriever(
            DenseRetriever(enc, PremiseIndex.build(corpus, enc, show_progress=False)),
            test_q,
            ks=(1, 10),
        )
    )
    res["train"] = {
        "queries": len(train_q),
        "examples": summary["examples"],
        "steps": summary["steps"],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-seq-len", type=int, default=128, help="tokens per goal/premise")
    p.add_argument("--max-steps", type=int, default=-1, help="cap per training run (-1: epochs)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--folds", type=int, default=3, help="0 skips the cross-validation")
    p.add_argument("--seed", type=int, default=3407)
    p.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 on a shared 2-core machine)"
    )
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args(argv)

    import logging

    import torch

    logging.disable(logging.WARNING)
    torch.set_num_threads(args.threads)
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import DatasetDir
    from lean_dojo_v2.models.retrieval_eval import retrieval_queries

    start = time.perf_counter()
    sample = sample_dataset_path()
    d = DatasetDir(sample)
    corpus = d.corpus()
    splits = {s: d.theorems("random", s) for s in ("train", "val", "test")}
    report: dict = {
        "benchmark": "retrieval_quality",
        "data": {
            "dataset": "bundled LeanDojo Benchmark 4 sample (mathlib4 29dcec07)",
            "theorems": sum(len(v) for v in splits.values()),
            "premises": len(corpus),
            "premise_text": "full name (the sample's corpus has no code)",
        },
        "settings": {
            "epochs": args.epochs,
            "max_seq_len": args.max_seq_len,
            "max_steps": args.max_steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "num_negatives": 3,
            "num_in_file_negatives": 1,
            "temperature": 0.05,
            "threads": args.threads,
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    shared = ROOT.parent / "shared" / "data" / "leandojo_b4"
    if shared.is_dir():
        report["data"]["shared_leandojo_b4"] = (
            "present: the same 100 records of LeanDojo Benchmark 4 random/test.json as the "
            "bundled sample, without corpus.jsonl; evaluated through the sample"
        )
    with tempfile.TemporaryDirectory(prefix="retrieval_quality_") as tmp_:
        tmp = Path(tmp_)
        train_q = retrieval_queries(splits["train"], corpus)
        test_q = retrieval_queries(splits["test"], corpus)
        report["random_split"] = _score_all(train_q, test_q, corpus, args, tmp, "split")
        if args.folds > 1:
            theorems = [t for v in splits.values() for t in v]
            order = list(range(len(theorems)))
            random.Random(args.seed).shuffle(order)
            folds = [order[i :: args.folds] for i in range(args.folds)]
            per: dict[str, list] = {"bm25": [], "minilm_zero_shot": [], "trained": []}
            steps = 0
            for i, fold in enumerate(folds):
                held = set(fold)
                tr = [theorems[j] for j in order if j not in held]
                te = [theorems[j] for j in fold]
                r = _score_all(
                    retrieval_queries(tr, corpus),
                    retrieval_queries(te, corpus),
                    corpus,
                    args,
                    tmp,
                    f"fold{i}",
                )
                steps += r["train"]["steps"]
                for k in per:
                    per[k].append(r[k])
            report["crossval"] = {k: _pool(v) for k, v in per.items()}
            report["crossval"]["folds"] = args.folds
            report["crossval"]["train_steps_total"] = steps
    cv = report.get("crossval", report["random_split"])
    report["trained_minus_best_baseline_R@10"] = {
        "crossval" if "crossval" in report else "random_split": round(
            cv["trained"]["R@10"] - max(cv["bm25"]["R@10"], cv["minilm_zero_shot"]["R@10"]), 4
        ),
        "random_split": round(
            report["random_split"]["trained"]["R@10"]
            - max(
                report["random_split"]["bm25"]["R@10"],
                report["random_split"]["minilm_zero_shot"]["R@10"],
            ),
            4,
        ),
    }
    report["seconds"] = round(time.perf_counter() - start, 1)
    text = json.dumps(report)
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
