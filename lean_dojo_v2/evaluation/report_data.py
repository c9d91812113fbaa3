"""What the HTML report shows, read back from an evaluation's output directory.

The page is made from the files an evaluation writes into ``--out`` and from nothing else, so a
report can be re-made from any output directory, a finished one or one whose run was killed:
``attempts.jsonl`` (one line per attempt: the attempt's fields, the problem's name and the mode,
in tactic mode the search tree; then one ``"done"`` line per finished problem with its status and
budget) and ``summary.json`` (settings, ``problems``, ``pass_at``, ``budget``). Model output and
Lean's messages are kept as text here; escaping them is the page's job.

The lines are read as the run reads them to resume (a half line at the end, left by a killed
run, is dropped; one that is not JSON elsewhere is an error naming the file and line), each
attempt as the prover's :class:`~lean_dojo_v2.prover.attempt.Attempt` with its tree of
:class:`~lean_dojo_v2.prover.attempt.TreeNode` s. Lean's messages come as Lean prints them
(``3:2: error: …``, read by :func:`~lean_dojo_v2.interaction.messages.parse_lean_messages`) or as
structured messages; a message not in Lean's format is the verifier's or the search's own note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..data.jsonio import loads
from ..errors import DataFormatError
from ..interaction.messages import LeanMessage, parse_lean_messages
from ..prover.attempt import Attempt, TreeNode
from .attempts import read_attempt_lines as attempt_lines
from .errors import ReportInputError

ATTEMPTS_FILE = "attempts.jsonl"
SUMMARY_FILE = "summary.json"

SOLVED = "solved"
FAILED = "failed"
UNFINISHED = "unfinished"
NOT_RUN = "not run"
STATUSES = (SOLVED, FAILED, UNFINISHED, NOT_RUN)
NOTE = "note"
"""The severity given to a message that is not Lean's (no ``line:col: severity:`` in front)."""
"""A problem's status on the page: ``unfinished`` has attempts but no ``done`` line (its run was
killed; ``--resume`` proves it again), ``not run`` has no attempt at all."""


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt at one problem as ``attempts.jsonl`` recorded it: the prover's
    :class:`~lean_dojo_v2.prover.attempt.Attempt`, its messages read as Lean's (position, text,
    goal) and, in tactic mode, the search tree."""

    attempt: Attempt
    messages: tuple[LeanMessage, ...] = ()
    tree: tuple[TreeNode, ...] = ()


@dataclass
class ProblemRecord:
    """A problem of the evaluation: its status, statement and every attempt at it, in sample and
    round order. ``search_status`` is the search's own word (``proved``, ``failed``,
    ``timeout``, ``error``) and ``error`` what went wrong, where the run recorded them;
    ``budget`` what the problem cost (``summary.json``'s per-problem budget: tokens, Lean calls,
    Lean CPU and wall seconds, dollars), empty when the run did not finish it."""

    name: str
    status: str
    attempts: list[AttemptRecord] = field(default_factory=list)
    header: str | None = None
    statement: str | None = None
    search_status: str | None = None
    error: str | None = None
    budget: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> int:
        """How many attempts the verifier accepted."""
        return sum(1 for a in self.attempts if a.attempt.ok)

    def cost(self, key: str) -> float:
        """One figure of the problem's budget (``tokens_in``, ``lean_calls``, …): the recorded
        one, else the sum over the attempts (which know tokens, seconds and Lean calls)."""
        if key in self.budget:
            return self.budget[key]
        return sum(float(getattr(a.attempt, key, 0.0)) for a in self.attempts)


@dataclass
class ReportData:
    """Everything the page shows. ``finished`` is False when ``summary.json`` is missing (the run
    was killed, or is still going): statuses are then those of the attempts written so far."""

    out_dir: Path
    summary: dict[str, object]
    problems: list[ProblemRecord]
    finished: bool

    @property
    def mode(self) -> str:
        return _text(self.summary.get("mode")) or ""


def read_report_data(out_dir: str | Path) -> ReportData:
    """Read ``out_dir``'s ``summary.json`` and ``attempts.jsonl`` (either may be missing, not
    both). Problems are in the summary's order (the benchmark's), then any only the attempts name.
    """
    out = Path(out_dir)
    attempts_path, summary_path = out / ATTEMPTS_FILE, out / SUMMARY_FILE
    if not out.is_dir():
        raise ReportInputError(
            f"{out} is not a directory: give the --out directory of an evaluation "
            "(it holds attempts.jsonl and summary.json)"
        )
    if not attempts_path.is_file() and not summary_path.is_file():
        raise ReportInputError(
            f"{out} holds neither {ATTEMPTS_FILE} nor {SUMMARY_FILE}: give the --out directory "
            "of an evaluation"
        )
    summary = _read_summary(summary_path) if summary_path.is_file() else {}
    listed = summary.get("problems")
    listed = listed if isinstance(listed, Mapping) else {}
    # A finished run's summary counts its problems alone: a line of another is refused, as
    # resuming refuses it, rather than shown beside numbers that do not count it.
    known = set(map(str, listed)) if listed else None
    log = _read_attempts(attempts_path, known) if attempts_path.is_file() else _AttemptLines()
    names = [*map(str, listed), *(n for n in log.attempts if n not in listed)]
    names += [n for n in log.done if n not in names]
    problems: list[ProblemRecord] = []
    for name in names:
        attempts = sorted(log.attempts.get(name, {}).values(), key=_sample_order)
        # The summary's entry where there is one, else the line that closed the problem.
        entry = listed.get(name)
        entry = entry if isinstance(entry, Mapping) else log.done.get(name)
        problems.append(_problem(name, entry, attempts))
    return ReportData(out, summary, problems, finished=summary_path.is_file())


def _problem(
    name: str, entry: Mapping[str, object] | None, attempts: list[AttemptRecord]
) -> ProblemRecord:
    entry = entry or {}
    budget = entry.get("budget")
    return ProblemRecord(
        name=name,
        status=_status(entry, attempts),
        attempts=attempts,
        header=_text(entry.get("header")) or None,
        statement=_text(entry.get("formal_statement")) or _text(entry.get("statement")) or None,
        search_status=_text(entry.get("status")),
        error=_text(entry.get("error")),
        budget={
            str(k): number
            for k, value in (budget.items() if isinstance(budget, Mapping) else ())
            if (number := _float(value)) is not None
        },
    )


def _status(entry: Mapping[str, object], attempts: list[AttemptRecord]) -> str:
    # The summary (or the problem's done line) decides where there is one: it is what the
    # published number counts; the attempts decide for a problem the run did not close.
    solved = entry.get("solved")
    if solved is True or (solved is None and any(a.attempt.ok for a in attempts)):
        return SOLVED
    if not attempts:
        return NOT_RUN
    return FAILED if solved is False else UNFINISHED


def _read_summary(path: Path) -> dict[str, object]:
    try:
        data = loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, DataFormatError) as exc:
        raise DataFormatError(
            f"cannot read it as JSON ({exc}); re-run the evaluation with --resume to write it again",
            file=path,
        ) from exc
    if not isinstance(data, dict):
        raise DataFormatError("is not a JSON object", file=path)
    return {str(k): v for k, v in data.items()}


@dataclass
class _AttemptLines:
    """``attempts.jsonl`` read: attempts by problem, then by (sample index, round); the line that
    closed each finished problem."""

    attempts: dict[str, dict[tuple[int, int], AttemptRecord]] = field(default_factory=dict)
    done: dict[str, Mapping[str, object]] = field(default_factory=dict)


def _read_attempts(path: Path, known: set[str] | None = None) -> _AttemptLines:
    """Every attempt and done line (a half line at the end, left by a killed run, is dropped); a
    line repeated for the same attempt counts once (the last one written), so nothing is shown
    twice. ``known``: the problems the summary counts; a line of another is an error."""
    out = _AttemptLines()
    for number, _, record in attempt_lines(path):
        name = str(record["problem"])
        if known is not None and name not in known:
            raise DataFormatError(
                f"line {number} is of problem {name!r}, which {SUMMARY_FILE} does not count "
                "(the file was edited, or holds another evaluation's lines); take those lines "
                "out, or re-run the evaluation with --force",
                file=path,
            )
        if record.get("done") is True:
            out.done[name] = record
        elif "index" in record:
            shown = _attempt(record, path, number)
            out.attempts.setdefault(name, {})[(shown.attempt.index, shown.attempt.round)] = shown
    return out


def _attempt(record: Mapping[str, object], path: Path, number: int) -> AttemptRecord:
    tree = record.get("tree")
    if isinstance(tree, Mapping):
        tree = tree.get("nodes")
    try:
        return AttemptRecord(
            Attempt.from_dict(record),
            messages=tuple(_messages(record.get("messages"))),
            tree=tuple(TreeNode.from_dict(n) for n in (tree if isinstance(tree, list) else ())),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataFormatError(
            f"line {number} is not an attempt as eval prove writes it ({type(exc).__name__}: "
            f"{exc}); re-run the evaluation with --force",
            file=path,
        ) from None


def _sample_order(a: AttemptRecord) -> tuple[int, int]:
    return a.attempt.index, a.attempt.round


def _messages(value: object) -> list[LeanMessage]:
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, Mapping):
            try:
                out.append(LeanMessage.from_dict(item))
            except ValueError:
                out.append(LeanMessage("error", 0, 0, str(item.get("text", item))))
        elif item is not None:
            text = str(item)
            (message,) = parse_lean_messages([text])
            if message.line == 0 and message.text == text:
                # Not in Lean's format: the verifier's or the search's own note about the attempt
                # ("recorded: not counted: …", "no proof in the model's answer"), not an error.
                message = replace(message, severity=NOTE)
            out.append(message)
    return out


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
