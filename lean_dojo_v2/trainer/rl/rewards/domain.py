"""Domain scorers: ``algebra``, ``number_theory``, ``analysis``, ``combinatorics``, ``geometry``.

Each domain has goal features (symbols and names in the goal state: ``ℝ``, ``∫``, ``Finset``,
``Nat.Prime``, ``∣``, ``EuclideanGeometry``…) and completion features (the tactics and lemma
names that domain's proofs use: ``ring``, ``omega``, ``continuity``, ``Finset.sum_``…). With
``g`` the distinct goal features found over ``saturation`` (capped at 1) and ``c`` the same for
the completion:

    reward = g * c

so a completion scores where the goal belongs to the domain *and* the completion uses its tools;
a prompt-only term would be the same for every completion of a group and teach nothing.

These are weak signals: a pattern match on text, blind to whether the tactic is right or even
parses. Use them only with small weights beside a Lean-checked reward.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .base import BaseRewardScorer, Scored, Trajectory
from .text import END_MARKERS, clean_completion


def _words(*names: str) -> list[re.Pattern[str]]:
    """Names as whole words (``ring`` does not match ``ring_nf``'s prefix of another name)."""
    return [re.compile(rf"(?<![\w.']){re.escape(n)}(?![\w'])") for n in names]


def _prefixes(*names: str) -> list[re.Pattern[str]]:
    """Name prefixes (``Finset.sum_`` matches ``Finset.sum_comm``)."""
    return [re.compile(rf"(?<![\w']){re.escape(n)}") for n in names]


def _symbols(*symbols: str) -> list[re.Pattern[str]]:
    return [re.compile(re.escape(s)) for s in symbols]


# fmt: off
DOMAINS: dict[str, dict[str, list[re.Pattern[str]]]] = {
    "algebra": {
        "goal": _words("Ring", "CommRing", "Field", "Group", "CommGroup", "Monoid", "Module",
                       "Algebra", "Polynomial", "Ideal", "Subgroup", "Matrix", "LinearMap",
                       "MonoidHom", "RingHom", "Submodule")
                + _symbols("⁻¹", "^", "•", "→+*", "→*", "→ₗ", " * "),
        "completion": _words("ring", "ring_nf", "field_simp", "group", "abel", "noncomm_ring",
                             "linear_combination", "module", "polyrith")
                      + _prefixes("mul_", "add_", "pow_", "inv_", "sub_", "map_"),
    },
    "number_theory": {
        "goal": _words("Nat.Prime", "Prime", "Nat.gcd", "gcd", "lcm", "ZMod", "Nat.ModEq",
                       "Int.ModEq", "padicValNat", "Nat.factorization", "Nat.divisors", "Odd",
                       "Even", "Int.emod")
                + _symbols("∣", "≡", " % ", "ℤ"),
        "completion": _words("omega", "decide", "norm_num", "zify", "push_cast",
                             "interval_cases")
                      + _prefixes("Nat.Prime", "Nat.dvd_", "Int.emod_", "Nat.mod_", "Nat.gcd_",
                                  "dvd_", "Int.ModEq", "Nat.ModEq"),
    },
    "analysis": {
        "goal": _words("Tendsto", "Filter.Tendsto", "Continuous", "ContinuousOn", "Differentiable",
                       "deriv", "HasDerivAt", "MeasureTheory", "Measure", "Real.exp", "Real.log",
                       "Real.sqrt", "Metric.ball", "dist", "IsOpen", "IsCompact", "integral")
                + _symbols("ℝ", "ℂ", "∫", "𝓝", "‖", "∑'", "atTop"),
        "completion": _words("continuity", "measurability", "positivity", "linarith", "nlinarith",
                             "gcongr", "fun_prop", "bound", "filter_upwards", "norm_num")
                      + _prefixes("Continuous.", "tendsto_", "Filter.", "Real.", "integral_",
                                  "deriv_", "norm_"),
    },
    "combinatorics": {
        "goal": _words("Finset", "Finset.card", "Fintype", "Fintype.card", "Nat.choose", "choose",
                       "Finset.range", "SimpleGraph", "Multiset", "List.Perm", "Equiv.Perm",
                       "Nat.factorial", "Finset.filter", "card")
                + _symbols("∑", "∏", "#"),
        "completion": _words("decide", "fin_cases", "omega", "induction", "simp_arith")
                      + _prefixes("Finset.", "Fintype.card_", "Nat.choose_", "Multiset.",
                                  "card_", "sum_", "prod_"),
    },
    "geometry": {
        "goal": _words("EuclideanGeometry", "InnerProductGeometry", "AffineSubspace", "Collinear",
                       "EuclideanSpace", "Affine", "Sphere", "Convex", "angle", "inner", "dist",
                       "midpoint", "orthogonalProjection")
                + _symbols("∠", "⟪", "∡"),
        "completion": _prefixes("EuclideanGeometry.", "InnerProductGeometry.", "dist_", "inner_",
                                "angle_", "Collinear", "Convex", "midpoint_", "real_inner_"),
    },
}
# fmt: on


def feature_count(text: str, patterns: Sequence[re.Pattern[str]]) -> int:
    """How many of ``patterns`` occur in ``text`` (each counted once)."""
    return sum(1 for p in patterns if p.search(text))


class DomainScorer(BaseRewardScorer):
    """One domain's scorer (see the module docstring); ``domain`` is a key of :data:`DOMAINS`."""

    def __init__(
        self,
        domain: str,
        *,
        goal_saturation: int = 2,
        completion_saturation: int = 1,
        end_markers: Sequence[str] = END_MARKERS,
    ) -> None:
        if domain not in DOMAINS:
            from ...errors import UnknownRewardError

            raise UnknownRewardError(domain, sorted(DOMAINS), what="domain")
        self.name = domain
        self.features = DOMAINS[domain]
        self.goal_saturation = max(1, goal_saturation)
        self.completion_saturation = max(1, completion_saturation)
        self.end_markers = tuple(end_markers)

    def score(self, trajectory: Trajectory, **kwargs: object) -> Scored:
        goal = trajectory.state or trajectory.prompt
        completion = clean_completion(trajectory.completion, self.end_markers)
        g_hits = feature_count(goal, self.features["goal"])
        c_hits = feature_count(completion, self.features["completion"])
        g = min(1.0, g_hits / self.goal_saturation)
        c = min(1.0, c_hits / self.completion_saturation)
        return g * c, {"goal_features": g_hits, "completion_features": c_hits}


def _domain_class(domain: str) -> type[DomainScorer]:
    def __init__(
        self: DomainScorer,
        *,
        goal_saturation: int = 2,
        completion_saturation: int = 1,
        end_markers: Sequence[str] = END_MARKERS,
    ) -> None:
        DomainScorer.__init__(
            self,
            domain,
            goal_saturation=goal_saturation,
            completion_saturation=completion_saturation,
            end_markers=end_markers,
        )

    title = "".join(part.title() for part in domain.split("_"))
    return type(f"{title}Scorer", (DomainScorer,), {"name": domain, "__init__": __init__})


AlgebraScorer = _domain_class("algebra")
NumberTheoryScorer = _domain_class("number_theory")
AnalysisScorer = _domain_class("analysis")
CombinatoricsScorer = _domain_class("combinatorics")
GeometryScorer = _domain_class("geometry")

__all__ = [
    "DOMAINS",
    "AlgebraScorer",
    "AnalysisScorer",
    "CombinatoricsScorer",
    "DomainScorer",
    "GeometryScorer",
    "NumberTheoryScorer",
    "feature_count",
]
