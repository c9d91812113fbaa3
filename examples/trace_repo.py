"""Trace a Lean 4 repository and write its dataset (needs git, elan and the project's toolchain).

    python examples/trace_repo.py https://github.com/yangky11/lean4-example main
    python examples/trace_repo.py ./my-lean-project --build-deps

Prints what was traced, a few theorems with their first tactic, and where the dataset went.
"""

from __future__ import annotations

import argparse
import logging

from lean_dojo_v2.errors import LeanDojoError
from lean_dojo_v2.lean_dojo import LeanGitRepo, generate_benchmark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", help="GitHub URL, any git remote, or a local path")
    parser.add_argument("commit", nargs="?", help="commit, tag or branch (default: HEAD)")
    parser.add_argument("--build-deps", action="store_true", help="trace dependencies too")
    parser.add_argument("--out", help="parent directory of the dataset (default RAID_DIR/data)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    try:
        repo = LeanGitRepo(args.repo, args.commit)
        print(f"{repo} uses Lean {repo.lean_version}")
        [result] = generate_benchmark([repo], build_deps=args.build_deps, output_dir=args.out)
    except LeanDojoError as exc:  # tracing errors, no Lean (LeanNotFoundError): each says the fix
        print(f"error: {exc}")
        return 1

    traced = result.traced_repo
    print(f"traced {len(traced.files)} files; {result.total_theorems} theorems")
    for thm in list(traced.theorems())[:5]:
        first = thm.traced_tactics[0].tactic if thm.traced_tactics else "(term-mode proof)"
        print(f"  {thm.full_name}: {first}")
    if traced.failures:
        print(f"{len(traced.failures)} files failed to trace: {sorted(traced.failures)[:5]} …")
    print(f"dataset: {result.path}  splits: {result.splits}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
