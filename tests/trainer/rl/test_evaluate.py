"""``sampled_tactic_reward``: k independent draws per recorded state, scored by the training
reward over replay. Generators with known behaviour on real recorded states (the bundled
sample's ``CancelDenoms.cancel_factors_lt``: 3 one-line tactics) give rewards computed by hand
from the ``lean_tactic`` values (closed 1.0, progress 0.5, accepted 0.2, rejected 0): its
recorded ``rw`` turns one goal into two (accepted, 0.2), and each ``exact`` leaves "no goals"
(closed, 1.0)."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ConfigValueError
from lean_dojo_v2.models.generator import Candidate, TacticGenerator
from lean_dojo_v2.trainer.rl.evaluate import sampled_tactic_reward

CHAIN = "CancelDenoms.cancel_factors_lt"


class Scripted(TacticGenerator):
    """Answers each state with the recorded tactic on every ``hit_every``-th draw (per state),
    else a tactic replay rejects; one candidate per row, as a sampler asked for 1 gives."""

    def __init__(self, recorded: dict[str, str], hit_every: int) -> None:
        self.recorded, self.hit_every, self.seen = recorded, hit_every, {}

    def generate(self, states, num_samples, *, prefix=None):
        assert num_samples == 1  # independent draws, never deduplicated candidates
        out = []
        for s in states:
            n = self.seen[s] = self.seen.get(s, 0) + 1
            hit = self.hit_every and n % self.hit_every == 0
            out.append([Candidate(self.recorded[s] if hit else "exact nonsense_lemma", -1.0)])
        return out


@pytest.fixture(scope="module")
def chain():
    return next(t for t in load_theorems(sample_dataset_path()) if t.full_name == CHAIN)


def test_always_right_scores_the_recorded_rewards_not_one_over_k(chain) -> None:
    recorded = {tt.state_before: tt.tactic for tt in chain.traced_tactics}
    result = sampled_tactic_reward(Scripted(recorded, 1), [chain], k=4)
    # (0.2 + 1.0 + 1.0) / 3 at every draw
    assert result.mean_reward == pytest.approx(2.2 / 3, abs=1e-4)
    assert result.accepted == 1.0 and result.closed == pytest.approx(2 / 3, abs=1e-4)
    assert (result.states, result.k, result.samples) == (3, 4, 12)


def test_half_right_scores_half_and_never_right_scores_zero(chain) -> None:
    recorded = {tt.state_before: tt.tactic for tt in chain.traced_tactics}
    half = sampled_tactic_reward(Scripted(recorded, 2), [chain], k=4)
    assert half.mean_reward == pytest.approx(1.1 / 3, abs=1e-4) and half.accepted == 0.5
    never = sampled_tactic_reward(Scripted(recorded, 0), [chain], k=2, max_states=2)
    assert never.mean_reward == 0.0 and never.accepted == 0.0 and never.states == 2


def test_bad_arguments_are_one_line_errors(chain) -> None:
    with pytest.raises(ConfigValueError, match="k must be"):
        sampled_tactic_reward(Scripted({}, 1), [chain], k=0)
    with pytest.raises(ConfigValueError, match="no recorded goal states"):
        sampled_tactic_reward(Scripted({}, 1), [], k=1)
