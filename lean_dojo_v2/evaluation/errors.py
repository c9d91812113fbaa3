"""Layer 4 (evaluation): the errors of loading a benchmark and of checking its proofs.

Each is one line that says what to do; the command line prints it as ``lean-dojo-v2: error: …``.
A malformed line of a user's JSONL is the shared :class:`~lean_dojo_v2.errors.DataFormatError`
(file, line and field named), re-exported here.
"""

from __future__ import annotations

from ..errors import DataFormatError, LeanDojoError, OutputExistsError

__all__ = [
    "DataFormatError",
    "EvalFactoryError",
    "EvalOutputError",
    "EvalOutputExistsError",
    "EvalReportError",
    "EvaluationError",
    "PriceTableError",
    "ReportInputError",
    "StatementError",
    "UnknownBenchmarkError",
    "UnknownProblemError",
    "VerifierError",
]


class EvaluationError(LeanDojoError):
    """Base class of the evaluation's own errors."""


class UnknownBenchmarkError(EvaluationError, LookupError):
    """A benchmark name that is neither bundled nor a JSONL file; the message lists the bundled
    names."""


class UnknownProblemError(EvaluationError, LookupError):
    """A problem name (``--problems``) that the benchmark does not hold; the message names the
    closest ones."""


class StatementError(EvaluationError, ValueError):
    """A formal statement that cannot be proved as given: no ``theorem``/``lemma``/``example``
    with a name, unbalanced brackets, or no ``:=``."""


class VerifierError(EvaluationError, ValueError):
    """A verifier that cannot do what was asked: an unknown kind, or the recorded verifier asked
    to run tactics (tactic search needs Lean or a LeanDojo dataset)."""


class ReportInputError(EvaluationError, FileNotFoundError):
    """The directory a report is made from holds no evaluation (neither ``attempts.jsonl`` nor
    ``summary.json``): give the ``--out`` directory of ``eval prove``."""


class PriceTableError(EvaluationError, ValueError):
    """A price table (``--price-table``) that cannot be read or used: not YAML, not a mapping of
    model names to ``{input, output}`` dollars per million tokens, an unknown key (a typo), a
    price that is not a number >= 0, or no line for the model evaluated. Raised before anything
    is written."""


class EvalOutputError(EvaluationError, PermissionError):
    """The evaluation's ``--out`` cannot be written: a file where a directory is needed, or a
    parent directory without write permission. Raised before anything is written."""


class EvalOutputExistsError(EvaluationError, OutputExistsError):
    """``--out`` holds another evaluation (other settings), the same one without ``--resume``, or
    files this library did not write; ``--resume`` continues an evaluation with the same
    settings, ``--force`` replaces what is there."""


class EvalFactoryError(EvaluationError, TypeError):
    """``evaluate(make_env=..., make_generator=...)`` was given a factory it cannot use: not a
    callable, one that worker processes cannot receive (a lambda or a local function, with
    ``parallel="process"``), or one that raised, returned None or made a generator that cannot
    do what the mode asks when called once to check it. Raised before anything is written."""


class EvalReportError(EvaluationError):
    """The evaluation finished and its results are written (``summary.json``,
    ``attempts.jsonl``), but ``report.html`` could not be: no page is left, not even an earlier
    one. ``result`` is the :class:`~.summary.EvalResult`; ``eval report OUT`` makes the page
    again once the cause is fixed."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result
