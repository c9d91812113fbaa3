"""Best-first search vs upstream's random DFS at equal budgets counted in tactic calls.

What is compared, on the bundled LeanDojo Benchmark 4 sample (``sample_dataset_path()``: the 51
theorems with tactic proofs) through ``ReplayEnv``:

* **The same candidates for both searches.** Every state a search can reach gets one fixed list of
  ``--candidates`` (8) tactics: the tactics recorded for its first goal (the right ones) and
  tactics recorded for *other* goals (wrong ones: real Lean text that replay rejects here),
  chosen deterministically from the state's text. The reachable states are enumerated once,
  before any search, by applying every candidate from every state (:func:`candidate_table`).
* **Three scorers of those candidates** (what a generator's log-prob would be):
  ``model``: the default model (SmolLM2-135M-Instruct, ``load_generator()``), the teacher-forced
  log-probability of "this tactic, then the end marker" after the state's prompt, exactly the
  score ``HFTacticGenerator`` gives a tactic it samples; computed once per (state, candidate).
  ``uniform``: random scores (what search gets from scores that carry no information), over
  ``--seeds`` draws. ``oracle``: the noisy scores of the old comparison (a right tactic draws its
  log-prob from [-1.5, -0.2], a wrong one from [-3.0, -0.5]): they are derived from the answer,
  so they are a reference, not a model.
* **A budget in tactic calls** (Lean's cost), per theorem: :class:`TacticBudgetEnv` counts
  ``run_tactic`` and answers every call past the budget with a ``TacticError`` (kind
  ``"budget"``) without running it, so a search can neither see nor use more than the budget; the
  searches themselves are unchanged (their own limits are set out of the way). The final
  ``verify`` of a found proof is not counted (both searches make exactly one per proof found).
* **The searches.** ``best_first``: ``BestFirstSearch`` with ``frontier_batch=1`` (plain
  best-first: expand the best open state, run all its candidates); ``best_first_batch4``: the
  default ``frontier_batch=4`` (four states per generator call, what ``prove`` does);
  ``random_dfs``: ``RandomDFS`` (upstream's loop: one candidate at random per step, scores
  ignored) with ``max_trials_per_goal`` equal to the number of candidates, so it may try every
  one, over ``--seeds`` seeds. Random quantities are reported as mean, min and max over seeds.

The output (one JSON object, also written to ``--out``) gives, per scorer and search, the number
of theorems proved at each budget (``--budgets``, default 4 .. 256), the tactic calls spent, and
how well each scorer ranks the right tactic (top-1 rate and mean reciprocal rank over the
reachable states that have one). ``--scores-cache FILE`` keeps the model's scores between runs.

    python benchmarks/search_compare.py [--budgets 4,8,16,32,64,128,256] [--seeds 5] [--no-model]

The committed result is ``--theorems 25`` (model scores for the 55 states of the first 25
theorems took 36 minutes on a loaded 2-core CPU; the scorers that cost nothing are also run on all
51, under ``results_all_theorems_without_model``).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lean_dojo_v2.data import goal_texts  # noqa: E402
from lean_dojo_v2.interaction import (  # noqa: E402
    AsyncProofEnv,
    ProofEnv,
    ProofState,
    TacticError,
)
from lean_dojo_v2.models.generator import Candidate, TacticGenerator  # noqa: E402

BUDGETS = (4, 8, 16, 32, 64, 128, 256)
UNLIMITED = 1_000_000  # the searches' own limits, set out of the way of the tactic budget

Scores = dict[str, dict[str, float]]  # state text -> tactic -> score


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class CandidateTable:
    """The fixed candidates of every reachable state (``tactics``), which of them were recorded
    for the state's first goal (``right``), and what exhaustive search over them can prove."""

    tactics: dict[str, list[str]]
    right: dict[str, frozenset[str]]
    provable: frozenset[str]  # theorems with a proof made of candidates

    def __len__(self) -> int:
        return len(self.tactics)


def _recorded(theorems: Iterable[Any]) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    recorded: dict[str, list[str]] = {}
    pool: list[tuple[str, str]] = []
    for thm in theorems:
        for tt in thm.traced_tactics:
            goals = goal_texts(tt.state_before)
            if goals:
                tactics = recorded.setdefault(goals[0], [])
                if tt.tactic not in tactics:
                    tactics.append(tt.tactic)
                pool.append((goals[0], tt.tactic))
    return recorded, pool


