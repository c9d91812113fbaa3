"""Layer 4: evaluation as the field reports it — a model on a standard benchmark at a budget.

The problems (:mod:`.benchmarks`: miniF2F, ProofNet, PutnamBench bundled with their licences, a
user's JSONL, a LeanDojo dataset's split), who decides that a proof counts (:mod:`.verifiers`:
Lean, the recorded verifier, replay; :mod:`.verdict_cache`), and the run with its results
(:func:`evaluate`, ``lean-dojo-v2 eval prove``). See ``docs/evaluation.md``.

Names are imported on first use: importing this package loads none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..errors import DataFormatError
    from .benchmarks import BENCHMARKS, bundled_benchmarks_dir, load_benchmark, load_jsonl
    from .budget import Budget, PriceTable, load_price_table
    from .config import EvalConfig
    from .errors import (
        EvalFactoryError,
        EvalOutputError,
        EvalOutputExistsError,
        EvalReportError,
        EvaluationError,
        PriceTableError,
        ReportInputError,
        StatementError,
        UnknownBenchmarkError,
        UnknownProblemError,
        VerifierError,
    )
    from .passk import pass_at_k
    from .problems import Benchmark, Problem
    from .recorded import RecordedEnv, RecordedProof, RecordedProofs
    from .report_data import ReportData, read_report_data
    from .report_html import write_report_html
    from .run import evaluate, prepare
    from .statements import check_statement, normalise_proof, remove_comments
    from .summary import EvalResult
    from .verdict_cache import CachedEnv, VerdictCache, cached
    from .verifiers import VERIFIERS, AxiomCheckedEnv, make_verifier_env

_EXPORTS = {
    "DataFormatError": "..errors",
    "BENCHMARKS": ".benchmarks",
    "bundled_benchmarks_dir": ".benchmarks",
    "load_benchmark": ".benchmarks",
    "load_jsonl": ".benchmarks",
    "Budget": ".budget",
    "PriceTable": ".budget",
    "load_price_table": ".budget",
    "EvalConfig": ".config",
    "EvalFactoryError": ".errors",
    "EvalOutputError": ".errors",
    "EvalOutputExistsError": ".errors",
    "EvalReportError": ".errors",
    "EvaluationError": ".errors",
    "PriceTableError": ".errors",
    "ReportInputError": ".errors",
    "StatementError": ".errors",
    "UnknownBenchmarkError": ".errors",
    "UnknownProblemError": ".errors",
    "VerifierError": ".errors",
    "pass_at_k": ".passk",
    "Benchmark": ".problems",
    "Problem": ".problems",
    "RecordedEnv": ".recorded",
    "RecordedProof": ".recorded",
    "RecordedProofs": ".recorded",
    "ReportData": ".report_data",
    "read_report_data": ".report_data",
    "write_report_html": ".report_html",
    "evaluate": ".run",
    "prepare": ".run",
    "check_statement": ".statements",
    "normalise_proof": ".statements",
    "remove_comments": ".statements",
    "EvalResult": ".summary",
    "CachedEnv": ".verdict_cache",
    "VerdictCache": ".verdict_cache",
    "cached": ".verdict_cache",
    "VERIFIERS": ".verifiers",
    "AxiomCheckedEnv": ".verifiers",
    "make_verifier_env": ".verifiers",
}
__all__ = [
    "AxiomCheckedEnv",
    "BENCHMARKS",
    "Benchmark",
    "Budget",
    "CachedEnv",
    "DataFormatError",
    "EvalConfig",
    "EvalFactoryError",
    "EvalOutputError",
    "EvalOutputExistsError",
    "EvalReportError",
    "EvalResult",
    "EvaluationError",
    "PriceTable",
    "PriceTableError",
    "Problem",
    "RecordedEnv",
    "RecordedProof",
    "RecordedProofs",
    "ReportData",
    "ReportInputError",
    "StatementError",
    "UnknownBenchmarkError",
    "UnknownProblemError",
    "VERIFIERS",
    "VerdictCache",
    "VerifierError",
    "bundled_benchmarks_dir",
    "cached",
    "check_statement",
    "evaluate",
    "load_benchmark",
    "load_jsonl",
    "load_price_table",
    "make_verifier_env",
    "normalise_proof",
    "pass_at_k",
    "prepare",
    "read_report_data",
    "remove_comments",
    "write_report_html",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
