"""``lean-dojo-v2 db …``: the dynamic database from the command line.

``add_db_parser(subparsers)`` registers ``db`` and its subcommands on the main parser; every handler
takes the parsed arguments, returns an exit code and raises :class:`~lean_dojo_v2.errors.LeanDojoError`
subclasses on bad input (the main CLI prints them).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.cli import ParserT

if TYPE_CHECKING:
    from .dynamic_database import DynamicDatabase

HELP_DB = "database file (default: $RAID_DIR/dynamic_database.sqlite)"

Handler = Callable[[argparse.Namespace], int]


def _open(
    args: argparse.Namespace, *, readonly: bool = True, create: bool = False
) -> DynamicDatabase:
    """The database of ``--db``: read-only unless asked; only ``create`` makes a new one."""
    from .dynamic_database import DynamicDatabase, default_path

    path = Path(args.db) if args.db else default_path()
    return DynamicDatabase(path, readonly=readonly, create=create and not readonly)


def _typed(handler: Handler) -> Handler:
    """SQLite's own errors (a corrupt page met while reading…) as typed one-line errors."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        import sqlite3

        from .connection import default_path, typed_error
        from .errors import DatabaseError

        try:
            return handler(args)
        except sqlite3.Error as exc:
            where = args.db or default_path()
            typed = typed_error(exc, where)
            if typed is exc:
                typed = DatabaseError(f"database {where}: {exc}")
            raise typed from exc

    return run


def _repo_ref(text: str) -> str | tuple[str, str]:
    """``URL@COMMIT`` → (url, commit); a plain URL → its latest version. An ``@`` counts only
    after the last ``/`` (so ``git@host:owner/repo`` is a URL)."""
    head, sep, tail = text.rpartition("@")
    if sep and tail and "/" not in tail and "/" in head:
        return head, tail
    return text


def _print_table(rows: Sequence[Mapping[str, object]], columns: list[str]) -> None:
    widths = {c: max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))


def cmd_db_add(args: argparse.Namespace) -> int:
    from .errors import RepositoryExistsError

    with _open(args, readonly=False, create=True) as db:
        try:
            info = db.add_repository(
                Path(args.path),
                url=args.url,
                commit=args.commit,
                name=args.name,
                lean_version=args.lean_version,
                source_dir=args.source_dir,
                replace=args.replace,
                partial=args.partial,
                exist_ok=False,
            )
            added = True  # by this run's own transaction
        except RepositoryExistsError as exc:
            info, added = exc.repository, False
        missing = db.theorem_files_missing_from_corpus(info) if added else []
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        print(
            f"warning: {len(missing)} theorem files are not in corpus.jsonl ({shown}); their "
            "theorems have no accessible premises",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps({"added": added, **info.to_dict()}))
    else:
        verb = "added" if added else "already present:"
        print(
            f"{verb} {info.url} @ {info.commit[:12]}: {info.total_theorems} theorems "
            f"({info.num_sorry_theorems_unproved} sorry), {info.num_premises} premises"
        )
    return 0


def cmd_db_list(args: argparse.Namespace) -> int:
    with _open(args) as db:
        repos = db.repositories()
    rows = [{"id": r.id, **r.to_dict()} for r in repos]
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no repositories")
        return 0
    for r in rows:
        r["commit"] = r["commit"][:12]
        r["sorry"] = r["num_sorry_theorems_unproved"]
        r["theorems"] = r["total_theorems"]
        r["premises"] = r["num_premises"]
    _print_table(rows, ["id", "url", "commit", "theorems", "sorry", "premises", "date_processed"])
    return 0


def cmd_db_stats(args: argparse.Namespace) -> int:
    with _open(args) as db:
        stats = db.stats()
    if args.json:
        print(json.dumps(stats))
    else:
        width = max(len(k) for k in stats)
        for key, value in stats.items():
            print(f"  {key:<{width}}  {value:>10,}")
    return 0


def cmd_db_export(args: argparse.Namespace) -> int:
    from ..data import SplitSpec

    spec = SplitSpec.parse(args.val, args.test, args.sorry)
    refs = [_repo_ref(r) for r in args.repo] if args.repo else None
    with _open(args) as db:
        result = db.export_merged_data(
            refs,
            Path(args.out),
            spec=spec,
            use_found_proofs=args.use_found_proofs,
            force=args.force,
        )
    if args.json:
        print(json.dumps(result))
    else:
        print(f"wrote {result['path']}: {result['total_theorems']} theorems")
        for strategy, sizes in result["splits"].items():
            print(f"  {strategy:<15} " + "  ".join(f"{k}={v}" for k, v in sizes.items()))
    return 0


def cmd_db_import_json(args: argparse.Namespace) -> int:
    with _open(args, readonly=False, create=True) as db:
        added = db.import_json(Path(args.file))
    if args.json:
        print(json.dumps([r.to_dict() for r in added]))
    else:
        print(f"imported {len(added)} repositories from {args.file}")
        for r in added:
            print(f"  {r.url} @ {r.commit[:12]}: {r.total_theorems} theorems")
    return 0