def candidate_table(
    theorems: Sequence[Any],
    env: ProofEnv,
    k: int = 8,
    seed: int = 0,
    pool_theorems: Sequence[Any] | None = None,
) -> CandidateTable:
    """Enumerate the states reachable from each theorem's start by candidates, with the candidate
    list of each (see the module docstring); the list's order is shuffled so that it says
    nothing: only scores order candidates. Right and wrong tactics are drawn from the tactics
    recorded in ``pool_theorems`` (default: ``theorems``), so a subset of theorems given the
    whole sample as its pool gets exactly the candidates it has in the whole run."""
    recorded, pool = _recorded(theorems if pool_theorems is None else pool_theorems)

    def candidates(state: ProofState) -> tuple[list[str], frozenset[str]]:
        first = state.goals[0]
        rng = random.Random(f"{seed}:{state.text}")
        right = recorded.get(first, [])[:k]
        wrong: list[str] = []
        for goal, tactic in rng.sample(pool, len(pool)):
            if len(right) + len(wrong) >= k:
                break
            if goal != first and tactic not in wrong and tactic not in right:
                wrong.append(tactic)
        tactics = [*right, *wrong]
        rng.shuffle(tactics)
        return tactics, frozenset(right)

    table: dict[str, list[str]] = {}
    right: dict[str, frozenset[str]] = {}
    provable: set[str] = set()
    for thm in theorems:
        root = env.start(thm)
        stack, seen = [root], {root.text}
        while stack:
            state = stack.pop()
            if state.text not in table:
                table[state.text], right[state.text] = candidates(state)
            for tactic in table[state.text]:
                out = env.run_tactic(state, tactic)
                if isinstance(out, ProofState):
                    if out.text not in seen:
                        seen.add(out.text)
                        stack.append(out)
                elif not isinstance(out, TacticError):
                    provable.add(thm.full_name)
    return CandidateTable(table, right, frozenset(provable))


# --------------------------------------------------------------------------------- scorers


def uniform_scores(table: CandidateTable, seed: int) -> Scores:
    """Scores that carry no information: uniform in [-3, 0], deterministic per seed."""
    out: Scores = {}
    for state, tactics in table.tactics.items():
        rng = random.Random(f"uniform:{seed}:{state}")
        out[state] = {t: -3.0 * rng.random() for t in tactics}
    return out


def oracle_scores(table: CandidateTable, seed: int = 0) -> Scores:
    """The old comparison's noisy scores, derived from the answer: right tactics draw from
    [-1.5, -0.2], wrong ones from [-3.0, -0.5]."""
    out: Scores = {}
    for state, tactics in table.tactics.items():
        rng = random.Random(f"oracle:{seed}:{state}")
        right = table.right[state]
        out[state] = {
            t: -rng.uniform(0.2, 1.5) if t in right else -rng.uniform(0.5, 3.0) for t in tactics
        }
    return out


def _read_scores(cache: Path | None) -> Scores:
    return json.loads(cache.read_text(encoding="utf-8")) if cache and cache.is_file() else {}


