"""Premise-retrieval speed: 100k premises, top-10 under accessibility masks, batches of 64 queries.

Premises: the real premise names of the bundled LeanDojo Benchmark 4 sample corpus and of the
premise uses in ``../shared/data/leandojo_b4`` (``code`` when a record has it, else the name),
replicated under distinct names (``<name>_r<copy>``) over ``--files`` files whose imports form a
random DAG (each file imports up to 4 earlier files, transitively ~hundreds). Queries: the real
``state_before`` texts of the sample's traced tactics, each at a random (file, position), so every
query has its own mask.

Measured (threads capped at ``--threads``, default 2):

- ``encode_premises_per_s``: the encoder (default bundled MiniLM) on ``--encode-sample`` premise
  texts; ``--encode-all`` encodes all premises (≈ 100k / throughput seconds) instead of filling
  the rest with random unit vectors;
- ``index_build_s`` (rows, per-file row tables; encoding excluded) and ``index_memory_mb``
  (embeddings) plus the process RSS;
- ``ms_per_query``: mask + exact top-10 per query, batches of 64, numpy and FAISS backends;
  ``query_encode_ms``: encoding the query states (MiniLM) per query.

Target: <= 5 ms per query (mask + search) on 2 cores. Prints one JSON object.

    python benchmarks/retrieval_speed.py [--premises 100000] [--model DIR] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_MS = 5.0


def _cap_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)


def _real_premise_texts() -> list[tuple[str, str]]:
    """(full_name, text) of real premises: the sample corpus, plus the shared data's premise uses."""
    from lean_dojo_v2.data import Corpus, sample_dataset_path
    from lean_dojo_v2.models.retrieval import premise_text

    seen: dict[str, str] = {}
    for p in Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl").premises:
        seen.setdefault(p.full_name, premise_text(p))
    for base in (
        ROOT.parent / "shared" / "data" / "leandojo_b4",
        ROOT / "tests/data/real/leandojo_b4",
    ):
        if not base.is_dir():
            continue
        for path in sorted(base.glob("*.json")):
            try:
                records = json.loads(path.read_text("utf-8"))
            except ValueError:
                continue
            if not isinstance(records, list):
                continue
            for rec in records:
                for tt in rec.get("traced_tactics", []) if isinstance(rec, dict) else []:
                    for a in tt.get("annotated_tactic", [None, []])[1]:
                        name = a.get("full_name") if isinstance(a, dict) else None
                        if isinstance(name, str):
                            seen.setdefault(name, name)
    return sorted(seen.items())


