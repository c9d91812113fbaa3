"""A best-first prover written against LeanDojo v1's API, the way ReProver's
``prover/proof_search.py`` is written: a priority queue of search nodes keyed by ``TacticState``,
``dojo.run_tac`` for every candidate, and v1's exceptions caught where ReProver catches them
(``DojoInitError`` around the Dojo, ``DojoCrashError`` around the search, ``DojoTacticTimeoutError``
around one step). It imports only ``lean_dojo``: the tests run it unchanged through
``python -m lean_dojo_v2.v1``.

Usage: v1_best_first.py THEOREMS.json CANDIDATES.json OUT.json [--timeout S] [--max-expansions N]

THEOREMS.json is a LeanDojo Benchmark split file; CANDIDATES.json holds the tactics a "model"
suggests: ``{"by_goal": {first goal text: [[tactic, logprob], ...]}, "everywhere": [[tactic,
logprob], ...]}``.
"""

# ruff: noqa: UP006, UP035, UP045 - written in the typing style of v1-era research code

import argparse
import asyncio
import json
import math
import sys
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional, Tuple

from lean_dojo import (
    Dojo,
    DojoCrashError,
    DojoInitError,
    DojoTacticTimeoutError,
    LeanError,
    LeanGitRepo,
    Pos,
    ProofFinished,
    ProofGivenUp,
    TacticState,
    Theorem,
)


class Status(Enum):
    PROVED = "Proved"
    FAILED = "Failed"
    OPEN = "Open"


class Node:
    status: Status
    distance_to_proof: float


@dataclass
class ProofFinishedNode(Node):
    inner: ProofFinished
    status: Status = Status.PROVED
    distance_to_proof: float = 0


@dataclass
class ErrorNode(Node):
    inner: object
    status: Status = Status.FAILED
    distance_to_proof: float = math.inf


@dataclass
class Edge:
    tactic: str
    src: "InternalNode"
    dst: Node


@dataclass(eq=False)
class InternalNode(Node):
    state: TacticState
    cumulative_logprob: float
    in_edges: List[Edge] = field(default_factory=list)
    out_edges: Optional[List[Edge]] = None
    status: Status = Status.OPEN
    distance_to_proof: float = math.inf

    @property
    def priority(self) -> float:
        return self.cumulative_logprob

    @property
    def is_explored(self) -> bool:
        return self.out_edges is not None

    def explore(self, edges: List[Edge]) -> None:
        self.out_edges = edges
        self.update()

    def update(self) -> None:
        """Recompute status and distance from the children; tell the parents when they change."""
        if self.out_edges is None:
            return
        status = self.status
        if any(e.dst.status == Status.PROVED for e in self.out_edges):
            status = Status.PROVED
        elif all(e.dst.status == Status.FAILED for e in self.out_edges):
            status = Status.FAILED
        distance = min((1 + e.dst.distance_to_proof for e in self.out_edges), default=math.inf)
        if (status, distance) != (self.status, self.distance_to_proof):
            self.status, self.distance_to_proof = status, distance
            for edge in self.in_edges:
                edge.src.update()

    def extract_proof(self) -> List[str]:
        node, tactics, seen = self, [], set()
        while isinstance(node, InternalNode):
            seen.add(id(node))
            edge = min(
                (
                    e
                    for e in node.out_edges or []
                    if e.dst.status == Status.PROVED and id(e.dst) not in seen
                ),
                key=lambda e: e.dst.distance_to_proof,
            )
            tactics.append(edge.tactic)
            node = edge.dst
        return tactics


