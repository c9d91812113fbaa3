"""``lean-dojo-v2 prove``: proof search over the theorems of a dataset, with recording and
write-back.

Reads the theorems of one split of a LeanDojo-layout dataset and proves them through the
proving pipeline (:class:`~lean_dojo_v2.prover.pipeline.ProveRun`: worker processes by default,
Ray or inline; the proofs recorded in a database with ``--db`` and written back into a working
copy of the repository with ``--write-back``), then prints a summary (with ``--json`` the last
line is one JSON object). The search settings are a :class:`~lean_dojo_v2.prover.search.SearchConfig`,
read like every trainer's config: a YAML ``--config FILE``, then ``--set key=value`` overrides,
then the explicit search flags (``--num-samples``, ``--max-expansions``, ``--timeout``,
``--tactic-timeout``, ``--whole-proof``, ``--mode``, ``--refine-rounds``), which are shortcuts
for their keys; ``--help-config`` lists every key with its doc.

Bad input ends in one line that says what to do, before any work starts: an unknown dataset,
split or theorem, a config key or value, a dataset with nothing the environment can start, a
model that does not exist, an OpenAI-compatible server that cannot be reached or does not serve
the model, no Pantograph REPL, a ``--ray-address`` where no Ray cluster answers.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.cli import ParserT, add_config_options, add_help_config_option
from ..errors import LeanDojoError

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..database import DynamicDatabase
    from .pipeline import WriteBackRequest
    from .recording import RecordingSummary
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import EnvFactory, GeneratorFactory

logger = logging.getLogger(__name__)

__all__ = ["NoProvableTheoremsError", "add_prove_parser", "cmd_prove"]

SPLITS = ("test", "val", "train", "all")


class NoProvableTheoremsError(LeanDojoError, ValueError):
    """``prove`` found nothing to prove: the split holds no theorem, ``--theorem`` selected none,
    or (``--backend replay``) no theorem of it has a recorded tactic proof, the only ones
    ``ReplayEnv`` can start."""


def add_prove_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register the ``prove`` subcommand on ``sub`` (the top-level subparsers)."""
    p = sub.add_parser(
        "prove",
        help="search for proofs of a dataset's theorems (record them, write them back)",
        description="Best-first (or whole-proof) search for a proof of every theorem of one "
        "split of a LeanDojo dataset. --backend replay (default) replays transitions recorded "
        "in the dataset itself: it runs anywhere but proves only what was recorded, and every "
        "result says backend replay. --backend pantograph checks tactics with Lean. A proof "
        "counts only after a whole-proof re-check. See docs/proving.md.",
    )
    p.add_argument("--data", required=True, help="a LeanDojo-layout dataset directory")
    p.add_argument("--split", default="test", choices=SPLITS, help="which theorems (default test)")
    p.add_argument(
        "--strategy",
        default="random",
        choices=["random", "novel_premises"],
        help="split strategy (default random)",
    )
    p.add_argument(
        "--theorem",
        action="append",
        default=None,
        metavar="NAME",
        help="prove only this theorem (full name; repeatable)",
    )
    p.add_argument("--limit", type=int, default=None, help="at most N theorems (the first N)")
    env = p.add_argument_group("Lean environment")
    env.add_argument(
        "--backend",
        default="replay",
        choices=["replay", "pantograph"],
        help="replay: the dataset's recorded transitions; pantograph: a real Lean REPL",
    )
    env.add_argument(
        "--project", default=None, help="pantograph: the Lean project (built) the theorems are in"
    )
    env.add_argument("--repl", default=None, help="pantograph: the REPL command (else discovered)")
    env.add_argument(
        "--imports",
        default=None,
        help="pantograph: comma-separated modules to import (default: Init)",
    )
    gen = p.add_argument_group("generator")
    gen.add_argument("--generator", default="hf", choices=["hf", "openai"], help="default hf")
    gen.add_argument(
        "--model",
        default=None,
        help="hf: smollm2 (default), a model directory, a .gguf file or a cached hub id; "
        "openai: the model name the server serves (required)",
    )
    gen.add_argument("--lora", action="store_true", help="hf: --model is a PEFT adapter directory")
    gen.add_argument("--device", default="auto", help="hf: auto, cpu, cuda or cuda:N")
    gen.add_argument(
        "--base-url", default=None, help="openai: the API root, e.g. http://localhost:8000/v1"
    )
    gen.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="openai: the environment variable holding the API key (default OPENAI_API_KEY)",
    )
    search = p.add_argument_group("search")
    add_config_options(
        search,
        config_help="YAML file of SearchConfig keys",
        set_help="override one SearchConfig key (repeatable), typed by the key: "
        "--set max_expansions=20 --set frontier_batch=8",
        output_dir=False,
    )
    add_help_config_option(search, "lean_dojo_v2.prover.search:SearchConfig")
    # The flags below override --config and --set; None means "not given" (their defaults, in
    # the help texts, are SearchConfig's).
    search.add_argument("--num-samples", type=int, default=None, help="tactics per state (8)")
    search.add_argument("--max-expansions", type=int, default=None, help="per theorem (100)")
    search.add_argument("--timeout", type=float, default=None, help="seconds per theorem (600)")
    search.add_argument("--tactic-timeout", type=float, default=None, help="seconds per tactic")
    search.add_argument(
        "--whole-proof", action="store_true", help="sample whole proofs and verify each"
    )
    search.add_argument(
        "--mode",
        choices=("tactic", "whole", "refine"),
        default=None,
        help="tactic: best-first search (the default); whole: sample whole proofs, verify each; "
        "refine: whole proofs, then rounds that send Lean's first error back (--refine-rounds)",
    )
    search.add_argument(
        "--refine-rounds",
        type=int,
        default=None,
        metavar="R",
        help="refinement rounds after a failed whole proof, --mode refine (2)",
    )
    search.add_argument(
        "--progress-model",
        default=None,
        metavar="DIR",
        help="a progress model (from `train progress`) to rank states by predicted steps "
        "remaining (default: $LEANPROGRESS_MODEL when set)",
    )
    search.add_argument(
        "--progress-weight",
        type=float,
        default=None,
        metavar="W",
        help="weight of the progress model's predicted steps in the priority (default 0.5 with "
        "a progress model, 0 without; 0 turns $LEANPROGRESS_MODEL off)",
    )
    par = p.add_argument_group("parallelism")
    par.add_argument("--workers", type=int, default=1, help="parallel workers (default 1)")
    par.add_argument(
        "--parallel",
        default="process",
        choices=["process", "ray", "inline"],
        help="worker processes (default), Ray actors, or inline in this process (with "
        "--workers N: N searches at once sharing one model, its calls batched)",
    )
    par.add_argument(
        "--ray-address", default=None, help="ray: the cluster to join (auto, ray://head:10001)"
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--db",
        default=None,
        help="record proofs in this existing DynamicDatabase file (create it with `db add`)",
    )
    out.add_argument(
        "--write-back",
        default=None,
        metavar="REPO_DIR",
        help="write proofs in place of sorry into a working copy of this repository",
    )
    out.add_argument("--branch", default=None, help="write-back: commit on this new branch")
    out.add_argument(
        "--out",
        default=None,
        help="write-back: the working copy's directory (default RAID_DIR/writeback/<repo>)",
    )
    out.add_argument(
        "--in-place",
        action="store_true",
        help="write-back: edit REPO_DIR itself instead of a working copy (your checkout!)",
    )
    out.add_argument(
        "--force", action="store_true", help="write-back: replace a --out we did not write"
    )
    out.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_prove)
    return p