def _build_corpus(n_premises: int, n_files: int, seed: int):
    import random

    from lean_dojo_v2.data import Corpus, Pos, Premise, PremiseFile

    rng = random.Random(seed)
    real = _real_premise_texts()
    per_file = max(1, n_premises // n_files)
    files = []
    made = 0
    for f in range(n_files):
        path = f"Bench/F{f:05d}.lean"
        imports = sorted({f"Bench/F{rng.randrange(f):05d}.lean" for _ in range(min(f, 4))})
        count = per_file if f < n_files - 1 else n_premises - made
        premises = []
        for j in range(count):
            name, text = real[(made + j) % len(real)]
            copy = (made + j) // len(real)
            new_name = f"{name}_r{copy}"
            code = text.replace(name, new_name) if text != name else ""
            line = 10 + 5 * j
            premises.append(
                Premise(path, new_name, code, Pos(line, 1), Pos(line + 3, 1), "theorem")
            )
        made += count
        files.append(PremiseFile(path, imports, premises))
    return Corpus(files), len(real)


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--premises", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=1_000)
    ap.add_argument("--model", default=None, help="encoder (default: bundled all-MiniLM-L6-v2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=20, help="query batches timed per backend")
    ap.add_argument("--encode-sample", type=int, default=2_000)
    ap.add_argument("--encode-all", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    _cap_threads(args.threads)

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from lean_dojo_v2.data.dataset import DatasetDir
    from lean_dojo_v2.data.sample import sample_dataset_path
    from lean_dojo_v2.models.premise_index import PremiseIndex
    from lean_dojo_v2.models.retrieval import load_encoder, premise_text

    rss0 = _rss_mb()
    t = time.perf_counter()
    corpus, n_real = _build_corpus(args.premises, args.files, args.seed)
    corpus_s = time.perf_counter() - t
    premises = [p for f in corpus.files for p in f.premises]
    texts = [premise_text(p) for p in premises]

    encoder = load_encoder(args.model, device="cpu")
    rng = np.random.default_rng(args.seed)
    n_enc = len(texts) if args.encode_all else min(args.encode_sample, len(texts))
    sample_idx = (
        np.arange(len(texts)) if args.encode_all else rng.choice(len(texts), n_enc, replace=False)
    )
    encoder.encode([texts[i] for i in sample_idx[:64]])  # warm-up
    t = time.perf_counter()
    enc = encoder.encode([texts[i] for i in sample_idx], batch_size=64)
    encode_s = time.perf_counter() - t
    emb = rng.normal(size=(len(texts), encoder.dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    emb[sample_idx] = enc

    rss1 = _rss_mb()
    t = time.perf_counter()
    index = PremiseIndex(corpus, premises, emb, encoder_name=str(encoder.name_or_path))
    build_s = time.perf_counter() - t

    d = DatasetDir(sample_dataset_path())
    states = [tt.state_before for th in d.all_theorems() for tt in th.traced_tactics]
    n_q = args.batch * args.batches
    q_states = [states[i % len(states)] for i in range(n_q)]
    t = time.perf_counter()
    q_emb = encoder.encode(q_states[: len(states)], batch_size=args.batch)
    q_encode_ms = 1000 * (time.perf_counter() - t) / len(states)
    q_emb = np.vstack([q_emb] * (n_q // len(states) + 1))[:n_q]
    files = [f.path for f in corpus.files]
    points = []
    for _ in range(n_q):
        f = corpus.get_file(files[rng.integers(len(files))])
        j = int(rng.integers(len(f.premises) + 1))
        points.append((f.path, f.premises[j].start if j < len(f.premises) else None))
    accessible = [int(index.mask(p, pos).sum()) for p, pos in points[:64]]

    results = {}
    reference = None
    for backend in ("numpy", "faiss"):
        try:
            index.backend = backend
            index._faiss = None
            index.search(q_emb[:2], args.k, [index.mask(*points[0]), None])  # warm-up
        except Exception as exc:  # noqa: BLE001 - faiss missing: report, keep going
            results[backend] = {"error": str(exc)}
            continue
        index._access._imported.clear()  # time the import-closure masks too, cold
        t = time.perf_counter()
        hits = []
        mask_s = 0.0
        for b in range(args.batches):
            sl = slice(b * args.batch, (b + 1) * args.batch)
            tm = time.perf_counter()
            masks = [index.mask(p, pos) for p, pos in points[sl]]
            mask_s += time.perf_counter() - tm
            hits += index.search(q_emb[sl], args.k, masks)
        total = time.perf_counter() - t
        ids = [[r for r, _ in h] for h in hits]
        if reference is None:
            reference = ids
        results[backend] = {
            "ms_per_query": round(1000 * total / n_q, 3),
            "mask_ms_per_query": round(1000 * mask_s / n_q, 3),
            "same_results_as_numpy": ids == reference,
        }

    out = {
        "benchmark": "retrieval_speed",
        "premises": len(premises),
        "files": len(corpus.files),
        "real_distinct_premises_replicated": n_real,
        "k": args.k,
        "batch": args.batch,
        "queries": n_q,
        "threads": args.threads,
        "encoder": str(encoder.name_or_path),
        "dim": encoder.dim,
        "encoded_premises": int(n_enc),
        "encode_premises_per_s": round(n_enc / encode_s, 1),
        "encode_all_estimated_s": round(len(texts) * encode_s / n_enc, 1),
        "query_encode_ms": round(q_encode_ms, 3),
        "corpus_build_s": round(corpus_s, 3),
        "index_build_s": round(build_s, 3),
        "index_memory_mb": round(index.embeddings.nbytes / 2**20, 1),
        "rss_mb_before": round(rss0, 1),
        "rss_mb_after_index": round(_rss_mb(), 1),
        "rss_mb_before_index": round(rss1, 1),
        "mean_accessible_premises": round(float(np.mean(accessible)), 1),
        "search": results,
        "target_ms_per_query": TARGET_MS,
        "meets_target": any(r.get("ms_per_query", 1e9) <= TARGET_MS for r in results.values()),
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
