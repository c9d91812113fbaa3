"""The one proving pipeline (``prover/pipeline.py``): nothing else in the package searches,
records or writes back; a run without a database or a write-back request records and writes
nothing; observers see every final result, after its re-check; a re-check that rejects a proof
makes it a failure that says why; a job's write-back request is checked once, before the search.

Real data: the bundled LeanDojo sample through ``ReplayEnv``; the generator proposes the
recorded tactics among wrong ones (tests/prover/pipeline_oracle.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lean_dojo_v2
from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.interaction import ReplayEnv
from lean_dojo_v2.interaction.types import Verdict
from lean_dojo_v2.prover.outcome import TheoremOutcome
from lean_dojo_v2.prover.parallel import ReplayEnvSpec
from lean_dojo_v2.prover.pipeline import (
    JobReport,
    ProofJob,
    ProveRun,
    WriteBackRequest,
    recheck_proofs,
)
from lean_dojo_v2.prover.search import SearchConfig

from .pipeline_oracle import OracleSpec

PACKAGE = Path(lean_dojo_v2.__file__).resolve().parent
CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60)

# The pipeline's steps, and the only modules that may call each: its own module and the pipeline.
STEPS = {
    "prove_theorems": {"prover/parallel.py", "prover/pipeline.py"},
    "record_results": {"prover/recording.py", "prover/pipeline.py"},
    "write_back": {"prover/writeback.py", "prover/pipeline.py"},
}


def _calls(path: Path) -> set[str]:
    """Names of the functions ``path`` calls (``f(...)`` and ``module.f(...)``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def test_only_the_pipeline_searches_records_and_writes_back() -> None:
    """``lean-dojo-v2 prove``, the agents, the LeanAgent module and the quickstart all go
    through ``ProveRun``: no other module calls the steps it runs."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for name in _calls(path) & set(STEPS):
            if rel not in STEPS[name]:
                found.append(f"{rel} calls {name}")
    assert not found, "prove through lean_dojo_v2.prover.pipeline.ProveRun instead:\n" + "\n".join(
        found
    )


@pytest.fixture(scope="module")
def data() -> str:
    return str(sample_dataset_path())


@pytest.fixture(scope="module")
def theorems(data: str) -> list:
    return [t for t in load_theorems(data) if t.traced_tactics][:4]


def test_a_run_without_database_or_request_records_and_writes_nothing(data, theorems):
    """The quickstart's and the evaluation's shape: search and re-check only; each final
    result goes to every observer, in this process, and comes back typed."""
    seen: list = []
    run = ProveRun(
        OracleSpec(data),
        CONFIG,
        parallel="inline",
        progress=False,
        recheck=True,
        observers=[seen.append],
    )
    report = run.run([ProofJob(theorems, ReplayEnvSpec(data), label="sample")])
    assert report.recorded is None and report.write_back_error is None
    (job,) = report.jobs
    assert isinstance(job, JobReport) and job.write_back is None
    assert (
        [r.theorem for r in seen]
        == [t.full_name for t in theorems]
        == [r.theorem for r in report.results]
    )
    assert report.proved == len(theorems)  # the oracle proposes the recorded tactics
    assert all(r.checked_by == "replay" for r in seen)  # observers see the re-checked result
    assert all(isinstance(o, TheoremOutcome) and o.repository == "sample" for o in job.outcomes)
    assert not any(o.written_back for o in job.outcomes)


class _Rejecting(ReplayEnv):
    """A replay environment whose whole-proof check accepts nothing (and says why)."""

    closed = False

    def verify(self, theorem, proof):  # noqa: ANN001, ANN201
        return Verdict(False, "replay", "replay", ("not a recorded path",))

    def close(self) -> None:
        _Rejecting.closed = True
        super().close()


def test_a_proof_the_recheck_rejects_is_a_failure_saying_why(data, theorems):
    with ReplayEnv.from_dataset(data) as env:
        results = ProveRun(OracleSpec(data), CONFIG, parallel="inline", progress=False).run(
            [ProofJob(theorems[:2], lambda: env)]
        )
    searched = results.results
    assert all(r.status == "proved" for r in searched)
    rechecked = recheck_proofs(searched, theorems[:2], lambda: _Rejecting.from_theorems(theorems))
    assert [r.status for r in rechecked] == ["failed", "failed"]
    assert all("the re-check rejected the proof: not a recorded path" in r.error for r in rechecked)
    assert _Rejecting.closed  # the checker's environment is closed again


def test_a_request_is_checked_once_before_the_search(tmp_path, data, theorems, monkeypatch):
    """A bad write-back argument is refused before anything is searched; a checked request is
    not checked (nor its working copy chosen) a second time."""
    import lean_dojo_v2.prover.parallel as parallel
    import lean_dojo_v2.prover.writeback as writeback
    from lean_dojo_v2.prover.writeback import WriteBackError

    monkeypatch.setattr(parallel, "prove_theorems", lambda *a, **k: pytest.fail("searched"))
    run = ProveRun(OracleSpec(data), CONFIG, parallel="inline", progress=False)
    bad = WriteBackRequest(tmp_path / "no-such-repo")
    with pytest.raises(WriteBackError, match="no repository directory"):
        run.run([ProofJob(theorems, ReplayEnvSpec(data), write_back=bad)])

    checks: list = []
    real = writeback.check_write_back
    monkeypatch.setattr(
        writeback, "check_write_back", lambda *a, **k: checks.append(a) or real(*a, **k)
    )
    repo = tmp_path / "repo"
    for t in theorems:
        (repo / t.file_path).parent.mkdir(parents=True, exist_ok=True)
        (repo / t.file_path).write_text("-- no sorry here\n")
    request = WriteBackRequest(repo, out=tmp_path / "work").check(theorems)
    assert request.target is not None and request.check(theorems) is request
    assert len(checks) == 1
