"""Steps-remaining labels from traced proofs (LeanProgress), branching proofs included.

The rule
--------
``steps_remaining(t)`` is the number of traced tactics, ``t`` included, that still have to run to
close every goal open in ``t``'s ``state_before``. It is computed from the goal-state transitions,
not from the position of ``t`` in the list:

1. Every goal of a tactic's ``state_after`` is a goal *instance* produced by that tactic. A goal a
   tactic leaves untouched (in an unfocused multi-goal state) is printed again in its
   ``state_after`` and so is produced again by it.
2. Each goal of a later tactic's ``state_before`` *consumes* one open instance with the same
   canonical text (:func:`lean_dojo_v2.data.goals.goal_texts`, case-tag macro scopes erased), the
   most recently produced one first. The producer becomes a *parent* of the consumer. When no
   instance has the same text, an instance whose text mentions metavariables (``?refine_1``,
   ``?m.12``) matches if the goal is that text with each metavariable filled in: a sibling branch
   assigned it, and Lean prints the goal anew.
3. ``steps_remaining(t) = 1 + |descendants(t)|``, where descendants follow parent → child links.

A tactic whose goals were produced by no other tactic starts a proof of its own: the theorem's
first tactic, and the tactics of a nested ``by`` block (``have h : p := by simp``, a ``by`` inside
a term or inside the statement) or of the alternatives of a structured tactic (``match … with |
… => tac``, ``induction … with``): LeanDojo records those with only their own goal as
``state_before``, while the enclosing tactic is recorded as one step that already closes (or
transforms) its goal. So the enclosing tactic counts as one step, and its nested tactics are
labelled within their own sub-proof. The tactics of focusing bullets (``·``) and ``case`` blocks
are recorded with only the focused goal, which was produced by the tactic that opened the
branches: they are children of that tactic and are counted in its label, not in the labels of
the sibling branches.

In a linear proof (each ``state_before`` is the previous ``state_after``) this gives ``n - i`` for
the ``i``-th of ``n`` tactics (0-based). LeanDojo's record order is not always the source order
(a later branch may be listed first); the links do not depend on it: a goal whose producer is
listed after it is matched in a second pass (never against its own descendants).

The *prefix* of ``t`` is the tactics of the same proof (the same connected tree of links) listed
before ``t``, in record order; tactics of other (nested) proofs are left out, the text of the
enclosing tactic already holds them.

Only the data layer is used here (no torch).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..data.goals import erase_case_macro_scopes, goal_texts, metavariable_pattern
from ..data.model import Theorem, TracedTactic


def goal_keys(state: str) -> list[str]:
    """The canonical text of each goal of ``state`` (what goals are matched by); ``[]`` for a
    finished state."""
    return [erase_case_macro_scopes(g) for g in goal_texts(state)]


@dataclass(frozen=True, slots=True)
class TacticLabel:
    """The place of one traced tactic in its proof.

    ``index``: position in ``traced_tactics``. ``parents``/``children``: indices of the tactics
    that produced the goals of its ``state_before`` / that consume goals of its ``state_after``.
    ``tree``: index of the first tactic (in record order) of its proof tree; equal to ``index``
    for the first tactic of a proof or nested sub-proof. ``steps_remaining``: the label (≥ 1).
    ``prefix``: indices of the tactics of the same tree listed before it. ``unmatched_goals``:
    goals of its ``state_before`` that no tactic produced (non-zero only for the first tactic of
    a tree, or where the trace lost a link).
    """

    index: int
    parents: tuple[int, ...]
    children: tuple[int, ...]
    tree: int
    steps_remaining: int
    prefix: tuple[int, ...]
    unmatched_goals: int


@dataclass(slots=True)
class _Instance:
    key: str
    owner: int
    pattern: re.Pattern[str] | None
    consumed: bool = False


def _find(
    pool: list[_Instance], key: str, allowed: Callable[[int], bool], order: Iterable[int]
) -> _Instance | None:
    """The first open instance in ``order`` with text ``key``, else the first whose metavariable
    pattern matches ``key``; only instances whose owner is ``allowed``."""
    candidates = [pool[k] for k in order if not pool[k].consumed and allowed(pool[k].owner)]
    for inst in candidates:
        if inst.key == key:
            return inst
    for inst in candidates:
        if inst.pattern is not None and inst.pattern.fullmatch(key):
            return inst
    return None


def label_tactics(tactics: Sequence[TracedTactic]) -> list[TacticLabel]:
    """The :class:`TacticLabel` of each tactic of one proof (``theorem.traced_tactics``), in order.

    See the module docstring for the rule.
    """
    n = len(tactics)
    befores = [goal_keys(t.state_before) for t in tactics]
    afters = [goal_keys(t.state_after) for t in tactics]
    parents: list[set[int]] = [set() for _ in range(n)]
    pool: list[_Instance] = []
    unmatched: list[tuple[int, str]] = []

    # Pass 1, in record order: consume the most recently produced matching instance.
    for j in range(n):
        for key in befores[j]:
            inst = _find(pool, key, lambda owner: True, range(len(pool) - 1, -1, -1))
            if inst is None:
                unmatched.append((j, key))
            else:
                inst.consumed = True
                parents[j].add(inst.owner)
        pool.extend(_Instance(key, j, metavariable_pattern(key)) for key in afters[j])

    # Pass 2: goals whose producer is listed after them (never one of their own descendants).
    still_unmatched = [0] * n
    for j, key in unmatched:
        below = _descendants(j, _children_of(parents, n))
        order = sorted(
            (k for k in range(len(pool)) if pool[k].owner > j),
            key=lambda k: (pool[k].owner, k),
        )
        inst = _find(pool, key, _outside(below), order)
        if inst is None:
            still_unmatched[j] += 1
        else:
            inst.consumed = True
            parents[j].add(inst.owner)

    children = _children_of(parents, n)
    trees = _trees(parents, n)
    labels = []
    for i in range(n):
        tree = trees[i]
        labels.append(
            TacticLabel(
                index=i,
                parents=tuple(sorted(parents[i])),
                children=tuple(sorted(children[i])),
                tree=tree,
                steps_remaining=len(_descendants(i, children)),
                prefix=tuple(k for k in range(i) if trees[k] == tree),
                unmatched_goals=still_unmatched[i],
            )
        )
    return labels


def steps_remaining(tactics: Sequence[TracedTactic] | Theorem) -> list[int]:
    """``steps_remaining`` of each traced tactic (of a :class:`Theorem` or a tactic list)."""
    if isinstance(tactics, Theorem):
        tactics = tactics.traced_tactics
    return [label.steps_remaining for label in label_tactics(tactics)]


def _children_of(parents: list[set[int]], n: int) -> list[set[int]]:
    children: list[set[int]] = [set() for _ in range(n)]
    for j, ps in enumerate(parents):
        for p in ps:
            children[p].add(j)
    return children


def _outside(tactics: set[int]) -> Callable[[int], bool]:
    """Whether a tactic is none of ``tactics``."""
    return lambda owner: owner not in tactics


def _descendants(i: int, children: list[set[int]]) -> set[int]:
    """``i`` and every tactic reachable from it (cycle-safe)."""
    seen = {i}
    stack = [i]
    while stack:
        for c in children[stack.pop()]:
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def _trees(parents: list[set[int]], n: int) -> list[int]:
    """For each tactic, the smallest index of its connected tree of links."""
    root = list(range(n))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for j, ps in enumerate(parents):
        for p in ps:
            a, b = find(j), find(p)
            if a != b:
                root[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]