# -- input ---------------------------------------------------------------------------------------


def _select_theorems(args: argparse.Namespace) -> tuple[list[Theorem], int]:
    """The theorems to prove and how many were left out because the environment cannot start
    them (replay: no recorded tactic proof)."""
    from ..data.dataset import DatasetDir
    from ..errors import DatasetNotFoundError
    from ..interaction.types import UnknownTheoremError

    data = Path(args.data)
    if not data.is_dir():
        raise DatasetNotFoundError(
            f"no dataset directory at {data}; pass a LeanDojo-layout dataset (random/, "
            "novel_premises/, corpus.jsonl)"
        )
    d = DatasetDir(data)
    if args.split == "all":
        theorems = list(d.all_theorems(args.strategy))
    else:
        theorems = d.theorems(args.strategy, args.split)
    where = f"{data} ({args.strategy}/{args.split})"
    if args.theorem:
        by_name = {t.full_name: t for t in theorems}
        missing = [n for n in args.theorem if n not in by_name]
        if missing:
            raise UnknownTheoremError(
                f"theorem {missing[0]!r} is not in {where}; the environment cannot start it "
                "(check the name, or choose --split all)"
            )
        theorems = [by_name[n] for n in dict.fromkeys(args.theorem)]
    if not theorems:
        raise NoProvableTheoremsError(f"{where} holds no theorem; choose another --split")
    left_out = 0
    if args.backend == "replay":
        startable = [t for t in theorems if t.traced_tactics]
        left_out = len(theorems) - len(startable)
        if not startable:
            raise NoProvableTheoremsError(
                f"none of the {len(theorems)} theorem(s) of {where} has a recorded tactic proof, "
                "so --backend replay cannot start any (term-mode proofs have none); choose "
                "another split or use --backend pantograph"
            )
        theorems = startable
    if args.limit is not None:
        if args.limit < 1:
            raise NoProvableTheoremsError(f"--limit must be at least 1, got {args.limit}")
        theorems = theorems[: args.limit]
    return theorems, left_out


