"""Test doubles for the search tests: a proof environment with a known transition graph and a
generator with fixed log-probs. The states' goal text is real (goals recorded in the bundled
LeanDojo sample); only which tactic leads where is scripted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from lean_dojo_v2.data import Pos, Theorem, goal_texts, load_theorems, sample_dataset_path
from lean_dojo_v2.interaction import (
    AsyncProofEnv,
    EnvCrashedError,
    ProofEnv,
    ProofFinished,
    ProofState,
    StaleStateError,
    TacticError,
    TacticTimeout,
    UnknownTheoremError,
    Verdict,
    split_tactics,
)
from lean_dojo_v2.models.generator import Candidate, TacticGenerator

FINISHED = "<finished>"


@lru_cache(maxsize=1)
def sample_theorems() -> tuple[Theorem, ...]:
    return tuple(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)


@lru_cache(maxsize=1)
def real_goals() -> tuple[str, ...]:
    """Distinct single goals recorded in the bundled sample, in file order."""
    seen: dict[str, None] = {}
    for thm in sample_theorems():
        for tt in thm.traced_tactics:
            for g in goal_texts(tt.state_before):
                seen.setdefault(g, None)
    return tuple(seen)


def theorem(name: str = "Crafted.thm") -> Theorem:
    base = sample_theorems()[0]
    return Theorem(
        url=base.url,
        commit=base.commit,
        file_path="Crafted.lean",
        full_name=name,
        start=Pos(1, 1),
        end=Pos(1, 1),
        traced_tactics=[],
    )


@dataclass
class Graph:
    """A transition graph over labelled states. ``edges[label][tactic]`` is the next label,
    :data:`FINISHED`, ``("error", kind)``, ``("crash",)``, ``("stale",)`` or ``("slow", seconds,
    next)`` (runs ``seconds``; a timeout below that gives a TacticTimeout)."""

    root: str
    edges: dict[str, dict[str, Any]]
    goals: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        labels = {self.root, *self.edges}
        for outs in self.edges.values():
            for out in outs.values():
                if isinstance(out, str) and out != FINISHED:
                    labels.add(out)
                elif isinstance(out, tuple) and out[0] == "slow" and out[2] != FINISHED:
                    labels.add(out[2])
        pool = real_goals()
        for k, label in enumerate(sorted(labels)):
            self.goals.setdefault(label, pool[k])
        self.label_of = {g: lbl for lbl, g in self.goals.items()}

    def text(self, label: str) -> str:
        return self.goals[label]

    def label(self, text: str) -> str:
        return self.label_of[text]


class GraphEnv(AsyncProofEnv):
    """An :class:`AsyncProofEnv` over a :class:`Graph`. ``latency`` seconds per call (asyncio
    sleep); ``shares_states`` False makes states belong to this env (others raise
    StaleStateError); ``reject`` proofs (tactic tuples) that ``verify`` refuses."""

    backend = "graph"

    def __init__(
        self,
        graph: Graph,
        *,
        name: str = "env0",
        latency: float = 0.0,
        shares_states: bool = True,
        reject: Sequence[Sequence[str]] = (),
        theorem_name: str | None = None,
    ) -> None:
        self.graph = graph
        self.name = name
        self.latency = latency
        self.shares_states = shares_states
        self.reject = {tuple(r) for r in reject}
        self.theorem_name = theorem_name
        self.calls: list[tuple[str, str, float | None]] = []  # (state label, tactic, timeout)
        self.generation = 0
        self.busy = 0
        self.max_busy = 0

    def _state(self, label: str) -> ProofState:
        return ProofState(
            (self.graph.text(label),), self.backend, handle=(self.name, self.generation, label)
        )

    async def start(self, theorem: Theorem) -> ProofState:
        if self.theorem_name is not None and theorem.full_name != self.theorem_name:
            raise UnknownTheoremError(f"{theorem.full_name} is not in this environment")
        return self._state(self.graph.root)

    async def run_tactic(self, state: ProofState, tactic: str, timeout: float | None = None):
        name, gen, label = state.handle
        if not self.shares_states and (name, gen) != (self.name, self.generation):
            raise StaleStateError(f"state of {name}/{gen} given to {self.name}/{self.generation}")
        self.calls.append((label, tactic, timeout))
        self.busy += 1
        self.max_busy = max(self.max_busy, self.busy)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            out = self.graph.edges.get(label, {}).get(tactic, ("error", "tactic"))
            if isinstance(out, tuple) and out[0] == "slow":
                _, seconds, nxt = out
                if timeout is not None and seconds > timeout:
                    await asyncio.sleep(timeout)
                    return TacticTimeout(f"ran past {timeout} s", self.backend, timeout=timeout)
                await asyncio.sleep(seconds)
                out = nxt
            if out == FINISHED:
                return ProofFinished(self.backend)
            if isinstance(out, tuple):
                if out[0] == "crash":
                    self.generation += 1  # the process is gone: its states too
                    raise EnvCrashedError("the scripted process died")
                if out[0] == "stale":
                    raise StaleStateError("scripted stale state")
                return TacticError(f"{tactic} failed", self.backend, out[1])
            return self._state(out)
        finally:
            self.busy -= 1

    async def verify(self, theorem: Theorem, proof: str) -> Verdict:
        tactics = tuple(split_tactics(proof))
        if tactics in self.reject:
            return Verdict(False, self.backend, "replay", ("rejected by the test",))
        label: str | None = self.graph.root
        for i, tac in enumerate(tactics):
            out = self.graph.edges.get(label or "", {}).get(tac)
            if isinstance(out, tuple) and out[0] == "slow":
                out = out[2]
            if out == FINISHED and i == len(tactics) - 1:
                return Verdict(True, self.backend, "replay", ())
            if not isinstance(out, str) or out == FINISHED:
                return Verdict(False, self.backend, "replay", (f"tactic {i + 1} fails",))
            label = out
        return Verdict(False, self.backend, "replay", ("unsolved goals",))


class ScriptedGenerator(TacticGenerator):
    """Fixed candidates per state label; records the labels of every ``generate`` call."""

    def __init__(
        self,
        graph: Graph,
        table: Mapping[str, Sequence[tuple[str, float]]],
        *,
        delay: float = 0.0,
        fail_on: str | None = None,
    ) -> None:
        self.graph = graph
        self.table = table
        self.delay = delay
        self.fail_on = fail_on
        self.calls: list[list[str]] = []
        self.bound: list[str] = []

    def for_theorem(self, theorem: Any) -> ScriptedGenerator:
        self.bound.append(theorem.full_name)
        return self

    def generate(self, states, num_samples, *, prefix=None):
        labels = [self.graph.label(s) for s in states]
        self.calls.append(labels)
        if self.delay:
            time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in labels:
            raise RuntimeError(f"model exploded on {self.fail_on}")
        out = []
        for lbl in labels:
            cands = [Candidate(t, lp) for t, lp in self.table.get(lbl, ())]
            out.append(sorted(cands, key=lambda c: -c.logprob)[:num_samples])
        return out


class SlowReplayEnv(ProofEnv):
    """A blocking env over another one with a fixed latency per call (time.sleep)."""

    shares_states = True

    def __init__(self, inner: ProofEnv, latency: float) -> None:
        self.inner = inner
        self.latency = latency
        self.backend = inner.backend

    def start(self, theorem):
        time.sleep(self.latency)
        return self.inner.start(theorem)

    def run_tactic(self, state, tactic, timeout=None):
        time.sleep(self.latency)
        return self.inner.run_tactic(state, tactic, timeout)

    def verify(self, theorem, proof):
        return self.inner.verify(theorem, proof)


class RecordedTacticGenerator(TacticGenerator):
    """Proposes, for a state, the tactics recorded in the sample for its first goal, among wrong
    ones: tactics recorded for *other* goals (real text). Log-probs are deterministic per state
    and informative but noisy: a recorded tactic draws from [-1.5, -0.2], a wrong one from
    [-3.0, -0.5], so a wrong tactic often outranks the right one."""

    def __init__(self, theorems: Sequence[Theorem], seed: int = 0) -> None:
        import random

        self._random = random.Random
        self.seed = seed
        self.recorded: dict[str, list[str]] = {}
        pool: list[tuple[str, str]] = []
        for thm in theorems:
            for tt in thm.traced_tactics:
                goals = goal_texts(tt.state_before)
                if goals:
                    tactics = self.recorded.setdefault(goals[0], [])
                    if tt.tactic not in tactics:
                        tactics.append(tt.tactic)
                    pool.append((goals[0], tt.tactic))
        self.pool = pool
        self.calls = 0

    def generate(self, states, num_samples, *, prefix=None):
        self.calls += 1
        out = []
        for text in states:
            first = text.split("\n\n")[0]
            rng = self._random(f"{self.seed}:{text}")
            right = self.recorded.get(first, [])[:num_samples]
            wrong: list[str] = []
            for goal, tactic in rng.sample(self.pool, min(len(self.pool), 4 * num_samples)):
                if goal != first and tactic not in wrong and tactic not in right:
                    wrong.append(tactic)
            wrong = wrong[: max(0, num_samples - len(right))]
            cands = [Candidate(t, -rng.uniform(0.2, 1.5)) for t in right]
            cands += [Candidate(t, -rng.uniform(0.5, 3.0)) for t in wrong]
            out.append(sorted(cands, key=lambda c: -c.logprob))
        return out


def direct_replay_proof(env: ProofEnv, thm: Theorem) -> list[str] | None:
    """The recorded tactics that apply in order from the first state (a tactic nested in an
    earlier one, e.g. inside a bullet, does not apply at top level and is skipped), when they
    reach no goals and ``verify`` accepts them; else None."""
    from lean_dojo_v2.prover import proof_text

    state: Any = env.start(thm)
    used: list[str] = []
    for tt in thm.traced_tactics:
        if not isinstance(state, ProofState):
            break
        out = env.run_tactic(state, tt.tactic)
        if isinstance(out, TacticError):
            continue
        used.append(tt.tactic)
        state = out
    if isinstance(state, ProofFinished) and env.verify(thm, proof_text(used)).ok:
        return used
    return None
