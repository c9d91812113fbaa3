"""Proofs found for theorems (sorry status follows) and the training runs that produced models."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data import Theorem, TracedTactic
from ..data.jsonio import loads
from .common import RepositoryRef, named, now
from .errors import RecordNotFoundError
from .ingest import encode_json
from .queries import TheoremQueries
from .records import ProofRecord, StoredTheorem, TrainingRun


class ProofsAndRuns(TheoremQueries):
    """``record_proof``, ``proofs``, ``best_proof``; ``start_training_run``,
    ``finish_training_run``, ``training_runs``."""

    def record_proof(
        self,
        theorem: Theorem | StoredTheorem | int,
        proof: str | Sequence[str] | Sequence[TracedTactic],
        *,
        backend: str = "unknown",
        verified: bool = False,
        time_s: float | None = None,
        model: str | None = None,
        training_run: int | None = None,
    ) -> ProofRecord:
        """Record a proof found for ``theorem`` and, if it was an unproved ``sorry``, move it to
        ``sorry_proved``.

        ``proof`` is the proof text (one tactic per line), a list of tactics, or a list of
        :class:`TracedTactic` (their goal states are kept). ``backend`` says what checked it
        (``pantograph``, ``replay``…), ``verified`` whether the whole proof was re-checked by Lean.
        """
        if isinstance(proof, str):
            lines = [line for line in proof.splitlines() if line.strip()]
            steps = [{"tactic": line, "state_before": "", "state_after": ""} for line in lines]
            text = proof
        else:
            steps = []
            for p in proof:
                if isinstance(p, TracedTactic):
                    steps.append(
                        {
                            "tactic": p.tactic,
                            "state_before": p.state_before,
                            "state_after": p.state_after,
                        }
                    )
                elif isinstance(p, str):
                    steps.append({"tactic": p, "state_before": "", "state_after": ""})
                else:
                    raise TypeError(f"a proof step must be text or a TracedTactic, not {p!r}")
            text = "\n".join(s["tactic"] for s in steps)
        if not steps:
            raise ValueError("an empty proof")
        found = now()
        with self.transaction() as conn:
            tid = self._theorem_id(theorem)
            if (
                training_run is not None
                and not conn.execute(
                    "SELECT 1 FROM training_runs WHERE id = ?", (training_run,)
                ).fetchone()
            ):
                raise RecordNotFoundError(f"no training run {training_run}")
            cur = conn.execute(
                "INSERT INTO proofs (theorem_id, tactics, proof_text, backend, verified, time_s, "
                "model, training_run_id, found_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tid,
                    encode_json(steps),
                    text,
                    backend,
                    1 if verified else 0,
                    time_s,
                    model,
                    training_run,
                    found,
                ),
            )
            conn.execute(
                "UPDATE theorems SET sorry_status = CASE sorry_status WHEN 'sorry_unproved' "
                "THEN 'sorry_proved' ELSE sorry_status END, "
                "proof_steps = CASE WHEN proof_steps IS NULL OR proof_steps > ? THEN ? "
                "ELSE proof_steps END WHERE id = ?",
                (len(steps), len(steps), tid),
            )
            pid = cur.lastrowid
        assert pid is not None
        return ProofRecord(
            pid, tid, steps, text, backend, verified, time_s, model, training_run, found
        )

    def proofs(self, theorem: Theorem | StoredTheorem | int | None = None) -> list[ProofRecord]:
        """Recorded proofs of one theorem (or all), oldest first."""
        if theorem is None:
            rows = named(self._conn, f"SELECT {_PROOF_COLUMNS} FROM proofs ORDER BY id")
        else:
            rows = named(
                self._conn,
                f"SELECT {_PROOF_COLUMNS} FROM proofs WHERE theorem_id = ? ORDER BY id",
                (self._theorem_id(theorem),),
            )
        return [
            ProofRecord(
                id=r["id"],
                theorem_id=r["theorem_id"],
                tactics=loads(r["tactics"]),
                proof_text=r["proof_text"],
                backend=r["backend"],
                verified=bool(r["verified"]),
                time_s=r["time_s"],
                model=r["model"],
                training_run_id=r["training_run_id"],
                found_at=r["found_at"],
            )
            for r in rows
        ]

    def best_proof(self, theorem: Theorem | StoredTheorem | int) -> ProofRecord | None:
        """Verified before unverified, then fewest steps, then oldest."""
        proofs = self.proofs(theorem)
        if not proofs:
            return None
        return min(proofs, key=lambda p: (not p.verified, len(p.tactics), p.id))

    def start_training_run(
        self,
        kind: str,
        *,
        model: str | None = None,
        config: Mapping[str, Any] | None = None,
        repositories: Iterable[RepositoryRef] = (),
    ) -> int:
        """Record the start of a training run (``sft``, ``grpo``, ``retrieval``, ``progress``…) and
        the repositories it trains on, in order; returns its id."""
        repos = self.resolve_repositories(list(repositories)) if repositories else []
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO training_runs (kind, model, status, started_at, config, metrics) "
                "VALUES (?, ?, 'running', ?, ?, '{}')",
                (kind, model, now(), encode_json(dict(config or {}))),
            )
            run_id = cur.lastrowid
            assert run_id is not None
            conn.executemany(
                "INSERT INTO training_run_repositories (run_id, repository_id, position) "
                "VALUES (?, ?, ?)",
                [(run_id, r.id, i) for i, r in enumerate(repos)],
            )
        return run_id

    def finish_training_run(
        self,
        run_id: int,
        *,
        status: str = "finished",
        metrics: Mapping[str, Any] | None = None,
        checkpoint: str | Path | None = None,
    ) -> None:
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE training_runs SET status = ?, finished_at = ?, metrics = ?, "
                "checkpoint = ? WHERE id = ?",
                (
                    status,
                    now(),
                    encode_json(dict(metrics or {})),
                    str(checkpoint) if checkpoint is not None else None,
                    run_id,
                ),
            )
            if cur.rowcount == 0:
                raise RecordNotFoundError(f"no training run {run_id}")

    def training_runs(self) -> list[TrainingRun]:
        runs = []
        with self.snapshot() as conn:
            for row in named(
                conn,
                "SELECT id, kind, model, status, started_at, finished_at, config, metrics, "
                "checkpoint FROM training_runs ORDER BY id",
            ).fetchall():
                repo_ids = [
                    r[0]
                    for r in conn.execute(
                        "SELECT repository_id FROM training_run_repositories WHERE run_id = ? "
                        "ORDER BY position",
                        (row["id"],),
                    )
                ]
                runs.append(
                    TrainingRun(
                        id=row["id"],
                        kind=row["kind"],
                        model=row["model"],
                        status=row["status"],
                        started_at=row["started_at"],
                        finished_at=row["finished_at"],
                        config=loads(row["config"]),
                        metrics=loads(row["metrics"]),
                        checkpoint=row["checkpoint"],
                        repository_ids=repo_ids,
                    )
                )
        return runs


_PROOF_COLUMNS = (
    "id, theorem_id, tactics, proof_text, backend, verified, time_s, model, training_run_id, "
    "found_at"
)