def model_scores(
    table: CandidateTable,
    generator: Any,
    *,
    log: Callable[[str], None] = lambda msg: None,
    cache: Path | None = None,
    group_size: int = 4,
) -> Scores:
    """Teacher-forced ``log p(tactic + end marker | prompt)`` of every candidate under
    ``generator`` (an ``HFTacticGenerator`` of a causal model): the score its own sampling gives
    a tactic. Per state, the prompt runs once and its KV cache is shared by the candidates (what
    dominates on a CPU is the tokens run, and the prompt is most of them). ``cache``: a JSON file
    of scores already computed, read first and written every few states, so that an interrupted
    run resumes."""
    out = _read_scores(cache)
    todo = [s for s, ts in table.tactics.items() if set(out.get(s, ())) != set(ts)]
    if not todo:
        return {s: out[s] for s in table.tactics}
    import torch

    from lean_dojo_v2.models.prompts import add_special_tokens_for, end_marker

    tok, model = generator.tokenizer, generator.model
    device = generator.loaded.device
    marker = end_marker(tok, generator.style)
    special = add_special_tokens_for(generator.style)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    t0 = time.perf_counter()
    for n, state in enumerate(todo):
        tactics = table.tactics[state]
        prompt = tok(generator.prompts([state])[0], add_special_tokens=special)["input_ids"]
        rows = [tok(t + marker, add_special_tokens=False)["input_ids"] for t in tactics]
        with torch.inference_mode():
            first = model(input_ids=torch.tensor([prompt], device=device), use_cache=True)
        scores: dict[str, float] = {}
        # candidates in groups of similar length: a long tactic pads only its own group
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for group in (order[g : g + group_size] for g in range(0, len(order), group_size)):
            part = [rows[i] for i in group]
            width = max(len(r) for r in part)
            ids = torch.full((len(part), width), pad, dtype=torch.long)
            mask = torch.ones((len(part), len(prompt) + width), dtype=torch.long)
            for j, r in enumerate(part):  # right padding: no real token attends to a pad
                ids[j, : len(r)] = torch.tensor(r)
                mask[j, len(prompt) + len(r) :] = 0
            with torch.inference_mode():
                past = copy.deepcopy(first.past_key_values)
                past.batch_repeat_interleave(len(part))
                rest = model(
                    input_ids=ids.to(device), attention_mask=mask.to(device), past_key_values=past
                )
                # token j of a candidate is predicted by the prompt's last logits (j = 0) or by
                # the candidate's own position j - 1
                logits = torch.cat(
                    [first.logits[:, -1:].expand(len(part), 1, -1), rest.logits[:, :-1]], dim=1
                )
                logp = torch.log_softmax(logits.float(), dim=-1).cpu()
            for j, (i, r) in enumerate(zip(group, part, strict=True)):
                scores[tactics[i]] = float(logp[j, torch.arange(len(r)), torch.tensor(r)].sum())
        out[state] = scores
        if (n + 1) % 5 == 0 or n + 1 == len(todo):
            log(f"scored {n + 1}/{len(todo)} states ({time.perf_counter() - t0:.0f} s)")
            if cache is not None:
                cache.write_text(json.dumps(out), encoding="utf-8")
    return {s: out[s] for s in table.tactics}


def ranking_quality(table: CandidateTable, scores: Scores) -> dict[str, float | int]:
    """How a scorer ranks the best right candidate among a state's candidates: top-1 rate and
    mean reciprocal rank over the states that have a right candidate."""
    ranks = []
    for state, tactics in table.tactics.items():
        right = table.right[state]
        if not right:
            continue
        order = sorted(tactics, key=lambda t: -scores[state][t])
        ranks.append(1 + min(order.index(t) for t in right))
    if not ranks:
        return {"states": 0, "top1": 0.0, "mrr": 0.0}
    return {
        "states": len(ranks),
        "top1": round(sum(r == 1 for r in ranks) / len(ranks), 4),
        "mrr": round(statistics.fmean(1 / r for r in ranks), 4),
    }


class TableGenerator(TacticGenerator):
    """A generator over a :class:`CandidateTable` and a scorer's :data:`Scores`: the state's
    candidates, best score first. A state outside the table gets none."""

    def __init__(self, table: CandidateTable, scores: Scores) -> None:
        self.table = table
        self.scores = scores

    def generate(self, states, num_samples, *, prefix=None):
        out = []
        for state in states:
            score = self.scores.get(state, {})
            cands = [Candidate(t, score[t]) for t in self.table.tactics.get(state, ())]
            out.append(sorted(cands, key=lambda c: -c.logprob)[:num_samples])
        return out


# --------------------------------------------------------------------------------- budget


class TacticBudgetEnv(AsyncProofEnv):
    """``inner`` with at most ``budget`` tactic calls: each ``run_tactic`` past it returns a
    ``TacticError`` of kind ``"budget"`` without reaching ``inner``. ``calls`` counts the calls
    that ran. ``start`` and ``verify`` are passed through and not counted."""

    shares_states = True

    def __init__(self, inner: ProofEnv, budget: int) -> None:
        self.inner = inner
        self.budget = budget
        self.backend = inner.backend
        self.calls = 0
        self.refused = 0

    async def start(self, theorem):
        return self.inner.start(theorem)

    async def run_tactic(self, state, tactic, timeout=None):
        if self.calls >= self.budget:
            self.refused += 1
            return TacticError("tactic-call budget spent", self.backend, "budget")
        self.calls += 1
        return self.inner.run_tactic(state, tactic, timeout)

    async def verify(self, theorem, proof):
        return self.inner.verify(theorem, proof)