def cmd_db_export_json(args: argparse.Namespace) -> int:
    refs = [_repo_ref(r) for r in args.repo] if args.repo else None
    with _open(args) as db:
        path = db.export_json(Path(args.out), refs)
    print(f"wrote {path}")
    return 0


def cmd_db_curriculum(args: argparse.Namespace) -> int:
    with _open(args) as db:
        cur = db.curriculum()
    if args.json:
        print(json.dumps(cur.to_dict()))
        return 0
    pct = cur.thresholds.percentiles
    if pct is None:
        print("no theorem with a tactic proof: no thresholds")
    else:
        print(f"thresholds: Easy <= {pct[0]:.2f}, Medium <= {pct[1]:.2f}, Hard > {pct[1]:.2f}")
    rows = [
        {
            "order": i + 1,
            "commit": r.commit[:12],
            **{k: v for k, v in r.to_dict().items() if k != "commit"},
        }
        for i, r in enumerate(cur.repositories)
    ]
    if rows:
        _print_table(rows, ["order", "url", "commit", "easy", "medium", "hard", "hard_no_proof"])
    return 0


def cmd_db_delete(args: argparse.Namespace) -> int:
    with _open(args, readonly=False) as db:
        db.delete_repository(args.url, args.commit)
    print(f"deleted {args.url} @ {args.commit}")
    return 0


def add_db_parser(subparsers: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``db`` (and its subcommands) on the main parser's subparsers."""
    from ..data.splits import add_split_options

    db = subparsers.add_parser(
        "db",
        help="the dynamic database: add repositories, list, export datasets, import upstream JSON",
        description="The dynamic database of traced repositories (SQLite).",
    )
    sub = db.add_subparsers(dest="db_command", metavar="COMMAND")

    def _help(_: argparse.Namespace) -> int:
        db.print_help()
        return 2

    db.set_defaults(func=_help)

    def common(p: argparse.ArgumentParser, handler: Handler, json_flag: bool = True) -> None:
        p.add_argument("--db", metavar="FILE", help=HELP_DB)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(func=_typed(handler))

    def repo_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--repo",
            action="append",
            metavar="URL[@COMMIT]",
            help="repository to include (repeatable; default: all; no commit: latest version)",
        )

    p = sub.add_parser(
        "add",
        help="add a repository version from a LeanDojo dataset directory",
        description="Add a repository version (url + commit) from a LeanDojo-layout dataset "
        "directory, in one transaction. Adding the same url + commit again changes nothing. "
        "Creates the database when absent (the other commands only open an existing one).",
    )
    p.add_argument("path", help="dataset directory (random/, corpus.jsonl, traced_files.jsonl)")
    p.add_argument(
        "--url", help="repository url (default: metadata.json from_repo, or the records)"
    )
    p.add_argument("--commit", help="commit (default: metadata.json from_repo, or the records)")
    p.add_argument("--name", help="repository name (default: from the url)")
    p.add_argument("--lean-version", help="Lean version, e.g. v4.9.0")
    p.add_argument(
        "--source-dir",
        metavar="DIR",
        help="checkout of the repository: theorems whose source contains `sorry` are marked sorry",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the version if present (its recorded proofs are dropped)",
    )
    p.add_argument(
        "--partial",
        action="store_true",
        help="accept a dataset missing split files or corpus.jsonl (default: refuse, naming them)",
    )
    common(p, cmd_db_add)

    p = sub.add_parser("list", help="list repository versions with their counts")
    common(p, cmd_db_list)

    p = sub.add_parser("stats", help="counts over the whole database")
    common(p, cmd_db_stats)

    p = sub.add_parser(
        "export",
        help="write a merged LeanDojo-layout dataset",
        description="Write the theorems, corpus and traced files of repositories as one LeanDojo "
        "dataset (random and novel_premises splits). Duplicated theorems come from the most "
        "recently processed version.",
    )
    p.add_argument(
        "out",
        help="output directory: absent, empty, or a dataset this library wrote (replaced "
        "atomically)",
    )
    repo_option(p)
    add_split_options(p)
    p.add_argument(
        "--use-found-proofs",
        action="store_true",
        help="write former sorry theorems that we proved with their found proof as tactics",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace OUT even if it holds files this library did not write",
    )
    common(p, cmd_db_export)

    p = sub.add_parser(
        "import-json",
        help="import an upstream LeanAgent / LeanDojo-v2 dynamic_database.json",
    )
    p.add_argument("file", help="the upstream dynamic_database.json")
    common(p, cmd_db_import_json)

    p = sub.add_parser(
        "export-json",
        help="write the upstream dynamic_database.json format",
    )
    p.add_argument("out", help="output JSON file")
    repo_option(p)
    common(p, cmd_db_export_json, json_flag=False)

    p = sub.add_parser(
        "curriculum",
        help="repositories in LeanAgent's curriculum order (most easy theorems first)",
    )
    common(p, cmd_db_curriculum)

    p = sub.add_parser("delete", help="delete a repository version")
    p.add_argument("url")
    p.add_argument("commit")
    common(p, cmd_db_delete, json_flag=False)
    return db
