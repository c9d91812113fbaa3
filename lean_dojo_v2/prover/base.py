"""The provers' common base: a :class:`~lean_dojo_v2.models.generator.TacticGenerator` that can
run a proof search on itself.

Every prover (:class:`~lean_dojo_v2.prover.HFProver`, :class:`~lean_dojo_v2.prover.RetrievalProver`,
:class:`~lean_dojo_v2.prover.ExternalProver`) is a tactic generator first: best-first search asks it
for tactics (``generate``), whole-proof search for whole proofs (``generate_proofs``), and
``for_theorem`` lets it bind a theorem's context before the search of that theorem starts.
:meth:`BaseProver.prove` is the shortcut ``search_theorem(prover, env, theorem, config)``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from ..models.generator import Candidate, TacticGenerator

if TYPE_CHECKING:  # pragma: no cover
    from ..data import Theorem
    from .result import SearchResult
    from .search_config import SearchConfig
    from .search_types import Envs, ProgressPredictor


class BaseProver(TacticGenerator):
    """A tactic generator that also proposes whole proofs and proves theorems.

    Implementations provide :meth:`generate` (one tactic per candidate) and
    :meth:`generate_proofs` (a whole tactic proof per candidate); both return, per state, at most
    ``num_samples`` distinct candidates without ``sorry``/``admit``, best first.
    """

    @abstractmethod
    def generate_proofs(self, states: list[str], num_samples: int) -> list[list[Candidate]]:
        """For each goal state, at most ``num_samples`` distinct whole proofs (tactic blocks, one
        tactic per line, multi-line tactics whole, no leading ``by``), best first."""

    def prove(
        self,
        theorem: Theorem,
        env: Envs,
        config: SearchConfig | None = None,
        progress_model: ProgressPredictor | None = None,
    ) -> SearchResult:
        """Search for a proof of ``theorem`` in ``env`` (a ``ProofEnv``, an ``AsyncProofEnv`` or
        a list of them) with this prover: best-first by default, whole-proof search when
        ``config.whole_proof``. The result is ``"proved"`` only after the whole proof was
        re-checked by ``env.verify``."""
        from .search import search_theorem

        return search_theorem(self, env, theorem, config=config, progress_model=progress_model)
