"""``lean-dojo-v2 eval prove``: a model on a benchmark at a budget (:func:`~.run.evaluate`).

The settings are an :class:`~.config.EvalConfig`, read like every command's config: a YAML
``--config FILE``, then ``--set key=value``, then the flags below (each the key of the same
name); ``--help-config`` lists every key with its doc. The command prints the result (with
``--json`` the last line is one JSON object with at least ``benchmark``, ``mode``, ``verifier``,
``attempted``, ``solved``, ``pass_at``, ``budget``, ``out``); everything else is in ``--out``.

Bad input ends in one line that says what to do, before anything is written: an unknown
benchmark or problem, a statement that does not parse, a price table with a typo, an ``--out``
that cannot be written or holds another evaluation, a model or server that is not there.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..config.cli import ParserT, add_config_options, add_help_config_option
from .config import GENERATORS, MODES, PARALLEL, VERIFIERS

if TYPE_CHECKING:
    from .summary import EvalResult

__all__ = ["add_eval_prove_parser", "cmd_eval_prove"]

# flag dest -> EvalConfig key, for the flags whose value is the key's (None: not given)
_VALUE_FLAGS = (
    "benchmark",
    "data",
    "split",
    "problems",
    "limit",
    "mode",
    "n",
    "refine_rounds",
    "num_samples",
    "max_expansions",
    "timeout",
    "tactic_timeout",
    "generator",
    "model",
    "base_url",
    "api_key_env",
    "device",
    "temperature",
    "max_tokens",
    "prompt",
    "verifier",
    "project",
    "repl",
    "verdict_cache",
    "workers",
    "parallel",
    "ray_address",
    "out",
    "price_table",
)
_SWITCHES = ("early_stop", "lora", "resume", "force")


def add_eval_prove_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``prove`` on ``sub`` (the subparsers of ``eval``)."""
    p = sub.add_parser(
        "prove",
        help="prove a benchmark's problems: solved, pass@k, budget (miniF2F, ProofNet, "
        "PutnamBench, a LeanDojo split, your JSONL)",
        description="Evaluate a prover on a benchmark: tactic search, n whole proofs, or whole "
        "proofs refined with Lean's error messages; every proof checked by a verifier (lean, "
        "or recorded: proofs a real Lean run accepted). Writes attempts.jsonl as it goes "
        "(--resume continues a killed run), then summary.json, putnambench_entry.json, "
        "solved.png and report.html into --out. See docs/evaluation.md.",
    )
    what = p.add_argument_group("problems")
    what.add_argument(
        "--benchmark",
        default=None,
        help="minif2f-test, minif2f-valid, proofnet-test, proofnet-valid, putnambench, or a "
        "JSONL file of {name, header, formal_statement[, informal_statement]}",
    )
    what.add_argument("--data", default=None, metavar="DIR", help="a LeanDojo dataset instead")
    what.add_argument(
        "--split",
        default=None,
        help="--data: train, val, test or all (default test); novel_premises/test for the other "
        "strategy",
    )
    what.add_argument(
        "--problems", nargs="+", default=None, metavar="NAME", help="only these problems"
    )
    what.add_argument("--limit", type=int, default=None, help="at most N problems (the first)")
    mode = p.add_argument_group("mode and budget")
    mode.add_argument("--mode", default=None, choices=MODES, help="default whole")
    mode.add_argument(
        "--n", type=int, default=None, help="samples per problem (default 8, at most 32768)"
    )
    mode.add_argument(
        "--refine-rounds", type=int, default=None, help="refine: rounds of feedback (default 2)"
    )
    mode.add_argument(
        "--early-stop",
        action="store_true",
        help="stop a problem at its first accepted proof (then counts, not pass@k)",
    )
    mode.add_argument("--num-samples", type=int, default=None, help="tactic: tactics per state")
    mode.add_argument("--max-expansions", type=int, default=None, help="tactic: per problem")
    mode.add_argument("--timeout", type=float, default=None, help="seconds per problem (600)")
    mode.add_argument("--tactic-timeout", type=float, default=None, help="seconds per Lean call")
    gen = p.add_argument_group("generator")
    gen.add_argument("--generator", default=None, choices=GENERATORS, help="default hf")
    gen.add_argument(
        "--model",
        default=None,
        help="hf: a model directory or cached hub id (default smollm2); openai: the served name",
    )
    gen.add_argument("--base-url", default=None, help="openai: e.g. http://localhost:8000/v1")
    gen.add_argument("--api-key-env", default=None, help="openai: default OPENAI_API_KEY")
    gen.add_argument("--lora", action="store_true", help="hf: --model is a PEFT adapter")
    gen.add_argument("--device", default=None, help="hf: auto, cpu, cuda or cuda:N")
    gen.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    gen.add_argument("--max-tokens", type=int, default=None, help="longest proof, in tokens")
    gen.add_argument("--prompt", default=None, metavar="FILE", help="a prompt template file")
    check = p.add_argument_group("verifier")
    check.add_argument("--verifier", default=None, choices=VERIFIERS, help="default lean")
    check.add_argument("--project", default=None, help="lean: the built Lean project (Mathlib)")
    check.add_argument("--repl", default=None, help="lean: the REPL command (else discovered)")
    check.add_argument(
        "--verdict-cache", default=None, metavar="FILE", help="auto (default), a file, or none"
    )
    run = p.add_argument_group("run and output")
    run.add_argument("--workers", type=int, default=None, help="problems at once (default 1)")
    run.add_argument("--parallel", default=None, choices=PARALLEL, help="default process")
    run.add_argument("--ray-address", default=None, help="ray: the cluster to join")
    run.add_argument("--out", default=None, metavar="DIR", help="the output directory")
    run.add_argument("--resume", action="store_true", help="continue the evaluation in --out")
    run.add_argument("--force", action="store_true", help="replace what --out holds")
    run.add_argument("--price-table", default=None, metavar="FILE", help="dollars per M tokens")
    run.add_argument("--json", action="store_true", help="print one JSON object (last line)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_options(
        run,
        config_help="YAML file of EvalConfig keys",
        set_help="set one EvalConfig key (repeatable): --set n=32 --set temperature=1.0",
        output_dir=False,
    )
    add_help_config_option(run, "lean_dojo_v2.evaluation.config:EvalConfig")
    p.set_defaults(func=cmd_eval_prove)
    return p


