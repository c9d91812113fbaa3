"""What a proof search returns: :class:`SearchResult`, and :func:`proof_text` (the tactic block
that ``ProofEnv.verify`` and write-back take)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .attempt import Attempt, TreeNode

STATUSES = ("proved", "failed", "timeout", "error")


@dataclass
class SearchResult:
    """The outcome of searching for a proof of one theorem.

    ``status`` is ``"proved"`` only when the whole proof was re-checked by ``ProofEnv.verify``
    and accepted; ``checked_by`` is then the verdict's ``checked_by`` (``"lean"`` or
    ``"replay"``: a replayed proof proves nothing new and says so). ``"failed"``: the budget of
    expansions ran out or nothing was left to expand (``stats["stop_reason"]`` says which);
    ``"timeout"``: the wall-clock limit of the theorem passed; ``"error"``: something that is
    not a property of the theorem went wrong (the generator raised, the environment could not
    start the theorem), ``error`` says what. ``proof`` holds the tactics (one entry per tactic,
    multi-line tactics whole) only when proved. ``expansions`` counts the nodes expanded (one
    generator request each); ``seconds`` is wall time; ``stats`` the search tree's counters.

    ``attempts``: every proof tried and checked (:class:`~.attempt.Attempt`): each whole-proof
    sample and refinement round, or one for a tactic search, with its tokens, seconds and Lean
    calls. ``tree``: the search tree of a best-first search (:class:`~.attempt.TreeNode` s, the
    root first) when ``SearchConfig.record_tree`` asks for it, else None.
    """

    theorem: str
    file_path: str
    status: str
    proof: list[str] | None
    expansions: int
    seconds: float
    backend: str
    checked_by: str | None
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    tree: list[TreeNode] | None = None

    @property
    def proved(self) -> bool:
        return self.status == "proved"

    @property
    def proof_text(self) -> str | None:
        """The proof as one tactic block (:func:`proof_text`), or None when not proved."""
        return proof_text(self.proof) if self.proof is not None else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (plain str/int/float/bool/None/list/dict only; non-finite floats
        become None)."""
        return {
            "theorem": self.theorem,
            "file_path": self.file_path,
            "status": self.status,
            "proof": list(self.proof) if self.proof is not None else None,
            "expansions": int(self.expansions),
            "seconds": _json_ready(float(self.seconds)),
            "backend": self.backend,
            "checked_by": self.checked_by,
            "error": self.error,
            "stats": _json_ready(self.stats),
            "attempts": [a.to_dict() for a in self.attempts],
            "tree": None if self.tree is None else [n.to_dict() for n in self.tree],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchResult:
        """The inverse of :meth:`to_dict`."""
        return cls(
            theorem=data["theorem"],
            file_path=data["file_path"],
            status=data["status"],
            proof=list(data["proof"]) if data.get("proof") is not None else None,
            expansions=int(data["expansions"]),
            seconds=float(data["seconds"] or 0.0),
            backend=data["backend"],
            checked_by=data.get("checked_by"),
            error=data.get("error"),
            stats=dict(data.get("stats") or {}),
            attempts=[Attempt.from_dict(a) for a in data.get("attempts") or ()],
            tree=None
            if data.get("tree") is None
            else [TreeNode.from_dict(n) for n in data["tree"]],
        )


def _json_ready(value: object) -> object:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_ready(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _json_ready(value.item())
    return str(value)


def proof_text(tactics: Sequence[str]) -> str:
    """The tactic block of a proof: one tactic per line, in order.

    Each tactic loses the white space around it (its first line starts the line); the later lines
    of a multi-line tactic keep their own indentation, which is how traced data and generators
    write them (more indented than the tactic, or starting with ``|``), so
    :func:`lean_dojo_v2.interaction.split_tactics` gives the same tactics back. A tactic whose
    later lines start at column 0 (traced data has them: ``exact\nle_trans …`` of a tactic nested
    in ``classical exact``) gets those lines indented by two spaces, as Lean needs to read them
    as part of the tactic; lines that start with ``|`` or ``<;>`` may stay at column 0. Empty
    tactics are dropped. No leading ``by``."""
    lines = []
    for tactic in tactics:
        text = tactic.replace("\r\n", "\n").replace("\r", "\n").strip()
        if not text:
            continue
        head, *rest = text.split("\n")
        plain = [r for r in rest if r.strip() and not r.lstrip().startswith(("|", "<;>"))]
        if plain and min(len(r) - len(r.lstrip()) for r in plain) == 0:
            rest = [("  " + r) if r.strip() else r for r in rest]
        lines.append("\n".join([head, *rest]))
    return "\n".join(lines)
