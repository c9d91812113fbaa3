"""Lean calls and Lean CPU seconds, measured at the environment: every call that reaches it is
counted for its problem, with the CPU time of the child processes (a REPL) it kept busy."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import partial
from pathlib import Path

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.evaluation.lean_usage import MeteredEnvFactory, UsageLedger, problem_key
from lean_dojo_v2.interaction import ProofEnv, ReplayEnv
from lean_dojo_v2.interaction.types import ProofState, TacticResult, Verdict
from lean_dojo_v2.prover.threads import run_sync

# A stand-in for Lean's REPL: a child process that burns CPU for each request it reads.
_BUSY_CHILD = (
    "import sys, time\n"
    "for line in sys.stdin:\n"
    "    end = time.process_time() + float(line)\n"
    "    while time.process_time() < end:\n"
    "        pass\n"
    "    print('ok', flush=True)\n"
)


class BusyEnv(ProofEnv):
    """Each call makes its child process work ``cpu`` seconds."""

    backend = "busy"

    def __init__(self, cpu: float) -> None:
        self.cpu = cpu
        self.child = subprocess.Popen(
            [sys.executable, "-c", _BUSY_CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _work(self) -> None:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(f"{self.cpu}\n")
        self.child.stdin.flush()
        assert self.child.stdout.readline().strip() == "ok"

    def start(self, theorem):  # type: ignore[no-untyped-def]
        self._work()
        return ProofState(("⊢ True",), self.backend, theorem=theorem)

    def run_tactic(self, state, tactic, timeout=None) -> TacticResult:  # type: ignore[no-untyped-def]
        self._work()
        return state

    def verify(self, theorem, proof) -> Verdict:  # type: ignore[no-untyped-def]
        self._work()
        return Verdict(ok=proof == "trivial", backend=self.backend, checked_by="lean")

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=10)


def test_calls_and_child_cpu_seconds_are_counted_per_problem(tmp_path: Path) -> None:
    a, b = load_theorems(sample_dataset_path())[:2]
    factory = MeteredEnvFactory(partial(BusyEnv, 0.15), str(tmp_path))
    pickle.loads(pickle.dumps(factory))  # it travels to worker processes
    env = factory()
    assert not isinstance(env, list)
    try:
        state = run_sync(env.start(a))
        run_sync(env.run_tactic(state, "simp"))  # a's too: the state is a's
        assert run_sync(env.verify(a, "trivial")).ok
        assert not run_sync(env.verify(b, "sorry")).ok
    finally:
        run_sync(env.close())
    ledger = UsageLedger(tmp_path)
    used_a = ledger.take(problem_key(a.full_name, a.file_path))
    used_b = ledger.take(problem_key(b.full_name, b.file_path))
    assert (used_a.calls, used_b.calls) == (3, 1)
    # 0.15 s of the child's CPU per call (less the odd tick a busy machine steals)
    assert 3 * 0.1 <= used_a.cpu_seconds <= 3 * 0.15 + 1.0
    assert 0.1 <= used_b.cpu_seconds <= 0.15 + 1.0
    # taken once: a problem is never counted twice
    assert ledger.take(problem_key(a.full_name, a.file_path)).calls == 0


def test_a_metered_replay_env_keeps_its_capabilities_and_answers(tmp_path: Path) -> None:
    theorem = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    made = MeteredEnvFactory(
        partial(ReplayEnv.from_dataset, str(sample_dataset_path())), str(tmp_path)
    )()
    assert not isinstance(made, list)
    assert made.shares_states and made.backend == "replay"
    proof = "\n".join(t.tactic for t in theorem.traced_tactics)
    assert run_sync(made.verify(theorem, proof)).ok
    used = UsageLedger(tmp_path).take(problem_key(theorem.full_name, theorem.file_path))
    assert used.calls == 1 and used.cpu_seconds >= 0.0


def test_whole_proof_modes_take_a_recorded_first_goal_from_the_benchmark(tmp_path: Path) -> None:
    """A miniF2F problem records its first goal: no Lean call starts it; one without (a
    LeanDojo theorem) is started by the environment; a tactic on a recorded state starts the
    problem in the environment first."""
    from lean_dojo_v2.evaluation import load_benchmark
    from lean_dojo_v2.evaluation.recorded_start import RecordedStartFactory

    problem = load_benchmark("minif2f-test", limit=1).problems[0]
    standalone = problem.to_theorem()
    traced = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    factory = RecordedStartFactory(MeteredEnvFactory(partial(BusyEnv, 0.0), str(tmp_path)))
    pickle.loads(pickle.dumps(factory))
    env = factory()
    assert not isinstance(env, list)
    ledger = UsageLedger(tmp_path)
    try:
        state = run_sync(env.start(standalone))
        assert state.goals and problem.goal and state.goals[0] in problem.goal
        assert ledger.take(problem_key(standalone.full_name, "")).calls == 0
        run_sync(env.start(traced))
        assert ledger.take(problem_key(traced.full_name, traced.file_path)).calls == 1
        run_sync(env.run_tactic(state, "simp"))  # start + tactic, in the environment
        assert ledger.take(problem_key(standalone.full_name, "")).calls == 2
    finally:
        run_sync(env.close())
