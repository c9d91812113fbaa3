"""The tree (a graph, with dedup) that best-first search builds, and its statistics.

A :class:`Node` is one distinct proof state (keyed by its canonical text, ``ProofState.text``);
an :class:`Edge` is one tactic tried on a node, with what came of it. A state reached again
is not a new node: the edge points at the existing one (a *dedup hit*), and when the new path
has a higher cumulative log-prob and the node has not been expanded yet, the node takes the
better path (its parent, tactic and priority change). Nodes remember the state handle of each
environment that holds them (``handles``: Pantograph states belong to one REPL process).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..interaction.types import ProofState
from .attempt import TreeNode

# Node status
OPEN = "open"  # in the frontier
EXPANDED = "expanded"
DROPPED = "dropped"  # its state could not be used (env crash / stale and not re-created)
TOO_DEEP = "too_deep"  # at max_depth: never expanded


@dataclass(eq=False)
class Node:
    """One distinct proof state in the search."""

    id: int
    key: str  # canonical state text
    goals: tuple[str, ...]
    depth: int
    logprob: float  # cumulative log-prob of the tactic path to it
    priority: float  # what the frontier orders by (higher first)
    parent: int | None = None  # node id of the best known path
    tactic: str | None = None  # the tactic from ``parent`` on that path
    handles: dict[int, ProofState] = field(default_factory=dict)  # env index -> state
    status: str = OPEN
    progress: float | None = None  # predicted steps remaining, when a progress model scored it
    expanded_at: int | None = None  # expansion index

    @property
    def text(self) -> str:
        return self.key


@dataclass(frozen=True)
class Edge:
    """A tactic tried on node ``source``. ``outcome`` is ``"state"`` (a new node), ``"dedup"``
    (a node that existed already), ``"proof"`` (no goals left), ``"error:<kind>"`` (Lean
    rejected it: tactic, parse, sorry, not_recorded, timeout) or ``"crash"`` / ``"stale"`` (the
    environment failed; the branch is dropped)."""

    source: int
    tactic: str
    logprob: float
    outcome: str
    target: int | None = None


class SearchTree:
    """Nodes, edges, the frontier (a max-heap on priority) and counters."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.by_key: dict[str, Node] = {}
        self.expansion_order: list[int] = []  # node ids in the order they were expanded
        self.counters: Counter[str] = Counter()
        self.tactic_errors: Counter[str] = Counter()
        self._heap: list[tuple[float, int, int, float]] = []  # (-priority, seq, node id, priority)
        self._seq = itertools.count()

    # ------------------------------------------------------------------------- nodes
    def add_root(self, state: ProofState, env_index: int) -> Node:
        node = Node(0, state.text, state.goals, 0, 0.0, 0.0)
        node.handles[env_index] = state
        self.nodes.append(node)
        self.by_key[node.key] = node
        return node

    def add_child(
        self,
        parent: Node,
        tactic: str,
        logprob: float,
        state: ProofState,
        env_index: int,
    ) -> tuple[Node, str]:
        """The node of ``state`` reached from ``parent`` by ``tactic``, and ``"new"``,
        ``"dedup"`` or ``"reparented"`` (an existing node not yet expanded took this path, which
        has a higher cumulative log-prob)."""
        key = state.text
        total = parent.logprob + logprob
        node = self.by_key.get(key)
        if node is not None:
            self.counters["dedup_hits"] += 1
            node.handles.setdefault(env_index, state)
            self.edges.append(Edge(parent.id, tactic, logprob, "dedup", node.id))
            if node.status == OPEN and node.id != 0 and total > node.logprob:
                node.parent, node.tactic = parent.id, tactic
                node.logprob, node.depth = total, parent.depth + 1
                self.counters["reparented"] += 1
                return node, "reparented"
            return node, "dedup"
        node = Node(len(self.nodes), key, state.goals, parent.depth + 1, total, total)
        node.parent, node.tactic = parent.id, tactic
        node.handles[env_index] = state
        self.nodes.append(node)
        self.by_key[key] = node
        self.edges.append(Edge(parent.id, tactic, logprob, "state", node.id))
        return node, "new"

    def add_edge(self, parent: Node, tactic: str, logprob: float, outcome: str) -> None:
        self.edges.append(Edge(parent.id, tactic, logprob, outcome))

    def path(self, node: Node, last: str | None = None) -> list[str]:
        """The tactics from the root to ``node`` (then ``last``, when given)."""
        tactics: list[str] = [] if last is None else [last]
        seen = set()
        current: Node | None = node
        while current is not None and current.parent is not None:
            if current.id in seen:  # cannot happen (paths only improve), but never loop
                raise RuntimeError("cycle in the search tree's parent links")
            seen.add(current.id)
            assert current.tactic is not None
            tactics.append(current.tactic)
            current = self.nodes[current.parent]
        tactics.reverse()
        return tactics

    # ---------------------------------------------------------------------- frontier
    def push(self, node: Node) -> None:
        heapq.heappush(self._heap, (-node.priority, next(self._seq), node.id, node.priority))

    def pop(self) -> Node | None:
        """The open node of highest priority (ties: the one pushed first), or None. Entries
        left behind by a re-prioritised node are skipped."""
        while self._heap:
            _, _, node_id, priority = heapq.heappop(self._heap)
            node = self.nodes[node_id]
            if node.status == OPEN and priority == node.priority:
                return node
        return None

    @property
    def frontier_size(self) -> int:
        return sum(
            1
            for _, _, i, p in self._heap
            if self.nodes[i].status == OPEN and self.nodes[i].priority == p
        )

    # ------------------------------------------------------------------------ report
    def report_nodes(self, proof: list[str] | None = None) -> list[TreeNode]:
        """The tree as a report draws it (:class:`~.attempt.TreeNode`): the root, then one node
        per tactic tried, in the order they were tried, under the node of the state it was
        tried on (the edge that first reached that state). ``proof``: the accepted proof's
        tactics, whose nodes get ``proved``."""
        root = self.nodes[0] if self.nodes else None
        if root is None:
            return []
        out = [TreeNode(0, None, root.key, None, 0.0, root.status)]
        report_id = {root.id: 0}  # state node id -> report node id
        by_step: dict[tuple[int, str], TreeNode] = {}
        for edge in self.edges:
            parent = report_id.get(edge.source, 0)
            node = TreeNode(len(out), parent, None, edge.tactic, edge.logprob, edge.outcome)
            if edge.outcome == "state" and edge.target is not None:
                target = self.nodes[edge.target]
                node.goal, node.outcome = target.key, target.status
                report_id[target.id] = node.id
            elif edge.outcome == "dedup":
                # the state was reached before: its node exists already (edges come in order)
                node.outcome = "duplicate"
                node.target = None if edge.target is None else report_id.get(edge.target)
            by_step.setdefault((edge.source, edge.tactic), node)
            out.append(node)
        if proof:
            out[0].proved = True
            state: int | None = root.id
            for tactic in proof:
                step = by_step.get((state, tactic)) if state is not None else None
                if step is None:
                    break
                step.proved = True
                edge = self.edges[step.id - 1]
                state = edge.target
        return out

    # ------------------------------------------------------------------------- stats
    def stats(self) -> dict[str, Any]:
        """JSON-ready counters of the tree."""
        return {
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "expanded": len(self.expansion_order),
            "frontier": self.frontier_size,
            "max_depth": max((n.depth for n in self.nodes), default=0),
            "dedup_hits": self.counters["dedup_hits"],
            "reparented": self.counters["reparented"],
            "tactic_errors": dict(sorted(self.tactic_errors.items())),
            "dropped_nodes": sum(1 for n in self.nodes if n.status == DROPPED),
        }