def _check_endpoint(base_url: str, model: str, api_key: str | None) -> None:
    """Fail early, in one line, when the server cannot be reached, answers ``GET
    {base_url}/models`` with something that is not a model list, or does not serve ``model``
    (:func:`~lean_dojo_v2.prover.external_prover.check_endpoint`)."""
    from .external_prover import check_endpoint

    hint = "start it (e.g. `vllm serve MODEL`) or point --base-url elsewhere"
    check_endpoint(base_url, model, api_key, hint=hint)


def _generator_spec(args: argparse.Namespace) -> GeneratorFactory:
    from .parallel import ExternalProverSpec, HFProverSpec

    if args.generator == "openai":
        from .external_prover import DEFAULT_BASE_URL, ExternalModelError

        if not args.model:
            raise ExternalModelError(
                "--generator openai needs --model: the model name the server serves"
            )
        base_url = args.base_url or DEFAULT_BASE_URL
        key = os.environ.get(args.api_key_env) if args.api_key_env else None
        _check_endpoint(base_url, args.model, key)
        return ExternalProverSpec(args.model, base_url, args.api_key_env)
    if args.base_url:
        raise LeanDojoError("--base-url is only used with --generator openai")
    from ..models.loading import resolve_model_path

    if args.lora:
        from ..errors import ModelNotFoundError

        if not args.model or not (Path(args.model) / "adapter_config.json").is_file():
            raise ModelNotFoundError(
                f"--lora needs --model to be a PEFT adapter directory; {args.model!r} is not one"
            )
        return HFProverSpec(str(Path(args.model).resolve()), args.device, {"use_lora": True})
    model = resolve_model_path(args.model)  # unknown models fail here, in one line
    return HFProverSpec(model, args.device)


def _env_spec(args: argparse.Namespace, tactic_timeout: float) -> EnvFactory:
    from .parallel import PantographEnvSpec, ReplayEnvSpec

    if args.backend == "replay":
        return ReplayEnvSpec(str(Path(args.data).resolve()))
    from ..interaction.pantograph.locate import locate_repl

    located = locate_repl(args.repl)  # no REPL: LeanNotFoundError, in one line
    config: dict[str, Any] = {"command": list(located.command)}
    if args.project:
        config["project_dir"] = str(Path(args.project).resolve())
    if args.imports:
        config["imports"] = [m.strip() for m in args.imports.split(",") if m.strip()]
    config["tactic_timeout"] = tactic_timeout
    return PantographEnvSpec(config)


# -- the command ---------------------------------------------------------------------------------


