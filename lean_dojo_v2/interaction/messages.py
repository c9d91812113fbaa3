"""Layer 1 (interaction): Lean's messages about a checked proof, as data a prover can read back.

A :class:`LeanMessage` is one message of Lean's frontend (an error, a warning, information) with
its position *in the proof* (line 1 is the first line of the tactic block as checked: dedented,
without ``by``) and the goal Lean printed in it, where it printed one (``unsolved goals`` and
most failing tactics print the goal they saw). ``Verdict.lean_messages`` carries them; the first
error's position, text and goal are what a refinement round shows the model.

Two sources: Pantograph's structured messages (``pos``/``endPos``/``severity``/``data``), placed
by :func:`from_checked_text` relative to where the proof starts in the checked text; and message
text in Lean's own format, ``<file>:<line>:<col>: error: …`` (:func:`parse_lean_messages`), as
a REPL of before v0.3.4 or a command-line ``lean`` prints it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

__all__ = ["SEVERITIES", "LeanMessage", "ProofSpan", "goal_in_message", "parse_lean_messages"]

SEVERITIES = ("error", "warning", "information")

# `<file>:<line>:<col>: <severity>: <text>`; Lean names the severity "error", "warning" or
# "info"/"information"; the file part may be missing (`3:4: error: …`).
_LOCATED = re.compile(
    r"^(?:(?P<file>[^\n:]*):)?(?P<line>\d+):(?P<col>\d+):\s*"
    r"(?P<severity>error|warning|info|information):\s?(?P<text>.*)\Z",
    re.DOTALL,
)


@dataclass(frozen=True)
class LeanMessage:
    """One message of Lean about a checked proof.

    ``line``: 1-based line in the proof as checked (its tactic block dedented, without a leading
    ``by``); 0 when the message is not inside the proof (at the statement, e.g. ``unsolved
    goals`` reported at ``by``, or before it). ``column``: 0-based, in characters, within that
    line of the proof (0 when ``line`` is 0). ``end_line``/``end_column``: where Lean says the
    message ends, on the same scale, or None. ``goal``: the goal state Lean printed in the
    message (the part after ``unsolved goals``; the hypotheses and ``⊢`` target a failing
    tactic prints), or None where it printed none."""

    severity: str
    line: int
    column: int
    text: str
    goal: str | None = None
    end_line: int | None = None
    end_column: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def in_proof(self) -> bool:
        """Whether Lean placed the message inside the proof (``line`` >= 1)."""
        return self.line >= 1

    def __str__(self) -> str:
        """As Lean prints a message: ``<line>:<col>: <severity>: <text>`` (lines of the proof)."""
        return f"{self.line}:{self.column}: {self.severity}: {self.text}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> LeanMessage:
        def opt_int(key: str) -> int | None:
            value = d.get(key)
            return value if isinstance(value, int) else None

        goal = d.get("goal")
        return cls(
            str(d.get("severity", "error")),
            int(str(d.get("line", 0))),
            int(str(d.get("column", 0))),
            str(d.get("text", "")),
            goal if isinstance(goal, str) else None,
            opt_int("end_line"),
            opt_int("end_column"),
        )


def goal_in_message(text: str) -> str | None:
    """The goal state a Lean message prints after its first line, or None.

    ``unsolved goals\\nx : ℕ\\n⊢ x = x`` gives ``x : ℕ\\n⊢ x = x``; so does ``linarith failed
    to find a contradiction\\ncase a\\nx : ℕ\\n⊢ False`` (Lean prints the goal the tactic saw
    under its complaint). A message without a ``⊢`` line prints no goal."""
    first, sep, rest = text.partition("\n")
    if not sep or "⊢" not in rest:
        return None
    return rest.strip("\n") or None


def _severity(name: str) -> str:
    return "information" if name in ("info", "information") else name


@dataclass(frozen=True)
class ProofSpan:
    """Where the proof sits in the text Lean checked: ``first_line`` (1-based) holds the proof's
    first line, indented by ``indent`` columns; the proof has ``num_lines`` lines."""

    first_line: int
    indent: int
    num_lines: int

    def place(self, line: int, column: int) -> tuple[int, int]:
        """A position of the checked text → (line, column) in the proof; (0, 0) outside it."""
        k = line - self.first_line + 1
        if 1 <= k <= self.num_lines:
            return k, max(0, column - self.indent)
        return 0, 0

    def message(
        self,
        severity: str,
        text: str,
        pos: tuple[int, int] | None,
        end: tuple[int, int] | None = None,
    ) -> LeanMessage:
        """A message of the checked text (``pos``/``end``: Lean's 1-based line, 0-based
        column there; None: no position) as a :class:`LeanMessage` of the proof."""
        line, column = self.place(*pos) if pos is not None else (0, 0)
        end_line = end_column = None
        if end is not None and line:
            end_line, end_column = self.place(*end)
            if not end_line:  # ends past the proof (an `unsolved goals` range): leave it open
                end_line = end_column = None
        return LeanMessage(_severity(severity), line, column, text, goal_in_message(text),
                           end_line, end_column)  # fmt: skip


def parse_lean_messages(texts: Iterable[str], span: ProofSpan | None = None) -> list[LeanMessage]:
    """Messages printed as Lean prints them (``<file>:<line>:<col>: error: …``, one per
    string; a string may span lines) → :class:`LeanMessage`, placed in the proof by ``span``
    (None: the positions are already the proof's). A string without a position is an error at
    line 0."""
    out = []
    for text in texts:
        m = _LOCATED.match(text.strip("\n"))
        if m is None:
            out.append(LeanMessage("error", 0, 0, text, goal_in_message(text)))
            continue
        pos = (int(m.group("line")), int(m.group("col")))
        body = m.group("text")
        if span is None:
            severity = _severity(m.group("severity"))
            out.append(LeanMessage(severity, pos[0], pos[1], body, goal_in_message(body)))
        else:
            out.append(span.message(m.group("severity"), body, pos))
    return out
