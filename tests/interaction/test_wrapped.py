"""``WrappedEnv``: a wrapper changes the call it overrides and passes everything else, the
declared capabilities included, to the environment behind it; ``wrap_each`` keeps the shape of
what a factory made."""

from __future__ import annotations

import asyncio

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.interaction import ProofFinished, ReplayEnv, Verdict
from lean_dojo_v2.interaction.wrapped import WrappedEnv, wrap_each


class Rejecting(WrappedEnv):
    async def verify(self, theorem, proof):
        return Verdict(False, self.backend, "test", ("no",))


def test_a_wrapper_passes_through_what_it_does_not_override():
    theorem = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    inner = ReplayEnv.from_theorems([theorem])
    env = Rejecting(inner)
    assert env.backend == "replay" and env.shares_states is True and env.restarts is None

    async def run():
        state = await env.start(theorem)
        for tactic in theorem.traced_tactics:
            state = await env.run_tactic(state, tactic.tactic)
        assert isinstance(state, ProofFinished)
        assert not (await env.verify(theorem, "simp")).ok
        await env.close()

    asyncio.run(run())


def test_wrap_each_keeps_the_shape():
    inner = ReplayEnv.from_theorems([])
    one = wrap_each(inner, Rejecting)
    assert isinstance(one, Rejecting)
    many = wrap_each([inner, inner], Rejecting)
    assert isinstance(many, list) and len(many) == 2 and all(isinstance(e, Rejecting) for e in many)