class FixedCandidates:
    """The "model": tactics looked up by the state's first goal, plus some tried everywhere."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        self.by_goal: Dict[str, List[Tuple[str, float]]] = data.get("by_goal", {})
        self.everywhere: List[Tuple[str, float]] = data.get("everywhere", [])

    def generate(self, state: str) -> List[Tuple[str, float]]:
        first = state.split("\n\n")[0]
        cands = [tuple(c) for c in self.by_goal.get(first, [])] + [
            tuple(c) for c in self.everywhere
        ]
        return sorted(cands, key=lambda c: -c[1])


class BestFirstSearchProver:
    def __init__(self, tac_gen, timeout: int, max_expansions: Optional[int]) -> None:
        self.tac_gen = tac_gen
        self.timeout = timeout
        self.max_expansions = max_expansions

    def search(self, repo: LeanGitRepo, thm: Theorem, pos: Pos) -> Optional[dict]:
        self.num_expansions = 0
        self.responses: Dict[str, int] = {}
        self.timeouts = 0
        crashed = None
        try:
            with Dojo(thm, self.timeout) as (dojo, init_state):
                self.dojo = dojo
                self.root = InternalNode(state=init_state, cumulative_logprob=0.0)
                self.nodes = {init_state: self.root}
                try:
                    asyncio.run(self._best_first_search())
                except DojoCrashError as ex:
                    crashed = str(ex)
        except DojoInitError as ex:
            return {"full_name": thm.full_name, "init_error": str(ex)}
        proved = self.root.status == Status.PROVED
        return {
            "full_name": thm.full_name,
            "file_path": str(thm.file_path),
            "start": list(pos),
            "status": self.root.status.value,
            "proof": self.root.extract_proof() if proved else None,
            "num_total_nodes": len(self.nodes),
            "num_searched_nodes": self.num_expansions,
            "responses": self.responses,
            "timeouts": self.timeouts,
            "crashed": crashed,
            "init_state_id": self.root.state.id,
        }

    async def _best_first_search(self) -> None:
        time_start = time.time()
        self.counter = 0
        queue: asyncio.PriorityQueue = asyncio.PriorityQueue()
        queue.put_nowait((-self.root.priority, self.counter, self.root))
        while not queue.empty():
            try:
                await self._step(queue)
            except DojoTacticTimeoutError:
                self.timeouts += 1
            if time.time() - time_start > self.timeout or (
                self.max_expansions is not None and self.num_expansions >= self.max_expansions
            ):
                break
            if self.root.status != Status.OPEN:
                break

    async def _step(self, queue: asyncio.PriorityQueue) -> None:
        _, _, node = queue.get_nowait()
        edges = []
        for tactic, logprob in self.tac_gen.generate(node.state.pp):
            edge, finished = self._run_tactic(node, tactic, logprob, queue)
            edges.append(edge)
            if finished:
                break
        node.explore(edges)
        self.num_expansions += 1

    def _run_tactic(self, node: InternalNode, tactic: str, logprob: float, queue):
        response = self.dojo.run_tac(node.state, tactic)
        kind = type(response).__name__
        self.responses[kind] = self.responses.get(kind, 0) + 1
        try:
            result_node = self.nodes[response]
        except KeyError:
            if isinstance(response, ProofFinished):
                result_node = ProofFinishedNode(response)
            elif type(response) in (LeanError, DojoTacticTimeoutError, ProofGivenUp):
                result_node = ErrorNode(response)
            else:
                assert isinstance(response, TacticState)
                result_node = InternalNode(
                    state=response, cumulative_logprob=logprob + node.cumulative_logprob
                )
            if result_node.status == Status.OPEN:
                self.counter += 1
                queue.put_nowait((-result_node.priority, self.counter, result_node))
        self.nodes[response] = result_node
        edge = Edge(tactic=tactic, src=node, dst=result_node)
        if isinstance(result_node, InternalNode):
            result_node.in_edges.append(edge)
        return edge, isinstance(response, ProofFinished)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("theorems")
    parser.add_argument("candidates")
    parser.add_argument("out")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--max-expansions", type=int, default=None)
    args = parser.parse_args()

    with open(args.theorems, encoding="utf-8") as f:
        data = json.load(f)
    prover = BestFirstSearchProver(
        FixedCandidates(args.candidates), args.timeout, args.max_expansions
    )
    results = []
    for t in data:
        repo = LeanGitRepo(t["url"], t["commit"])
        thm = Theorem(repo, t["file_path"], t["full_name"])
        results.append(prover.search(repo, thm, Pos(*t["start"])))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    proved = sum(1 for r in results if r.get("status") == "Proved")
    print(f"proved {proved} of {len(results)}", file=sys.stderr)


if __name__ == "__main__":
    main()