def cmd_eval_prove(args: argparse.Namespace) -> int:
    from ..config.cli import config_from_args
    from .config import EvalConfig
    from .run import evaluate

    flags: dict[str, Any] = {
        k: getattr(args, k) for k in _VALUE_FLAGS if getattr(args, k) is not None
    }
    flags.update({k: True for k in _SWITCHES if getattr(args, k)})
    if args.no_progress:
        flags["progress"] = False
    config = config_from_args(args, EvalConfig, **flags)
    # the config file is an input: --out may not hold it (--force would delete it)
    result = evaluate(config, inputs=[args.config] if args.config else [])
    if args.json:
        sys.stdout.write(json.dumps(result.line(), default=str) + "\n")
    else:
        print_result(result)
    return 0


def _ks(n: int) -> list[int]:
    """The ks a table shows: powers of two up to n, and n."""
    ks = [k for k in (2**i for i in range(20)) if k <= n]
    return ks if ks[-1] == n else [*ks, n]


def print_result(result: EvalResult) -> None:
    """The result as a few lines of text."""
    p = sys.stdout.write
    share = f" ({100 * result.solved / result.attempted:.1f}%)" if result.attempted else ""
    p(
        f"{result.benchmark}, {result.mode} mode, {result.model}, verified by {result.verifier}: "
        f"solved {result.solved} of {result.attempted}{share}\n"
    )
    if result.pass_at is not None:
        cells = "  ".join(f"pass@{k} {result.pass_at[str(k)]:.3f}" for k in _ks(result.n))
        p(f"  {cells}\n")
    else:
        cells = "  ".join(f"{k}: {result.solved_at[str(k)]}" for k in _ks(result.n))
        p(f"  solved within the first k samples (early stop: no pass@k)  {cells}\n")
    b = result.budget
    spent = (
        f"{b.attempts} attempts, {b.tokens_in} tokens in, {b.tokens_out} out, "
        f"{b.generator_seconds:.1f} generator s, {b.lean_calls} Lean calls, "
        f"{b.lean_cpu_seconds:.1f} Lean CPU s, {b.wall_seconds:.1f} wall s"
    )
    if b.gpu_seconds:
        spent += f", {b.gpu_seconds:.1f} GPU s"
    if b.dollars is not None:
        spent += f", ${b.dollars:.2f}"
    p(f"  budget: {spent}\n")
    if result.verifier != "lean":
        p(
            f"  (verifier {result.verifier}: not a Lean check of new proofs; see "
            "docs/evaluation.md)\n"
        )
    p(f"  out: {result.out} (summary.json, attempts.jsonl, report.html)\n")
