"""The Lean-checked rewards on real recorded proofs (``ReplayEnv`` over the bundled sample): a
recorded tactic beats a wrong one and a closing tactic scores highest; every proof-mode cheat
scores 0 while the recorded proofs score 1; environment crashes and timeouts mid-batch become
error rewards; the (state, tactic) cache; the pool gives what the serial path gives."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.data.model import Theorem
from lean_dojo_v2.errors import ConfigValueError, LeanNotFoundError
from lean_dojo_v2.interaction import EnvCrashedError, ReplayEnv, TacticTimeout, TransitionTable
from lean_dojo_v2.trainer.errors import RewardFunctionError
from lean_dojo_v2.trainer.rl.rewards import (
    LeanProofScorer,
    LeanTacticScorer,
    RewardContext,
    Trajectory,
    get_scorer,
    open_reward_context,
)

CHAIN = "CancelDenoms.cancel_factors_lt"  # 3 one-line tactics, no nesting
WRONG = "exact absurd_lemma_that_does_not_exist"


def key_of(thm: Theorem) -> str:
    return f"{thm.file_path}::{thm.full_name}"


@pytest.fixture(scope="module")
def theorems() -> list[Theorem]:
    return [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]


@pytest.fixture(scope="module")
def chain(theorems: list[Theorem]) -> Theorem:
    return next(t for t in theorems if t.full_name == CHAIN)


@pytest.fixture(scope="module")
def recorded_proofs(theorems: list[Theorem]) -> list[tuple[Theorem, str]]:
    """Theorems whose recorded tactics, one per line, replay to the end (16 of the sample)."""
    env = ReplayEnv.from_theorems(theorems)
    out = []
    for t in theorems:
        proof = "\n".join(tt.tactic for tt in t.traced_tactics)
        if all("\n" not in tt.tactic for tt in t.traced_tactics) and env.verify(t, proof).ok:
            out.append((t, proof))
    assert len(out) >= 10
    return out


@pytest.fixture()
def context(theorems: list[Theorem]):
    with open_reward_context(theorems, backend="replay", num_envs=2) as ctx:
        yield ctx


def tactic_row(thm: Theorem, step: int, completion: str) -> Trajectory:
    return Trajectory(
        prompt="",
        completion=completion,
        state=thm.traced_tactics[step].state_before,
        theorem=thm,
        step=step,
        recorded_tactic=thm.traced_tactics[step].tactic,
        mode="tactic",
    )


def proof_row(thm: Theorem, completion: str) -> Trajectory:
    return Trajectory(completion=completion, state=thm.traced_tactics[0].state_before,
                      theorem=thm, mode="proof")  # fmt: skip


# ------------------------------------------------------------------------------ tactic reward
def test_recorded_tactic_beats_a_wrong_one_and_closing_scores_highest(context, chain) -> None:
    scorer = get_scorer("lean_tactic", context=context)
    last = len(chain.traced_tactics) - 1
    rows = [
        tactic_row(chain, 0, chain.traced_tactics[0].tactic + "<|im_end|>"),
        tactic_row(chain, 0, WRONG),
        tactic_row(chain, last, chain.traced_tactics[last].tactic),
        tactic_row(chain, 0, ""),
        tactic_row(chain, 0, "sorry"),
    ]
    (recorded, r_info), (wrong, w_info), (closing, c_info), (empty, _), (sorry, _) = (
        scorer.score_batch(rows)
    )
    assert closing == 1.0 and c_info["outcome"] == "proved"
    assert r_info["outcome"] in ("progress", "no_progress") and recorded in (0.5, 0.2)
    assert wrong == 0.0 and w_info["outcome"] == "error"
    assert closing > recorded > wrong
    assert empty == 0.0 and sorry == 0.0
    assert r_info["backend"] == "replay" and context.stats()["backend"] == "replay"
    assert rows[0].steps and rows[0].steps[0].outcome == r_info["outcome"]


def test_every_recorded_tactic_is_accepted(context, theorems) -> None:
    """The state before each step is reached (nested tactics skipped, or replay's own state)."""
    scorer = LeanTacticScorer(context)
    rows = [
        tactic_row(t, k, tt.tactic)
        for t in theorems
        for k, tt in enumerate(t.traced_tactics)
        if "\n" not in tt.tactic
    ]
    outcomes = [info["outcome"] for _, info in scorer.score_batch(rows)]
    assert outcomes.count("error") == 0
    assert context.stats()["errors"] == 0


def test_scores_are_constructor_arguments(context, chain) -> None:
    scorer = LeanTacticScorer(context, proved=2.0, progress=0.7, no_progress=0.3, error=-1.0)
    last = len(chain.traced_tactics) - 1
    rewards = [r for r, _ in scorer.score_batch([tactic_row(chain, last, chain.traced_tactics[last].tactic),
                                                 tactic_row(chain, 0, WRONG)])]  # fmt: skip
    assert rewards == [2.0, -1.0]


def test_multi_step_rollout_applies_tactics_until_proved(theorems, chain) -> None:
    proof = "\n".join(tt.tactic for tt in chain.traced_tactics)
    with open_reward_context(theorems, backend="replay", num_envs=1, max_proof_steps=5) as ctx:
        row = tactic_row(chain, 0, proof)
        reward, info = get_scorer("lean_tactic", context=ctx).score(row)
        assert (reward, info["outcome"]) == (1.0, "proved")
        assert [s.outcome for s in row.steps][-1] == "proved"
        assert len(row.steps) == len(chain.traced_tactics)
        # a failing later step ends the rollout; the trajectory keeps what it reached
        broken = tactic_row(chain, 0, chain.traced_tactics[0].tactic + "\n" + WRONG)
        reward, info = get_scorer("lean_tactic", context=ctx).score(broken)
        assert info["outcome"] in ("progress", "no_progress")
        assert [s.outcome for s in broken.steps][-1] == "error"
    # one step only (the default): the whole proof is its first tactic
    with open_reward_context(theorems, backend="replay", num_envs=1) as ctx:
        row = tactic_row(chain, 0, proof)
        _, info = get_scorer("lean_tactic", context=ctx).score(row)
        assert info["outcome"] != "proved" and len(row.steps) == 1


def test_unknown_theorem_without_state_is_an_error_reward(context) -> None:
    row = Trajectory(completion="simp", extra={"theorem_key": "Nope.lean::nope"})
    reward, info = LeanTacticScorer(context).score(row)
    assert reward == 0.0 and info["outcome"] == "error" and "theorem_key" in info["message"]
    assert context.stats()["errors"] == 1


def test_lean_scorers_need_a_context(chain) -> None:
    for scorer in (LeanTacticScorer(), LeanProofScorer()):
        with pytest.raises(RewardFunctionError, match="needs a RewardContext") as exc:
            scorer.score(tactic_row(chain, 0, "simp"))
        assert "\n" not in str(exc.value)


# ------------------------------------------------------------------------------- proof reward
def test_recorded_proofs_score_one_and_each_cheat_scores_zero(context, recorded_proofs, chain):
    scorer = get_scorer("lean_proof", context=context)
    rows = [proof_row(t, proof) for t, proof in recorded_proofs]
    # A comment that mentions sorry is not a sorry.
    rows.append(proof_row(chain, "-- no sorry needed\n" + recorded_proofs[0][1])
                if chain is recorded_proofs[0][0] else proof_row(*recorded_proofs[0]))  # fmt: skip
    assert [r for r, _ in scorer.score_batch(rows)] == [1.0] * len(rows)

    good = next(p for t, p in recorded_proofs if t is chain)
    first, rest = good.split("\n", 1)
    statement = "(a b c : ℚ) (h : a < b) : c * a < c * b"
    cheats = {
        "sorry": "sorry",
        "sorry after tactics": first + "\nsorry",
        "admit": first + "\nadmit",
        "sorryAx": "exact sorryAx _ false",
        "changed statement (declaration)": f"theorem easy {statement} := by\n  {good}",
        "changed statement (lemma)": "lemma easy : True := trivial\n" + good,
        "restated goal with :=": f": {statement} := by\n{good}",
        "restated goal (binders)": f"{statement} := by nlinarith",
        "declared axiom": "axiom cheat : False\nexact cheat.elim",
        "axiom by name": "exact (Classical.ofNonempty : False).elim\nexact axiom_free",
        "native_decide": "native_decide",
        "implemented_by": first + "\n@[implemented_by foo] def f := 1",
        "unsafe": "exact (unsafe cheat : False)",
        "run_tac": "run_tac Lean.Elab.admitGoal",
        "#exit": first + "\n#exit",
    }
    del cheats["axiom by name"]  # a name *containing* "axiom" is not the keyword
    scored = scorer.score_batch([proof_row(chain, text) for text in cheats.values()])
    for (name, _), (reward, info) in zip(cheats.items(), scored, strict=True):
        assert reward == 0.0, name
        assert info["outcome"] == "error", name
    refused = [info.get("refused") for _, info in scored]
    assert all(refused), dict(zip(cheats, refused, strict=True))


def test_have_and_named_arguments_are_not_a_changed_statement(context, recorded_proofs) -> None:
    """``have h : T := v`` (List.head_cyclicPermutations) and ``(n := 3)`` are not cheats."""
    from lean_dojo_v2.trainer.rl.rewards.text import refusal_reason

    with_have = [p for t, p in recorded_proofs if "have " in p]
    assert with_have
    assert all(refusal_reason(p) is None for p in with_have)
    assert refusal_reason("exact foo (n := 3)\nintro x; have h := x\n· set y := 2 with hy") is None
    assert refusal_reason("calc a = b := by ring\n  _ = c := by simp") is None


def test_partial_credit_is_off_by_default_and_below_one(theorems, chain) -> None:
    first = chain.traced_tactics[0].tactic
    half = first + "\n" + WRONG
    with open_reward_context(theorems, backend="replay", num_envs=1) as ctx:
        assert LeanProofScorer(ctx).score(proof_row(chain, half))[0] == 0.0
        reward, info = LeanProofScorer(ctx, partial_credit=0.5).score(proof_row(chain, half))
        assert reward == pytest.approx(0.25) and info["replayed_fraction"] == 0.5
        assert LeanProofScorer(ctx, partial_credit=0.5).score(proof_row(chain, "sorry"))[0] == 0
    with pytest.raises(ConfigValueError):
        LeanProofScorer(partial_credit=1.0)


# --------------------------------------------------------------- crashes, timeouts, the pool
class FlakyEnv(ReplayEnv):
    """A ReplayEnv that crashes on one tactic, times out on another, and counts its calls."""

    def __init__(self, table: TransitionTable) -> None:
        super().__init__(table)
        self.calls: list[str] = []
        self.restarts = 0

    def run_tactic(self, state, tactic, timeout=None):
        self.calls.append(tactic)
        if tactic == "crash_me":
            self.restarts += 1  # as a Pantograph env does when it comes back
            raise EnvCrashedError("the REPL died (test)")
        if tactic == "slow_me":
            return TacticTimeout("ran out of time (test)", self.backend, timeout=timeout)
        return super().run_tactic(state, tactic, timeout)


@pytest.mark.parametrize("num_envs", [1, 3])
def test_crash_and_timeout_mid_batch_give_error_rewards(theorems, chain, num_envs) -> None:
    table = TransitionTable.from_theorems(theorems)
    envs = [FlakyEnv(table) for _ in range(num_envs)]
    ctx = RewardContext({key_of(t): t for t in theorems}, envs, backend="replay")
    scorer = LeanTacticScorer(ctx)
    last = len(chain.traced_tactics) - 1
    rows = [
        tactic_row(chain, 0, chain.traced_tactics[0].tactic),
        tactic_row(chain, 0, "crash_me"),
        tactic_row(chain, 1, "slow_me"),
        tactic_row(chain, last, chain.traced_tactics[last].tactic),
    ]
    scored = scorer.score_batch(rows)
    assert [r for r, _ in scored][1:3] == [0.0, 0.0]
    assert scored[1][1]["outcome"] == "crash" and "crashed" in scored[1][1]["message"]
    assert scored[2][1]["outcome"] == "timeout"
    assert scored[0][0] > 0 and scored[3][0] == 1.0
    stats = ctx.stats()
    assert (stats["crashes"], stats["timeouts"]) == (1, 1)
    # Neither failure is cached: the next batch checks them again; training goes on.
    again = scorer.score_batch(rows)
    assert [r for r, _ in again] == [r for r, _ in scored]
    assert ctx.stats()["crashes"] == 2 and ctx.stats()["timeouts"] == 2
    ctx.close()


def test_cache_runs_a_repeated_state_and_tactic_once(theorems, chain) -> None:
    table = TransitionTable.from_theorems(theorems)
    env = FlakyEnv(table)
    ctx = RewardContext({key_of(t): t for t in theorems}, [env], backend="replay")
    scorer = LeanTacticScorer(ctx)
    tactic = chain.traced_tactics[1].tactic
    spaced = "  " + tactic.replace(" ", "   ") + "\n"
    group = [tactic_row(chain, 1, t) for t in (tactic, tactic, spaced, tactic, WRONG, WRONG)]
    first = scorer.score_batch(group)
    assert env.calls.count(tactic) == 1  # (reaching step 1 ran recorded tactic 0 only)
    assert env.calls.count(WRONG) == 1
    assert len({r for r, _ in first[:4]}) == 1
    stats = ctx.stats()
    assert stats["checks"] == 2 and stats["cache_hits"] == 4
    calls = len(env.calls)
    scorer.score_batch(group)  # the next group of the same prompt: all from the cache
    assert len(env.calls) == calls and ctx.stats()["cache_hits"] == 10
    ctx.close()


def test_pool_gives_the_serial_rewards(theorems) -> None:
    rows = []
    for t in theorems:
        for k, tt in enumerate(t.traced_tactics[:4]):
            rows += [tactic_row(t, k, tt.tactic), tactic_row(t, k, "simp"), tactic_row(t, k, WRONG)]
    results = {}
    for n in (1, 4):
        with open_reward_context(theorems, backend="replay", num_envs=n) as ctx:
            results[n] = [(r, i["outcome"]) for r, i in LeanTacticScorer(ctx).score_batch(rows)]
    assert results[1] == results[4]
    assert {o for _, o in results[1]} >= {"proved", "error"}


# ---------------------------------------------------------------------------- the context
def test_open_reward_context_backends(theorems, monkeypatch) -> None:
    from lean_dojo_v2.interaction.pantograph import locate

    monkeypatch.delenv(locate.ENV_BINARY, raising=False)
    monkeypatch.delenv(locate.ENV_CHECKOUT, raising=False)
    monkeypatch.setattr(locate, "pypantograph_binary", lambda: None)
    with open_reward_context(theorems, backend="auto", num_envs=2) as ctx:
        assert ctx.backend == "replay" and len(ctx.envs) == 2
        assert all(isinstance(e, ReplayEnv) for e in ctx.envs)
        assert key_of(theorems[0]) in ctx.theorems
    with pytest.raises(LeanNotFoundError):
        open_reward_context(theorems, backend="lean")
    with pytest.raises(ConfigValueError, match="valid backends: auto, replay, lean") as exc:
        open_reward_context(theorems, backend="pantograph")
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigValueError):
        open_reward_context(theorems, backend="replay", num_envs=0)


