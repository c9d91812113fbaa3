"""A constant-time tactic generator over real recorded data, for the parallel-proving and CLI
tests: for a state it proposes the tactics recorded from that state's first goal in a LeanDojo
dataset, among wrong ones (which the replay environment rejects). Picklable factories, so spawn
workers and Ray actors can build it; it can kill its own process on a chosen theorem to play a
crashing worker."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from lean_dojo_v2.data.dataset import load_theorems
from lean_dojo_v2.data.goals import goal_texts
from lean_dojo_v2.models.generator import Candidate, TacticGenerator
from lean_dojo_v2.prover.result import proof_text

WRONG = ("simp_all [foo_bar_baz]", "exact absurd_not_recorded")


class OracleGenerator(TacticGenerator):
    def __init__(
        self,
        data: str,
        kill_on: str | None = None,
        once_marker: str | None = None,
        pid_file: str | None = None,
        kill_always: str | None = None,
    ) -> None:
        self.kill_always = kill_always
        self.table: dict[str, list[str]] = {}
        for thm in load_theorems(data):
            for tac in thm.traced_tactics:
                goals = goal_texts(tac.state_before)
                if goals:
                    bucket = self.table.setdefault(goals[0], [])
                    if tac.tactic not in bucket:
                        bucket.append(tac.tactic)
        self.kill_on = kill_on
        self.once_marker = once_marker
        self.pid_file = pid_file

    def for_theorem(self, theorem):  # noqa: ANN001, ANN201
        if theorem.full_name == self.kill_always:
            os.kill(os.getpid(), signal.SIGKILL)
        if theorem.full_name == self.kill_on and not (
            self.once_marker and Path(self.once_marker).exists()
        ):
            if self.once_marker:
                Path(self.once_marker).write_text("killed once")
            if self.pid_file:  # wait to be killed from outside
                Path(self.pid_file).write_text(str(os.getpid()))
                time.sleep(120)
            os.kill(os.getpid(), signal.SIGKILL)
        return self

    def generate(self, states, num_samples, *, prefix=None):  # noqa: ANN001, ANN201
        out = []
        for state in states:
            first = state.split("\n\n")[0]
            right = self.table.get(first, [])
            tactics = [WRONG[0], *right, *WRONG[1:]][:num_samples]
            out.append([Candidate(t, -0.1 * (k + 1)) for k, t in enumerate(tactics)])
        return out


@dataclass(frozen=True)
class OracleSpec:
    data: str
    kill_on: str | None = None
    once_marker: str | None = None
    pid_file: str | None = None
    kill_always: str | None = None

    def __call__(self) -> OracleGenerator:
        return OracleGenerator(
            self.data, self.kill_on, self.once_marker, self.pid_file, self.kill_always
        )


def replay_provable(env, theorems) -> set[str]:  # noqa: ANN001
    """Names of the theorems whose recorded proof the replay environment accepts."""
    out = set()
    for thm in theorems:
        if thm.traced_tactics:
            proof = proof_text([t.tactic for t in thm.traced_tactics])
            if env.verify(thm, proof).ok:
                out.add(thm.full_name)
    return out


__all__ = ["OracleGenerator", "OracleSpec", "replay_provable"]