def cmd_prove(args: argparse.Namespace) -> int:
    from ..config.cli import config_from_args
    from ..errors import ConfigError
    from .pipeline import ProofJob, ProveRun
    from .search import SearchConfig

    for name in ("workers", "num_samples", "max_expansions"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    if args.write_back is None and (args.branch or args.in_place or args.out):
        raise ConfigError("--branch, --out and --in-place go with --write-back REPO_DIR")
    if args.parallel == "ray":
        from .ray_cluster import check_ray

        check_ray(args.ray_address)  # an address that answers nothing: one error, in seconds
    # Everything that can be refused is refused here, before a search whose proofs would be lost.
    if args.db:
        _check_db(args.db)
    theorems, left_out = _select_theorems(args)
    if left_out:
        logger.info(
            "%d theorem(s) without a recorded tactic proof left out (replay cannot start them)",
            left_out,
        )
    request = _write_back_request(args)
    if request is not None:
        request = request.check(theorems)  # before a model is loaded or a server asked
    config = _with_progress_model(config_from_args(args, SearchConfig, **_search_flags(args)))
    make_generator = _generator_spec(args)
    job = ProofJob(theorems, _env_spec(args, config.tactic_timeout), write_back=request)
    db = _open_db(args.db) if args.db else None
    try:
        report = ProveRun(
            make_generator,
            config,
            workers=args.workers,
            parallel=args.parallel,
            ray_address=args.ray_address,
            progress=not args.no_progress,
            database=db,
            model=str(args.model or "smollm2"),
        ).run([job])
    finally:
        if db is not None:
            db.close()
    (done,) = report.jobs
    summary = _summary(
        args, report.results, report.seconds, left_out, report.recorded, done.write_back, config
    )
    if args.json:
        print(json.dumps(summary))
    else:
        _print_summary(summary)
    sys.stdout.flush()
    if done.write_back_error is not None:
        from .writeback import WriteBackError

        # The proofs are printed (and recorded) above; only now does the write-back fail.
        where = " and recorded in the database" if report.recorded is not None else ""
        written = done.write_back or {}
        raise WriteBackError(
            f"write-back failed after the search: {written['error']}; "
            f"{written['what_was_written']} (the {summary['proved']} proof(s) found are "
            f"printed above{where})"
        ) from done.write_back_error
    return 0


def _write_back_request(args: argparse.Namespace) -> WriteBackRequest | None:
    """``--write-back`` and its options as the pipeline's request (None without it)."""
    if args.write_back is None:
        return None
    from .pipeline import WriteBackRequest

    return WriteBackRequest(
        Path(args.write_back),
        out=Path(args.out) if args.out is not None else None,
        in_place=args.in_place,
        branch=args.branch,
        force=args.force,
    )


def _check_db(path: str) -> None:
    """``--db`` names an existing database: it is opened for writing proofs only after the
    search, and ``prove`` never creates one (``db add`` / ``db import-json`` do)."""
    from ..database import DynamicDatabase

    DynamicDatabase(path, create=False).close()  # DatabaseNotFoundError, in one line


def _with_progress_model(config: SearchConfig) -> SearchConfig:
    """``config`` with the progress model it asks for (``--progress-model``, else
    ``$LEANPROGRESS_MODEL``) checked and given as an absolute ``progress_model_path``, so that
    every worker (processes, Ray actors) loads the same one. A path that holds no progress model
    is refused here, before any search; a weight > 0 without a model likewise."""
    import dataclasses

    from ..errors import ConfigError

    source = config.progress_model_source()
    if source is None:
        if config.progress_weight:
            raise ConfigError(
                f"--progress-weight {config.progress_weight} needs a progress model: pass "
                "--progress-model DIR or set LEANPROGRESS_MODEL (or use --progress-weight 0)"
            )
        return config
    from ..models.progress import check_progress_model

    folder = check_progress_model(source)
    if config.search_mode != "tactic":
        logger.warning(
            "whole-proof search ranks no states: the progress model %s is not used", source
        )
    return dataclasses.replace(config, progress_model_path=str(folder.resolve()))


def _search_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The SearchConfig keys given by explicit flags (they override ``--config`` and ``--set``)."""
    flags = {
        key: getattr(args, key)
        for key in ("num_samples", "max_expansions", "timeout", "tactic_timeout")
        if getattr(args, key) is not None
    }
    if args.whole_proof:  # a store_true flag: absent leaves the config's whole_proof alone
        flags["whole_proof"] = True
    if args.mode is not None:
        flags["mode"] = args.mode
    if args.refine_rounds is not None:
        flags["refine_rounds"] = args.refine_rounds
    if args.progress_model is not None:
        flags["progress_model_path"] = args.progress_model
    if args.progress_weight is not None:
        flags["progress_weight"] = args.progress_weight
    return flags


def _open_db(path: str) -> DynamicDatabase:
    from ..database import DynamicDatabase

    return DynamicDatabase(path, create=False)


def _summary(
    args: argparse.Namespace,
    results: list[SearchResult],
    seconds: float,
    left_out: int,
    recorded: RecordingSummary | None,
    written: dict[str, Any] | None,
    config: SearchConfig | None = None,
) -> dict[str, Any]:
    counts = Counter(r.status for r in results)
    backends = sorted({r.backend for r in results if r.backend != "unknown"})
    out: dict[str, Any] = {
        "backend": backends[0] if len(backends) == 1 else (backends or [args.backend]),
        "attempted": len(results),
        "proved": counts.get("proved", 0),
        "failed": counts.get("failed", 0),
        "timeout": counts.get("timeout", 0),
        "error": counts.get("error", 0),
        "expansions": sum(r.expansions for r in results),
        "seconds": round(seconds, 3),
        "proofs": {r.theorem: list(r.proof or []) for r in results if r.status == "proved"},
        "checked_by": dict(Counter(r.checked_by for r in results if r.status == "proved")),
        "left_out_no_tactic_proof": left_out,
        "generator": args.generator,
        "model": args.model or ("smollm2" if args.generator == "hf" else None),
        "split": args.split,
        "strategy": args.strategy,
        "workers": args.workers,
        "parallel": args.parallel,
        "errors": {r.theorem: r.error for r in results if r.status == "error"},
    }
    if config is not None and config.search_mode == "tactic":
        model = config.progress_model_path if config.progress_weight != 0 else None
        out["progress_model"] = model
        out["progress_weight"] = config.effective_progress_weight(model is not None)
    if recorded is not None:
        out["db"] = recorded.to_dict()
    if written is not None:
        out["write_back"] = written
    return out


def _print_summary(s: dict[str, Any]) -> None:
    p = sys.stdout.write
    p(
        f"proved {s['proved']} of {s['attempted']} theorem(s) in {s['seconds']:.1f} s "
        f"({s['expansions']} expansions; backend {s['backend']}; failed {s['failed']}, "
        f"timeout {s['timeout']}, error {s['error']})\n"
    )
    if s["backend"] == "replay":
        p("  (replay proves only recorded proofs: evidence of the pipeline, not of Lean)\n")
    for name, tactics in s["proofs"].items():
        p(f"  {name}:\n")
        for t in tactics:
            p("      " + t.replace("\n", "\n      ") + "\n")
    for name, error in list(s["errors"].items())[:5]:
        p(f"  error {name}: {error}\n")
    if "db" in s:
        d = s["db"]
        p(f"recorded {d['recorded']} proof(s) in the database")
        p(f" ({len(d['not_in_db'])} theorem(s) not in it)\n" if d["not_in_db"] else "\n")
    if "write_back" in s and "error" in s["write_back"]:
        w = s["write_back"]
        p(f"not written back ({w['what_was_written']}): {w['error']}\n")
    elif "write_back" in s:
        w = s["write_back"]
        p(f"wrote {len(w['written'])} proof(s) into {w.get('workdir', '-')}")
        p(f" on branch {w['branch']}" if w.get("branch") else "")
        p(f"; diff: {w['diff_file']}\n" if w.get("diff_file") else "\n")
        for name, why in w["skipped"].items():
            p(f"  not written: {name}: {why}\n")
