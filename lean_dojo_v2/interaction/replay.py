"""``ReplayEnv``: a ``ProofEnv`` that replays transitions recorded by real Lean runs.

It lets search, training with Lean-checked rewards, and the quickstart run on machines without
Lean, on real goal text. Semantics follow Pantograph's goal-level behaviour:

- a state is an ordered list of goals (canonical text);
- a recorded transition (state_before, tactic, state_after) applies when its ``state_before``
  goals are a *prefix* of the current goals — LeanDojo records a tactic inside a focusing bullet
  or a nested ``by`` with only its own goal — and the prefix is replaced by the ``state_after``
  goals; no goals left is :class:`ProofFinished`;
- tactic text is matched with white space normalised;
- a goal that mentions an unassigned metavariable (``?refine_1``) also matches a recorded goal in
  which a sibling's tactic has since assigned it (Lean then prints the assigned term);
- anything else is a :class:`TacticError` of kind ``"not_recorded"``.

``verify`` accepts a proof only when it replays to no goals, and its verdict says
``checked_by="replay"``: nothing here is evidence that Lean would accept a *new* proof.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..data.dataset import load_theorems
from ..data.goals import goal_texts, metavariable_pattern
from ..data.lean_lexer import iter_tokens, strip_leading_by
from ..data.model import Theorem
from ..data.sorry import find_sorry_tokens
from .base import AsyncProofEnv, ProofEnv, check_tactic_call
from .types import (
    EnvClosedError,
    ProofFinished,
    ProofState,
    TacticError,
    TacticResult,
    UnknownTheoremError,
    Verdict,
)

BACKEND = "replay"
_WS = re.compile(r"\s+")


def _goals_match(current: tuple[str, ...], recorded: tuple[str, ...]) -> bool:
    """``recorded`` equals ``current`` up to instantiation of ``current``'s metavariables."""
    if len(current) != len(recorded):
        return False
    for cur, rec in zip(current, recorded, strict=True):
        if cur == rec:
            continue
        pattern = metavariable_pattern(cur)
        if pattern is None or pattern.fullmatch(rec) is None:
            return False
    return True


def _gives_up(tactic: str) -> bool:
    """``sorry``, or ``admit`` (Lean's ``exact sorry``), as a token of the tactic."""
    if "sorry" in tactic and find_sorry_tokens(tactic):
        return True
    return "admit" in tactic and any(
        t.kind == "ident" and t.text == "admit" for t in iter_tokens(tactic)
    )


def normalize_tactic(tactic: str) -> str:
    """Tactic text with every run of white space made one space (multi-line tactics included)."""
    return _WS.sub(" ", tactic).strip()


def split_tactics(proof: str) -> list[str]:
    """Split the text of a tactic proof (what follows ``by``) into top-level tactics.

    A line at the proof's base indentation starts a tactic; a more indented line continues the one
    before (wrapped arguments, nested blocks), and so does one that starts with ``|`` (``match``
    and ``induction … with`` alternatives may sit at the tactic's own column) or ``<;>``. A
    leading ``by`` is dropped; ``\r\n`` and ``\r`` line endings count as ``\n``.
    """
    text = proof.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    after_by = strip_leading_by(text)
    if after_by is not None:
        text = after_by
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return []
    base = min(len(line) - len(line.lstrip()) for line in lines)
    tactics: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if tactics and (indent > base or line.lstrip().startswith(("|", "<;>"))):
            tactics[-1] += "\n" + line
        else:
            tactics.append(line.strip())
    return [t.strip() for t in tactics]


class TransitionTable:
    """Recorded (goals before, tactic) → goals after, with the prefix rule above."""

    def __init__(self) -> None:
        # (first goal, tactic) → [(goals before, goals after)], most specific (longest) first.
        self._index: dict[tuple[str, str], list[tuple[tuple[str, ...], tuple[str, ...]]]] = (
            defaultdict(list)
        )
        # tactic → the same entries, for goals whose metavariables were assigned meanwhile.
        self._by_tactic: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = defaultdict(
            list
        )
        self._theorems: dict[str, Theorem] = {}
        self._initial: dict[str, tuple[str, ...]] = {}
        self.num_transitions = 0

    @classmethod
    def from_theorems(cls, theorems: Iterable[Theorem]) -> TransitionTable:
        table = cls()
        for thm in theorems:
            table.add_theorem(thm)
        return table

    def add_theorem(self, theorem: Theorem) -> None:
        self._theorems.setdefault(theorem.full_name, theorem)
        if not theorem.traced_tactics:
            return
        self._initial.setdefault(
            theorem.full_name, tuple(goal_texts(theorem.traced_tactics[0].state_before))
        )
        for tac in theorem.traced_tactics:
            before = tuple(goal_texts(tac.state_before))
            if not before:
                continue
            after = tuple(goal_texts(tac.state_after))
            tactic = normalize_tactic(tac.tactic)
            entries = self._index[(before[0], tactic)]
            if (before, after) not in entries:
                entries.append((before, after))
                entries.sort(key=lambda e: -len(e[0]))
                self._by_tactic[tactic].append((before, after))
                self.num_transitions += 1

    def apply(self, goals: Sequence[str], tactic: str) -> list[str] | None:
        """The goals after ``tactic`` on ``goals``, or None when no recorded transition applies."""
        if not goals:
            return None
        goals = tuple(goals)
        tactic = normalize_tactic(tactic)
        for before, after in self._index.get((goals[0], tactic), ()):
            if goals[: len(before)] == before:
                return [*after, *goals[len(before) :]]
        if any("?" in g for g in goals):
            for before, after in self._by_tactic.get(tactic, ()):
                if _goals_match(goals[: len(before)], before):
                    return [*after, *goals[len(before) :]]
        return None

    def initial_goals(self, full_name: str) -> list[str] | None:
        goals = self._initial.get(full_name)
        return list(goals) if goals is not None else None

    def theorem(self, full_name: str) -> Theorem | None:
        return self._theorems.get(full_name)

    def __len__(self) -> int:
        return self.num_transitions