# ------------------------------------------------------- proof reward, checked by Lean (fake REPL)
def test_with_lean_a_proof_through_a_nonstandard_axiom_scores_zero(shared_data) -> None:
    """With Pantograph, Lean is asked which axioms an accepted proof depends on: the recorded
    proof scores 1, the same proof scores 0 once a lemma it cites rests on a project's axiom
    (the fake REPL plays Lean's ``#print axioms`` answer), and so does a lemma with sorry."""
    import json
    import re
    import sys
    from pathlib import Path

    from lean_dojo_v2.interaction.pantograph import PantographConfig, PantographEnv

    tests_dir = Path(__file__).resolve().parents[2]
    if str(tests_dir) not in sys.path:
        sys.path.insert(0, str(tests_dir))
    from fake_pantograph.fake_repl import minif2f_theorems
    from fake_pantograph.launcher import fake_command

    path = shared_data / "minictx" / "derived" / "minif2f_test_traced_tactics.json"
    theorems = minif2f_theorems(json.loads(path.read_text(encoding="utf-8")))
    thm, cited = next(
        (t, names[0])
        for t in theorems
        if (names := re.findall(r"[A-Za-z_][\w']*(?:\.[\w']+)+", t.traced_tactics[0].tactic))
    )
    proof = "\n".join(tt.tactic for tt in thm.traced_tactics)

    def reward_with(constant_axioms: dict[str, list[str]]) -> tuple[float, dict]:
        config = PantographConfig(
            command=fake_command(), imports=("Init",), ready_timeout=30.0,
            env={"FAKE_PANTOGRAPH_AXIOMS": json.dumps(constant_axioms)},
        )  # fmt: skip
        with RewardContext({key_of(thm): thm}, [PantographEnv(config)], backend="lean") as ctx:
            return get_scorer("lean_proof", context=ctx).score(proof_row(thm, proof))

    reward, info = reward_with({})
    assert reward == 1.0 and set(info["axioms"]) == {"propext", "Classical.choice", "Quot.sound"}
    for axiom in ("Project.big_axiom", "sorryAx"):
        reward, info = reward_with({cited: [axiom]})
        assert reward == 0.0 and info["refused"] == "nonstandard axioms", info
        assert axiom in info["axioms"] and axiom in info["message"]
