"""``lean-dojo-v2 trace …``: trace a repository and write its dataset from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..config.cli import ParserT


def cmd_trace(args: argparse.Namespace) -> int:
    from ..config import get_settings
    from ..data import SplitSpec
    from .benchmark import dataset_dir_name, write_benchmark
    from .repo import LeanGitRepo
    from .tracing import trace

    repo = LeanGitRepo(args.repo, args.commit)
    traced = trace(
        repo,
        build_deps=args.build_deps,
        workers=args.workers,
        timeout=args.timeout,
        on_error="warn" if args.keep_going else "raise",
        progress=not args.json,
        force=args.force,
    )
    out = Path(args.out) if args.out else get_settings().data_dir / dataset_dir_name(repo)
    spec = SplitSpec.parse(args.val, args.test, "test")
    result = write_benchmark(traced, out, spec)
    theorems = list(traced.theorems())
    summary: dict[str, object] = {
        "url": repo.url,
        "commit": repo.commit,
        "lean_version": traced.lean_version,
        "trace": str(traced.root),
        "dataset": str(result.path),
        "traced_files": len(traced.files),
        "failed_files": sorted(traced.failures),
        "theorems": len(theorems),
        "tactics": sum(t.num_tactics for t in theorems),
        "premises": sum(len(f.premises) for f in traced.premise_files()),
        "sorry_theorems": len(traced.sorry_theorems()),
        "splits": result.splits,
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"traced {repo.url} @ {repo.commit[:12]} (Lean {traced.lean_version})")
    for key in ("traced_files", "theorems", "tactics", "premises", "sorry_theorems"):
        print(f"  {key:<15} {summary[key]:>8,}")
    if traced.failures:
        print(
            f"  failed files    {len(traced.failures):>8,} (listed in {traced.root}/.lake/build/"
            "lean_dojo_v2/manifest.json)"
        )
    print(f"dataset written to {result.path}")
    return 0


def add_trace_parser(sub: argparse._SubParsersAction[ParserT]) -> None:
    p = sub.add_parser(
        "trace",
        help="trace a Lean 4 repository and write its LeanDojo-layout dataset",
        description="Clone (or copy) the repository at a commit, build it with Lake, run the "
        "lean-dojo-v2 extractor over its files and write the dataset (random and novel_premises "
        "splits, corpus.jsonl, traced_files.jsonl, metadata.json). Needs elan and the project's "
        "Lean toolchain; no GitHub token. Traces are cached.",
    )
    p.add_argument(
        "repo", metavar="URL_OR_PATH", help="a GitHub URL, any git remote, or a local path"
    )
    p.add_argument("--commit", help="commit, tag or branch (default: the default branch / HEAD)")
    p.add_argument(
        "--build-deps",
        action="store_true",
        help="also trace the dependencies and Lean's own files (complete premise corpus)",
    )
    p.add_argument(
        "--out", metavar="DIR", help="dataset directory (default: $RAID_DIR/data/<name>_<commit>)"
    )
    p.add_argument("--workers", type=int, help="extractor processes at once (default: CPUs)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per file (default 3600)")
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="write the dataset even if some files of the repository failed to trace",
    )
    p.add_argument("--force", action="store_true", help="trace again even if cached")
    p.add_argument("--val", default="0.02", help="val size: a ratio or a count (default 0.02)")
    p.add_argument("--test", default="0.02", help="test size: a ratio or a count (default 0.02)")
    p.add_argument("--json", action="store_true", help="print a JSON summary (no progress bars)")
    p.set_defaults(func=cmd_trace)