class ReplayEnv(ProofEnv):
    """A :class:`ProofEnv` over recorded transitions (``backend == "replay"``)."""

    backend = BACKEND
    # A state is its goals (the handle is the goal tuple): any replay environment continues it.
    shares_states = True

    def __init__(self, table: TransitionTable) -> None:
        self.table = table
        self._closed = False

    @classmethod
    def from_theorems(cls, theorems: Iterable[Theorem]) -> ReplayEnv:
        return cls(TransitionTable.from_theorems(theorems))

    @classmethod
    def from_dataset(cls, path: str | Path) -> ReplayEnv:
        """From a split file or a LeanDojo dataset directory (every theorem once)."""
        return cls.from_theorems(load_theorems(path))

    def _check_open(self) -> None:
        if self._closed:
            raise EnvClosedError("this ReplayEnv is closed; create a new one")

    def start(self, theorem: Theorem | str) -> ProofState:
        self._check_open()
        name = theorem if isinstance(theorem, str) else theorem.full_name
        goals = self.table.initial_goals(name)
        if goals is None and isinstance(theorem, Theorem) and theorem.traced_tactics:
            goals = goal_texts(theorem.traced_tactics[0].state_before)
        if not goals:
            raise UnknownTheoremError(
                f"no recorded tactic proof of {name!r}: ReplayEnv can only start theorems whose "
                "traced_tactics were recorded (term-mode proofs have none)"
            )
        thm = theorem if isinstance(theorem, Theorem) else self.table.theorem(name)
        return ProofState(tuple(goals), BACKEND, handle=tuple(goals), theorem=thm)

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        self._check_open()
        check_tactic_call(tactic, timeout)
        if _gives_up(tactic):
            return TacticError("sorry is not accepted in a proof", BACKEND, "sorry")
        after = self.table.apply(state.goals, tactic)
        if after is None:
            return TacticError(
                f"tactic {normalize_tactic(tactic)!r} is not among the recorded transitions "
                "from this state",
                BACKEND,
                "not_recorded",
            )
        if not after:
            return ProofFinished(BACKEND)
        return ProofState(tuple(after), BACKEND, handle=tuple(after), theorem=state.theorem)

    def verify(self, theorem: Theorem | str, proof: str) -> Verdict:
        """Replay ``proof`` (tactic text, optionally starting with ``by``) from the theorem's first
        recorded state; accepted only when it reaches no goals."""
        try:
            state: ProofState | ProofFinished = self.start(theorem)
        except UnknownTheoremError as exc:
            return Verdict(False, BACKEND, "replay", (str(exc),))
        tactics = split_tactics(proof)
        for i, tactic in enumerate(tactics):
            if not isinstance(state, ProofState):
                return Verdict(
                    False,
                    BACKEND,
                    "replay",
                    (f"tactic {i + 1} ({tactic!r}) after the proof ended",),
                )
            result = self.run_tactic(state, tactic)
            if isinstance(result, TacticError):
                return Verdict(False, BACKEND, "replay", (f"tactic {i + 1}: {result.message}",))
            state = result
        if isinstance(state, ProofFinished):
            return Verdict(
                True,
                BACKEND,
                "replay",
                ("replayed recorded transitions only; not re-checked by Lean",),
            )
        return Verdict(False, BACKEND, "replay", (f"unsolved goals:\n{state.text}",))

    def close(self) -> None:
        self._closed = True

    def as_async(self) -> AsyncReplayEnv:
        return AsyncReplayEnv(self)


class AsyncReplayEnv(AsyncProofEnv):
    """Coroutine flavour of :class:`ReplayEnv` (replay never blocks, so it simply delegates)."""

    backend = BACKEND
    shares_states = True

    def __init__(self, env: ReplayEnv) -> None:
        self.env = env

    async def start(self, theorem: Theorem | str) -> ProofState:
        return self.env.start(theorem)

    async def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        return self.env.run_tactic(state, tactic, timeout)

    async def verify(self, theorem: Theorem | str, proof: str) -> Verdict:
        return self.env.verify(theorem, proof)

    async def close(self) -> None:
        self.env.close()
