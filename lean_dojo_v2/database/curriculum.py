"""LeanAgent's difficulty curriculum over the database: thresholds, per-repository counts,
order (the rule itself, on plain numbers, is :mod:`.difficulty`)."""

from __future__ import annotations

from .common import RepositoriesArg, marks
from .difficulty import Curriculum, RepositoryDifficulty, Thresholds, distribute, order_repositories
from .records import RepositoryInfo
from .repositories import RepositoryQueries

# Proof length that decides difficulty (see difficulty.py): the found proof's for a proved sorry.
STEPS = (
    "(CASE WHEN t.sorry_status = 'sorry_proved' AND t.proof_steps IS NOT NULL "
    "THEN t.proof_steps ELSE t.num_tactics END)"
)


class CurriculumQueries(RepositoryQueries):
    """``thresholds``, ``curriculum``, ``sort_repositories_by_difficulty``."""

    def thresholds(self, repositories: RepositoriesArg = None) -> Thresholds:
        """The 33rd/67th percentile cut-offs over the finite difficulties of ``repositories``
        (default: the whole database)."""
        where, params = self._repo_filter(repositories)
        hist = dict(
            self._conn.execute(
                f"SELECT {STEPS}, COUNT(*) FROM theorems t WHERE t.sorry_status <> "
                f"'sorry_unproved' AND {STEPS} > 0{where} GROUP BY {STEPS}",
                params,
            ).fetchall()
        )
        return Thresholds.from_histogram(hist)

    def _repo_filter(self, repositories: RepositoriesArg) -> tuple[str, list[int]]:
        if repositories is None:
            return "", []
        ids = [r.id for r in self.resolve_repositories(repositories)]
        return f" AND t.repository_id IN ({marks(len(ids))})", ids

    def curriculum(self, repositories: RepositoriesArg = None) -> Curriculum:
        """LeanAgent's curriculum over ``repositories`` (default: all): per-repository counts of
        Easy / Medium / Hard / Hard (No proof) theorems and the repositories ordered by their number
        of Easy theorems. See :mod:`lean_dojo_v2.database.difficulty`."""
        with self.snapshot() as conn:
            infos = self.resolve_repositories(repositories)
            thresholds = self.thresholds([i.id for i in infos]) if infos else Thresholds(None, None)
            easy = thresholds.max_easy_steps
            medium = thresholds.max_medium_steps
            stats = {
                i.id: RepositoryDifficulty(i.id, i.url, i.commit)
                for i in infos  # database order, for ties
            }
            if stats:
                e = easy if easy is not None else -1
                m = medium if medium is not None else -1
                ids = list(stats)
                for rid, no_proof, td, n_easy, n_medium, n_hard in conn.execute(
                    "SELECT t.repository_id, "
                    "SUM(CASE WHEN t.sorry_status = 'sorry_unproved' THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {STEPS} = 0 "
                    "THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {STEPS} > 0 "
                    f"AND {STEPS} <= ? THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {STEPS} > 0 "
                    f"AND {STEPS} > ? AND {STEPS} <= ? THEN 1 ELSE 0 END), "
                    f"SUM(CASE WHEN t.sorry_status <> 'sorry_unproved' AND {STEPS} > 0 "
                    f"AND {STEPS} > ? THEN 1 ELSE 0 END) "
                    f"FROM theorems t WHERE t.repository_id IN ({marks(len(ids))}) "
                    "GROUP BY t.repository_id",
                    [e, e, m, m, *ids],
                ):
                    d_easy, d_medium, d_hard = distribute(td)
                    stats[rid].counts.update(
                        easy=n_easy + d_easy,
                        medium=n_medium + d_medium,
                        hard=n_hard + d_hard,
                        hard_no_proof=no_proof,
                    )
        return Curriculum(thresholds, order_repositories(list(stats.values())))

    def sort_repositories_by_difficulty(
        self, repositories: RepositoriesArg = None
    ) -> list[RepositoryInfo]:
        """Repositories in curriculum order: most Easy theorems first (LeanAgent)."""
        order = self.curriculum(repositories).repositories
        return self._repositories_by_ids([r.repository_id for r in order])


def difficulty_sql(category: str, th: Thresholds) -> str:
    """A condition on ``t`` selecting theorems of ``category`` (thresholds baked in as numbers)."""
    if category == "hard_no_proof":
        return "t.sorry_status = 'sorry_unproved'"
    e = th.max_easy_steps if th.max_easy_steps is not None else -1
    m = th.max_medium_steps if th.max_medium_steps is not None else -1
    finite = f"t.sorry_status <> 'sorry_unproved' AND {STEPS} > 0"
    rank_cond = {
        "easy": (f"{finite} AND {STEPS} <= {e}", "d.rk < d.n / 3"),
        "medium": (
            f"{finite} AND {STEPS} > {e} AND {STEPS} <= {m}",
            "d.rk >= d.n / 3 AND d.rk < 2 * (d.n / 3)",
        ),
        "hard": (f"{finite} AND {STEPS} > {m}", "d.rk >= 2 * (d.n / 3)"),
    }[category]
    distributed = (
        "t.id IN (SELECT d.id FROM (SELECT t.id AS id, ROW_NUMBER() OVER "
        "(PARTITION BY t.repository_id ORDER BY t.id) - 1 AS rk, COUNT(*) OVER "
        "(PARTITION BY t.repository_id) AS n FROM theorems t WHERE t.sorry_status <> "
        f"'sorry_unproved' AND {STEPS} = 0) d WHERE {rank_cond[1]})"
    )
    return f"(({rank_cond[0]}) OR {distributed})"
