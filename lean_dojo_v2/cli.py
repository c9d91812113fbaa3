"""The ``lean-dojo-v2`` command.

Heavy modules are imported inside the command that needs them, so ``--help`` and the data commands
start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .errors import LeanDojoError

log = logging.getLogger("lean_dojo_v2")


def _print_stats(stats: Mapping[str, object], as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps(stats))
        return
    print(title)
    width = max(len(k) for k in stats)
    for key, value in stats.items():
        print(f"  {key:<{width}}  {value:>10,}")


def cmd_data_stats(args: argparse.Namespace) -> int:
    from .data.stats import dataset_report

    report = dataset_report(args.path, args.strategy, partial=args.partial)
    missing = report.missing_from_corpus
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        log.warning(
            "%d theorem file(s) are not in %s/corpus.jsonl (%s): their theorems have no "
            "accessible premises; add those files (with their imports) to the corpus",
            len(missing),
            args.path,
            shown,
        )
    retrieval = report.retrieval_warning(args.path)
    if retrieval:
        log.warning("%s", retrieval)
    stats: dict[str, object] = dict(report.stats.to_dict())
    if args.json and report.corpus is not None:
        stats["corpus"] = report.corpus.to_dict()
    _print_stats(stats, args.json, f"{args.path}")
    if not args.json and report.corpus is not None:
        _print_stats(report.corpus.to_dict(), False, "corpus.jsonl")
    return 0


def cmd_data_split(args: argparse.Namespace) -> int:
    from .data.dataset import DatasetDir, load_theorems, write_split_dataset
    from .data.output_dir import check_output_dir
    from .data.splits import split_spec_from_args
    from .errors import DatasetNotFoundError

    spec = split_spec_from_args(args)
    src = Path(args.src)
    if not src.exists():
        raise DatasetNotFoundError(f"no split file or dataset directory at {src}")
    sources = [src] + ([Path(args.previous)] if args.previous else [])
    # Refuse a bad output before reading a large input.
    check_output_dir(args.dst, force=args.force, sources=sources)
    theorems = load_theorems(src, partial=args.partial)
    corpus, traced, meta = [], [], None
    if src.is_dir():
        d = DatasetDir(src, partial=args.partial)
        corpus, traced, meta = list(d.corpus_files()), d.traced_files(), d.metadata() or None
    previous = None
    if args.previous:
        previous = {"novel_premises": DatasetDir(args.previous).strategy_splits("novel_premises")}
    sizes = write_split_dataset(
        args.dst,
        theorems,
        spec,
        corpus,
        traced,
        meta,
        previous,
        force=args.force,
        sources=sources,
    )
    if args.json:
        print(json.dumps(sizes))
    else:
        print(f"wrote {args.dst}")
        for strategy, by_split in sizes.items():
            print(f"  {strategy:<15} " + "  ".join(f"{k}={v}" for k, v in by_split.items()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .config.cli import CommandParser
    from .data.splits import add_split_options
    from .version import __version__

    parser = CommandParser(
        prog="lean-dojo-v2",
        description="Trace Lean 4 repositories, build datasets, train provers and search for proofs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error (also LEAN_DOJO_V2_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from .quickstart.cli import add_quickstart_parser

    add_quickstart_parser(sub)

    data = sub.add_parser("data", help="inspect and split LeanDojo-layout datasets")
    data_sub = data.add_subparsers(dest="data_command", metavar="COMMAND")
    data.set_defaults(func=lambda a: _help(data))

    st = data_sub.add_parser(
        "stats",
        help="counts for a split file or a dataset directory",
        description="Print theorems, tactic_proofs, tactics, premise_uses, distinct_premises and "
        "sorry_theorems for a split file (JSON list) or a dataset directory (every theorem once). "
        "Warns about theorem files that a directory's corpus.jsonl lacks.",
    )
    st.add_argument("path", help="a split file such as random/train.json, or a dataset directory")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.add_argument(
        "--strategy",
        default="random",
        choices=["random", "novel_premises"],
        help="which split strategy to read theorems from in a directory (default: random)",
    )
    _add_partial_option(st)
    st.set_defaults(func=cmd_data_stats)

    sp = data_sub.add_parser(
        "split",
        help="write both splits (random, novel_premises) of a set of theorems",
        description="Read theorems from SRC (a split file or a dataset directory) and write a "
        "LeanDojo-layout dataset with random and novel_premises splits to DST. DST must be new, "
        "empty or a dataset lean-dojo-v2 wrote (then it is replaced atomically), and never SRC "
        "or a directory holding it.",
    )
    sp.add_argument("src", help="split file or dataset directory")
    sp.add_argument("dst", help="output dataset directory")
    add_split_options(sp)
    sp.add_argument(
        "--previous",
        metavar="DIR",
        help="an earlier dataset of (part of) these theorems: theorems already placed keep their "
        "splits, so growing data never moves them (random splits with ratios are stable anyway)",
    )
    sp.add_argument(
        "--force",
        action="store_true",
        help="replace DST even if it holds files lean-dojo-v2 did not write (they are deleted)",
    )
    _add_partial_option(sp)
    sp.add_argument("--json", action="store_true", help="print split sizes as JSON")
    sp.set_defaults(func=cmd_data_split)

    from .agent.doctor import add_doctor_parser
    from .database.cli import add_db_parser
    from .evaluation.cli import add_eval_prove_parser
    from .evaluation.report_cli import add_eval_report_parser
    from .external_api.cli import add_serve_parser
    from .lean_dojo.cli import add_trace_parser
    from .models.cli import add_generate_parser
    from .models.retrieval_cli import add_eval_retrieval_parser
    from .prover.cli import add_prove_parser
    from .trainer.cli import add_train_parser
    from .v1.run import add_v1_run_parser

    add_trace_parser(sub)
    add_db_parser(sub)
    add_generate_parser(sub)
    ev = sub.add_parser(
        "eval", help="evaluate models: proving on benchmarks (pass@k, budget), premise retrieval"
    )
    ev_sub = ev.add_subparsers(dest="eval_command", metavar="COMMAND")
    ev.set_defaults(func=lambda a: _help(ev))
    add_eval_prove_parser(ev_sub)
    add_eval_report_parser(ev_sub)
    add_eval_retrieval_parser(ev_sub)
    add_train_parser(sub)
    add_prove_parser(sub)
    add_serve_parser(sub)
    add_doctor_parser(sub)
    add_v1_run_parser(sub)
    return parser


def _add_partial_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partial",
        action="store_true",
        help="accept a dataset directory that lacks split files or corpus.jsonl (default: refuse)",
    )


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    from .config.cli import UsageExit

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageExit as exc:  # its one line is printed; --help and --version still exit 0
        return int(exc.code or 1)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose or args.debug else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # httpx logs every request at INFO: one line per sample of a served model, and a line
    # before a bad input's one-line error. --verbose shows them.
    quiet = not (args.verbose or args.debug)
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        return _help(parser)
    import sqlite3

    debug = args.debug or os.environ.get("LEAN_DOJO_V2_DEBUG", "") not in ("", "0")
    try:
        return func(args)
    except LeanDojoError as exc:
        if debug:
            raise
        from .system.ranks import is_main_process

        # A launched run's typed errors come alike from every process (the same checks, or the
        # main process's refusal shared): rank 0 says it once.
        if is_main_process():
            print(f"lean-dojo-v2: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if debug:
            raise
        from .system.ranks import is_main_process

        if is_main_process():
            print(
                "lean-dojo-v2: interrupted; what was written so far is kept (train: the same "
                "command resumes from the last checkpoint; eval prove: add --resume)",
                file=sys.stderr,
            )
        return 130  # 128 + SIGINT, as a shell reports a Ctrl-C
    except (OSError, UnicodeError, sqlite3.DatabaseError) as exc:
        # The last line of defence: input and system errors the library did not turn into a
        # typed error still end in one line (the traceback is there with --debug).
        if debug:
            raise
        print(f"lean-dojo-v2: error: {_describe(exc)} (--debug shows where)", file=sys.stderr)
        return 1


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return f"{exc.strerror}{where}"
    return " ".join(f"{type(exc).__name__}: {exc}".split())


if __name__ == "__main__":
    sys.exit(main())
