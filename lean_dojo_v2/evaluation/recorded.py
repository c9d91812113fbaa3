"""Layer 4 (evaluation): the recorded verifier — proofs that a real Lean run accepted, and an
environment that accepts exactly those.

Where no Lean is installed, ``--verifier recorded`` counts a proof only when it is, up to what
cannot change Lean's verdict (:func:`~.statements.normalise_proof`: a leading ``by``, ``--``
comments, blank lines, spaces at line ends, ``\r\n``, the indentation all lines share), a proof
that Lean accepted for the same header and statement. Anything else is another proof: a tab
(Lean refuses tabs), a Unicode space (no white space to Lean), an unterminated comment, spaces
inside a line or another relative indentation. The bundled records
(:meth:`RecordedProofs.bundled`):

- Kimina-Prover Preview's miniF2F-test proofs (217, Lean v4.15.0 with Mathlib; Apache-2.0);
- DeepSeek-Prover-V1.5's few-shot proofs of 67 miniF2F-valid problems (Lean v4.9; MIT).

What it proves: that the text was accepted by Lean once, under the Lean version recorded with
it. What it does not: anything about a proof that is not in the records (it is rejected, however
right it may be), nor that the proof still checks under another Lean or Mathlib. Every verdict
says ``checked_by="recorded"``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..data.goals import goal_texts
from ..data.jsonio import loads
from ..data.lean_lexer import find_top_level_assign, iter_commands, proof_span
from ..data.model import Theorem
from ..interaction.base import ProofEnv
from ..interaction.standalone import recorded_goal, standalone_header
from ..interaction.types import (
    EnvClosedError,
    ProofState,
    TacticResult,
    UnknownTheoremError,
    Verdict,
)
from .errors import VerifierError
from .statements import normalise_header, normalise_proof, normalise_statement

__all__ = ["BACKEND", "RecordedEnv", "RecordedProof", "RecordedProofs", "split_lean_file"]

BACKEND = "recorded"


@dataclass(frozen=True)
class RecordedProof:
    """A proof Lean accepted: ``name`` (its problem), ``header``, ``statement`` (up to ``:=``),
    ``proof`` (the tactic block, without ``by``), the ``lean_version`` that checked it and
    ``source`` (whose run it was)."""

    name: str
    header: str
    statement: str
    proof: str
    lean_version: str
    source: str


def split_lean_file(text: str) -> tuple[str, str, str] | None:
    """``(header, statement, proof)`` of a file that declares one theorem with a tactic proof
    (the proof without its ``by``); None for any other file."""
    theorems = [c for c in iter_commands(text) if c.keyword == "theorem"]
    if len(theorems) != 1:
        return None
    command = theorems[0]
    cut = find_top_level_assign(text, command.start)
    span = proof_span(text, command.start)
    if cut < 0 or span is None or not text[span[0] : span[1]].startswith("by"):
        return None
    statement = text[command.keyword_start : cut].rstrip()
    proof = text[span[0] + len("by") : span[1]]
    return text[: command.start], statement, proof


class RecordedProofs:
    """Accepted proofs by (header, statement), compared in their comparison forms
    (:mod:`.statements`)."""

    def __init__(self, proofs: Iterable[RecordedProof]) -> None:
        self.by_statement: dict[tuple[str, str], dict[str, RecordedProof]] = {}
        count = 0
        for p in proofs:
            key = (normalise_header(p.header), normalise_statement(p.statement))
            self.by_statement.setdefault(key, {})[normalise_proof(p.proof)] = p
            count += 1
        self.count = count

    def __len__(self) -> int:
        return self.count

    def for_statement(self, header: str, statement: str) -> list[RecordedProof]:
        """Every proof recorded for this header and statement (up to white space)."""
        key = (normalise_header(header), normalise_statement(statement))
        return list(self.by_statement.get(key, {}).values())

    def lookup(self, header: str, statement: str, proof: str) -> RecordedProof | None:
        """The record that ``proof`` is, up to white space, for this header and statement."""
        key = (normalise_header(header), normalise_statement(statement))
        return self.by_statement.get(key, {}).get(normalise_proof(proof))

    @staticmethod
    def bundled() -> RecordedProofs:
        """The bundled records (see the module docstring); read once per process."""
        return _bundled()


@functools.cache
def _bundled() -> RecordedProofs:
    root = Path(__file__).resolve().parent.parent / "resources" / "benchmarks"
    return RecordedProofs([*_kimina(root / "kimina_prover_preview"), *_few_shot(root)])


def _kimina(directory: Path) -> list[RecordedProof]:
    version = (directory / "lean-toolchain").read_text("utf-8").strip()
    out = []
    for line in (directory / "minif2f_test_proofs.jsonl").read_text("utf-8").splitlines():
        if not line.strip():
            continue
        row = loads(line)
        parts = split_lean_file(row["lean"])
        if parts is not None:
            out.append(RecordedProof(row["name"], *parts, version, "Kimina-Prover Preview"))
    return out


def _few_shot(root: Path) -> list[RecordedProof]:
    from .benchmarks import DEEPSEEK_LEAN

    folder = root / "deepseek_prover_v15"
    headers = {}
    for line in (folder / "minif2f.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            row = loads(line)
            headers[row["name"]] = row["header"]
    out = []
    for line in (folder / "minif2f_valid_few_shot.jsonl").read_text("utf-8").splitlines():
        if not line.strip():
            continue
        row = loads(line)
        header = headers.get(row["name"])
        if header is not None:
            source = "DeepSeek-Prover-V1.5 few-shot examples"
            out.append(RecordedProof(row["name"], header, row["formal_statement"],
                                     row["formal_proof"], DEEPSEEK_LEAN, source))  # fmt: skip
    return out


class RecordedEnv(ProofEnv):
    """The recorded verifier as a :class:`ProofEnv`: ``verify`` accepts a proof only when it is
    a recorded one for the theorem's header and statement; ``start`` gives the initial goal the
    benchmark recorded (Lean printed it), for a whole-proof search to show; ``run_tactic``
    refuses (no Lean runs here)."""

    backend = BACKEND
    shares_states = True  # a state is its recorded goal text

    def __init__(self, proofs: RecordedProofs | None = None) -> None:
        self.proofs = proofs if proofs is not None else RecordedProofs.bundled()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise EnvClosedError("this RecordedEnv is closed; create a new one")

    def start(self, theorem: Theorem) -> ProofState:
        self._check_open()
        goal = recorded_goal(theorem)
        if goal is None:
            raise UnknownTheoremError(
                f"no initial goal is recorded for {theorem.full_name}: the recorded verifier "
                "starts only problems whose benchmark records Lean's goal (miniF2F, ProofNet); "
                "use --verifier lean"
            )
        return ProofState(tuple(goal_texts(goal)), BACKEND, handle=goal, theorem=theorem)

    def run_tactic(
        self, state: ProofState, tactic: str, timeout: float | None = None
    ) -> TacticResult:
        raise VerifierError(
            "the recorded verifier runs no tactics: tactic search needs --verifier lean (a Lean "
            "REPL) or --verifier replay with a LeanDojo dataset"
        )

    def verify(self, theorem: Theorem, proof: str) -> Verdict:
        self._check_open()
        header = standalone_header(theorem) or ""
        statement = theorem.theorem_statement or ""
        found = self.proofs.lookup(header, statement, proof)
        if found is not None:
            return Verdict(
                True,
                BACKEND,
                BACKEND,
                (
                    f"recorded: the proof is, up to white space, one Lean ({found.lean_version}) "
                    f"accepted for this statement ({found.source}, {found.name})",
                ),
            )
        known = len(self.proofs.for_statement(header, statement))
        why = (
            f"it is none of the {known} proof(s) Lean accepted for this statement"
            if known
            else "no proof of this statement is recorded"
        )
        return Verdict(
            False,
            BACKEND,
            BACKEND,
            (
                f"recorded: not counted: {why}; the recorded verifier cannot check a new proof "
                "(use --verifier lean)",
            ),
        )

    def close(self) -> None:
        self._closed = True
