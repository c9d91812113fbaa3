"""Layer 1 (interaction): a standalone statement — a theorem that lives in no repository, given
as a header (``import``/``open``/``set_option`` lines, definitions it needs) and its statement
text, as proving benchmarks (miniF2F, ProofNet, PutnamBench) pose it.

:func:`standalone_theorem` makes it a :class:`~lean_dojo_v2.data.model.Theorem` whose
``extra`` carries the header (with the initial goal where the benchmark records it, and the
informal statement for a prompt to show), so it travels unchanged through the proving pipeline,
worker processes and ``Theorem.to_dict``. Environments recognise it by
:func:`standalone_header`: ``PantographEnv`` starts and verifies it in the text
:func:`standalone_source` builds (the header without its ``import`` lines, which the REPL
imported at launch, then the declaration), with no file or project around it.
"""

from __future__ import annotations

import re

from ..data.lean_lexer import find_top_level_assign
from ..data.model import Pos, Theorem

__all__ = [
    "GOAL_KEY",
    "HEADER_KEY",
    "INFORMAL_KEY",
    "declared_name",
    "header_imports",
    "recorded_goal",
    "standalone_header",
    "standalone_source",
    "standalone_theorem",
]

HEADER_KEY = "header"
GOAL_KEY = "goal"
INFORMAL_KEY = "informal_statement"

_IMPORT = re.compile(r"^\s*import\s+(.+?)\s*$", re.MULTILINE)
_DECLARED = re.compile(
    r"(?<![\w.'])(?:theorem|lemma|def|abbrev|instance)\s+(«[^»]*»|[^\s(\[{⦃⟨:]+)"
)


def standalone_theorem(
    name: str,
    header: str,
    statement: str,
    *,
    goal: str | None = None,
    informal: str | None = None,
) -> Theorem:
    """The :class:`Theorem` of a standalone statement: ``name`` (unique within its benchmark),
    its ``header`` and its ``statement`` (``theorem name … := by``, no proof); ``goal`` is the
    initial goal as Lean printed it, where it is known; ``informal`` the statement in words. No
    repository: ``url``, ``commit`` and ``file_path`` are empty."""
    extra: dict[str, object] = {HEADER_KEY: header}
    if goal is not None:
        extra[GOAL_KEY] = goal
    if informal is not None:
        extra[INFORMAL_KEY] = informal
    return Theorem(
        url="",
        commit="",
        file_path="",
        full_name=name,
        start=Pos(1, 1),
        end=Pos(1, 1),
        theorem_statement=statement,
        has_statement_field=True,
        extra=extra,
    )


def standalone_header(theorem: Theorem) -> str | None:
    """The header of a standalone statement (:func:`standalone_theorem`), or None for a theorem
    of a repository."""
    header = theorem.extra.get(HEADER_KEY)
    return header if isinstance(header, str) and theorem.theorem_statement else None


def recorded_goal(theorem: Theorem) -> str | None:
    """The initial goal recorded with a standalone statement (as Lean printed it), or None."""
    goal = theorem.extra.get(GOAL_KEY)
    return goal if isinstance(goal, str) and goal.strip() else None


def header_imports(header: str) -> list[str]:
    """The modules a header imports (``import Mathlib\\nimport Aesop`` → both), in order."""
    return [m for line in _IMPORT.findall(header) for m in line.split()]


def declared_name(statement: str) -> str | None:
    """The name a ``theorem``/``lemma``/``def`` statement declares (None for an
    ``example``)."""
    m = _DECLARED.search(statement)
    return m.group(1) if m else None


def standalone_source(header: str, statement: str) -> tuple[str, int]:
    """A file holding the statement with ``sorry`` as its proof after the header, and the index
    where the declaration starts: what the REPL elaborates (its ``import`` lines blanked, the
    proof put in place of the ``sorry``) to start or verify the statement."""
    cut = find_top_level_assign(statement)
    decl = (statement[:cut] if cut >= 0 else statement).rstrip()
    head = header if not header or header.endswith("\n") else header + "\n"
    return f"{head}{decl} := sorry\n", len(head)
