"""Layer 3 (prover): what a search records of each try, for evaluation and its report.

:class:`Attempt` is one checked proof (a whole-proof sample, a refinement round, or a whole
tactic search) with what it cost: generator tokens and seconds, Lean calls and seconds.
:class:`TreeNode` is one node of a best-first search's tree as a report shows it. Both travel in
:class:`~.result.SearchResult` (``attempts``, ``tree``) and round-trip through its
``to_dict``/``from_dict``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


def _number(value: object) -> float:
    """A JSON number back as a float (None, written for a non-finite one, as 0)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass
class Attempt:
    """One proof tried and checked.

    ``index``: the sample it belongs to (0 … n-1; a refinement chain keeps its first sample's
    index). ``round``: 0 for a first whole proof, 1 … R for refinement rounds, 0 in tactic mode.
    ``proof``: the proof as checked (tactic mode: the tactics found, one per line; ``""`` when
    there was none). ``ok``: the verifier accepted it. ``checked_by``: who decided (``"lean"``,
    ``"recorded"``, ``"replay"``; ``""`` when nothing was checked: the answer held no proof, or
    every environment failed). ``messages``: Lean's messages, the first error first (or why
    nothing was checked). ``tokens_in``/``tokens_out``/``generator_seconds``/``gpu_seconds``:
    this attempt's share of the generator calls that produced it (a call's usage is split evenly
    among the samples it returned; generated tokens go to their own sample where the generator
    says). ``lean_calls``/``lean_seconds``: the environment calls (starts, tactics, checks) made
    for it and their wall time. ``cached``: the verdict came from a cache (a repeated proof in
    the same search, or a verdict cache in front of the environment), so no Lean call was made.
    ``error``: the environment's failure when there is no verdict."""

    index: int
    round: int
    proof: str
    ok: bool
    checked_by: str
    messages: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    generator_seconds: float = 0.0
    gpu_seconds: float = 0.0
    lean_calls: int = 0
    lean_seconds: float = 0.0
    cached: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite seconds become None)."""
        return {
            "index": int(self.index),
            "round": int(self.round),
            "proof": self.proof,
            "ok": bool(self.ok),
            "checked_by": self.checked_by,
            "messages": [str(m) for m in self.messages],
            "tokens_in": int(self.tokens_in),
            "tokens_out": int(self.tokens_out),
            "generator_seconds": _finite(float(self.generator_seconds)),
            "gpu_seconds": _finite(float(self.gpu_seconds)),
            "lean_calls": int(self.lean_calls),
            "lean_seconds": _finite(float(self.lean_seconds)),
            "cached": bool(self.cached),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt:
        """The inverse of :meth:`to_dict` (keys it does not know are ignored)."""
        return cls(
            index=int(data["index"]),
            round=int(data.get("round") or 0),
            proof=str(data.get("proof") or ""),
            ok=bool(data["ok"]),
            checked_by=str(data.get("checked_by") or ""),
            messages=[str(m) for m in data.get("messages") or ()],
            tokens_in=int(data.get("tokens_in") or 0),
            tokens_out=int(data.get("tokens_out") or 0),
            generator_seconds=_number(data.get("generator_seconds")),
            gpu_seconds=_number(data.get("gpu_seconds")),
            lean_calls=int(data.get("lean_calls") or 0),
            lean_seconds=_number(data.get("lean_seconds")),
            cached=bool(data.get("cached", False)),
            error=data.get("error"),
        )


@dataclass
class TreeNode:
    """One node of a best-first search tree, as a report draws it.

    The root (``parent`` None, ``tactic`` None) is the theorem's first state; every other node is
    one tactic tried on its parent's state: ``goal`` the state it led to (None when it led to no
    new state), ``score`` the tactic's log-prob (the root: 0), ``outcome`` what came of it:
    ``"expanded"``, ``"open"`` (never expanded), ``"too_deep"``, ``"dropped"`` (a state that
    became new), ``"duplicate"`` (a state reached before: ``target`` is that node's id),
    ``"proof"`` (no goals left; ``proved`` marks the path of the proof that was accepted),
    ``"error:<kind>"`` (Lean rejected it: tactic, parse, sorry, timeout, …), ``"crash"``,
    ``"stale"`` or ``"skipped"`` (the environment failed, or time ran out)."""

    id: int
    parent: int | None
    goal: str | None
    tactic: str | None
    score: float
    outcome: str
    target: int | None = None
    proved: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "score": _finite(float(self.score))
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TreeNode:
        return cls(
            id=int(data["id"]),
            parent=None if data.get("parent") is None else int(data["parent"]),
            goal=data.get("goal"),
            tactic=data.get("tactic"),
            score=_number(data.get("score")),
            outcome=str(data.get("outcome") or ""),
            target=None if data.get("target") is None else int(data["target"]),
            proved=bool(data.get("proved", False)),
        )


__all__ = ["Attempt", "TreeNode"]