# ---------------------------------------------------------------------------------- runs


def best_first(generator: Any, k: int, frontier_batch: int) -> Any:
    from lean_dojo_v2.prover import BestFirstSearch, SearchConfig

    cfg = SearchConfig(
        num_samples=k,
        max_expansions=UNLIMITED,
        frontier_batch=frontier_batch,
        generator_in_thread=False,
    )
    return BestFirstSearch(generator, cfg)


def random_dfs(generator: Any, k: int, seed: int) -> Any:
    from lean_dojo_v2.prover.baselines import RandomDFS

    return RandomDFS(
        generator, max_steps=UNLIMITED, max_trials_per_goal=k, num_samples=k, seed=seed
    )


def run_at_budget(search: Any, env: ProofEnv, theorems: Sequence[Any], budget: int) -> dict:
    """Search every theorem with at most ``budget`` tactic calls each: proved, calls spent."""
    proved = calls = 0
    for thm in theorems:
        limited = TacticBudgetEnv(env, budget)
        result = search.search(limited, thm)
        if result.status == "error":
            raise RuntimeError(f"{thm.full_name}: {result.error}")
        assert limited.calls <= budget
        proved += result.status == "proved"
        calls += limited.calls
    return {"proved": proved, "tactic_calls": calls}


def curve(
    make: Callable[[], Any], env: ProofEnv, theorems: Sequence[Any], budgets: Sequence[int]
) -> dict[str, dict]:
    return {str(b): run_at_budget(make(), env, theorems, b) for b in budgets}


def spread(curves: list[dict[str, dict]]) -> dict[str, dict]:
    """Mean, min and max of ``proved`` (and mean tactic calls) over several curves."""
    out: dict[str, dict] = {}
    for b in curves[0]:
        proved = [c[b]["proved"] for c in curves]
        calls = [c[b]["tactic_calls"] for c in curves]
        out[b] = {
            "proved_mean": round(statistics.fmean(proved), 2),
            "proved_min": min(proved),
            "proved_max": max(proved),
            "tactic_calls_mean": round(statistics.fmean(calls), 1),
        }
    return out


def compare(
    theorems: Sequence[Any],
    env: ProofEnv,
    table: CandidateTable,
    scores: Sequence[Scores],
    budgets: Sequence[int],
    k: int,
    dfs_seeds: Sequence[int],
) -> dict[str, Any]:
    """The curves of the three searches for one scorer (``scores``: one or several draws)."""
    gens = [TableGenerator(table, s) for s in scores]

    def over_draws(make: Callable[[TableGenerator], Any]) -> dict[str, dict]:
        runs = [curve(lambda g=g: make(g), env, theorems, budgets) for g in gens]
        return runs[0] if len(runs) == 1 else spread(runs)

    dfs_runs = [
        curve(lambda s=s: random_dfs(gens[0], k, s), env, theorems, budgets) for s in dfs_seeds
    ]
    return {
        "ranking": ranking_quality(table, scores[0])
        if len(scores) == 1
        else {
            "top1_mean": round(
                statistics.fmean(ranking_quality(table, s)["top1"] for s in scores), 4
            ),
            "mrr_mean": round(
                statistics.fmean(ranking_quality(table, s)["mrr"] for s in scores), 4
            ),
        },
        "best_first": over_draws(lambda g: best_first(g, k, 1)),
        "best_first_batch4": over_draws(lambda g: best_first(g, k, 4)),
        "random_dfs": spread(dfs_runs),
    }


def _direct_replay(env: ProofEnv, thm: Any) -> bool:
    from lean_dojo_v2.interaction import ProofFinished
    from lean_dojo_v2.prover import proof_text

    state: Any = env.start(thm)
    used: list[str] = []
    for tt in thm.traced_tactics:
        if not isinstance(state, ProofState):
            break
        out = env.run_tactic(state, tt.tactic)
        if isinstance(out, TacticError):
            continue
        used.append(tt.tactic)
        state = out
    return isinstance(state, ProofFinished) and env.verify(thm, proof_text(used)).ok


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    p.add_argument("--candidates", type=int, default=8, help="candidates per state")
    p.add_argument("--seeds", type=int, default=5, help="random DFS seeds / uniform draws")
    p.add_argument("--theorems", type=int, default=None, help="first N theorems only")
    p.add_argument("--no-model", action="store_true", help="leave out the model scorer")
    p.add_argument("--scores-cache", type=Path, default=None)
    p.add_argument("--out", type=Path, default=HERE / "results" / "search_compare.json")
    args = p.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    from lean_dojo_v2.data import load_theorems, sample_dataset_path
    from lean_dojo_v2.interaction import ReplayEnv

    t0 = time.perf_counter()
    budgets = [int(b) for b in args.budgets.split(",")]
    k, seeds = args.candidates, list(range(args.seeds))
    everything = [t for t in load_theorems(sample_dataset_path()) if t.traced_tactics]
    env = ReplayEnv.from_theorems(everything)  # transitions of all 51, whatever the subset
    theorems = everything[: args.theorems] if args.theorems else everything
    table = candidate_table(theorems, env, k, pool_theorems=everything)
    log(f"{len(theorems)} theorems, {len(table)} reachable states, {k} candidates each")

    scorers: dict[str, list[Scores]] = {}
    timings: dict[str, Any] = {}
    if not args.no_model:
        from lean_dojo_v2.models.generator import load_generator

        t = time.perf_counter()
        cached = _read_scores(args.scores_cache)
        generator = None  # not loaded when the cache holds every score
        if any(set(cached.get(s, ())) != set(ts) for s, ts in table.tactics.items()):
            generator = load_generator(device="cpu", dtype="float32")
            timings["model_load_seconds"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        scorers["model"] = [model_scores(table, generator, log=log, cache=args.scores_cache)]
        timings["model_scoring_seconds"] = round(time.perf_counter() - t, 1)
        timings["model_scores_from_cache"] = generator is None
    scorers["uniform"] = [uniform_scores(table, s) for s in seeds]
    scorers["oracle"] = [oracle_scores(table)]

    results: dict[str, Any] = {}
    for name, draws in scorers.items():
        t = time.perf_counter()
        results[name] = compare(theorems, env, table, draws, budgets, k, seeds)
        timings[f"{name}_search_seconds"] = round(time.perf_counter() - t, 1)
        log(f"{name}: {json.dumps(results[name]['best_first'])}")

    if len(theorems) < len(everything):  # the scorers that cost nothing, on every theorem
        whole = candidate_table(everything, env, k)
        results_all = {
            "theorems": len(everything),
            "uniform": compare(
                everything, env, whole, [uniform_scores(whole, s) for s in seeds], budgets, k, seeds
            ),
            "oracle": compare(everything, env, whole, [oracle_scores(whole)], budgets, k, seeds),
        }
    else:
        results_all = None

    report = {
        "setup": {
            "data": "bundled LeanDojo Benchmark 4 sample through ReplayEnv",
            "theorems": len(theorems),
            "theorems_note": f"the first {len(theorems)} of the {len(everything)} with tactic "
            "proofs, in file order",
            "reachable_states": len(table),
            "candidates_per_state": k,
            "budgets_tactic_calls_per_theorem": budgets,
            "seeds": len(seeds),
            "model": None if args.no_model else "SmolLM2-135M-Instruct (load_generator(), CPU)",
            "scorers": {
                "model": "teacher-forced log p(tactic + end marker | prompt) of the model",
                "uniform": f"random scores, mean/min/max over {len(seeds)} draws",
                "oracle": "reference only, derived from the answer: right ~ -U(0.2,1.5), "
                "wrong ~ -U(0.5,3.0)",
            },
            "searches": {
                "best_first": "BestFirstSearch, frontier_batch=1",
                "best_first_batch4": "BestFirstSearch, frontier_batch=4 (the default)",
                "random_dfs": f"RandomDFS, max_trials_per_goal={k}, scores ignored, "
                f"mean/min/max over {len(seeds)} seeds",
            },
        },
        "upper_bounds": {
            "direct_replay_of_recorded_proof": sum(_direct_replay(env, t) for t in theorems),
            "provable_with_these_candidates": len(table.provable),
        },
        "results": results,
        "results_all_theorems_without_model": results_all,
        "seconds": {**timings, "total": round(time.perf_counter() - t0, 1)},
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
