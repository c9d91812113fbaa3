"""Best-first search on crafted transition graphs (real goal text, scripted transitions and
log-probs): expansion order, batching, dedup, every budget, verify re-check, failures of the
environment and of the generator, several environments, the progress-model priority."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig, search_theorem

from ._search_helpers import FINISHED, Graph, GraphEnv, ScriptedGenerator, theorem

pytestmark = pytest.mark.timeout(60)

THM = theorem()


def crafted() -> tuple[Graph, dict]:
    graph = Graph(
        "R",
        {
            "R": {"t1": "A", "t2": "B", "t3": ("error", "tactic")},
            "A": {"a1": "C", "a2": "D"},
            "B": {"b1": "E", "b2": "F"},
            "F": {"f1": "G"},
            "C": {"c1": FINISHED},
        },
    )
    table = {
        "R": [("t1", -1.0), ("t2", -0.5), ("t3", -2.0)],
        "A": [("a1", -0.1), ("a2", -3.0)],
        "B": [("b1", -1.0), ("b2", -0.2)],
        "F": [("f1", -5.0)],
        "C": [("c1", -0.1)],
    }
    return graph, table


def order(search: BestFirstSearch, graph: Graph) -> list[str]:
    tree = search.last_tree
    return [graph.label(tree.nodes[i].key) for i in tree.expansion_order]


def test_best_first_expands_states_in_order_of_cumulative_logprob():
    graph, table = crafted()
    gen = ScriptedGenerator(graph, table)
    search = BestFirstSearch(gen, SearchConfig(frontier_batch=1))
    result = search.search(GraphEnv(graph), THM)
    # cumulative log-probs: B -0.5, F -0.7, A -1.0, C -1.1, E -1.5, D -4.0, G -5.7
    assert order(search, graph) == ["R", "B", "F", "A", "C"]
    assert result.status == "proved" and result.proof == ["t1", "a1", "c1"]
    assert result.checked_by == "replay" and result.backend == "graph"
    assert result.expansions == 5 and gen.calls == [["R"], ["B"], ["F"], ["A"], ["C"]]
    assert result.stats["tactic_errors"] == {"tactic": 1}
    json.dumps(result.to_dict())


def test_frontier_batch_expands_several_states_per_generator_call():
    graph, table = crafted()
    gen = ScriptedGenerator(graph, table)
    search = BestFirstSearch(gen, SearchConfig(frontier_batch=2))
    result = search.search(GraphEnv(graph), THM)
    assert gen.calls == [["R"], ["B", "A"], ["F", "C"]]
    assert order(search, graph) == ["R", "B", "A", "F", "C"]
    assert result.proof == ["t1", "a1", "c1"] and result.expansions == 5
    assert result.stats["generator_calls"] == 3


def test_for_theorem_is_called_once_per_theorem():
    graph, table = crafted()
    gen = ScriptedGenerator(graph, table)
    search = BestFirstSearch(gen, SearchConfig(frontier_batch=1))
    search.search(GraphEnv(graph), THM)
    search.search(GraphEnv(graph), theorem("Crafted.other"))
    assert gen.bound == ["Crafted.thm", "Crafted.other"]


def test_dedup_state_reached_twice_is_expanded_once_on_the_better_path():
    graph = Graph(
        "R",
        {
            "R": {"t1": "A", "t2": "B", "loop": "R"},
            "A": {"x1": "X"},
            "B": {"x2": "X", "back": "R"},
            "X": {"done": FINISHED},
        },
    )
    table = {
        "R": [("t1", -1.0), ("t2", -0.2), ("loop", -0.01)],
        "A": [("x1", -0.1)],  # X via A: -1.1
        "B": [("x2", -2.0), ("back", -0.1)],  # X via B: -2.2 (found first)
        "X": [("done", -0.1)],
    }
    gen = ScriptedGenerator(graph, table)
    search = BestFirstSearch(gen, SearchConfig(frontier_batch=1))
    result = search.search(GraphEnv(graph), THM)
    assert order(search, graph) == ["R", "B", "A", "X"]  # R is never expanded again
    assert [lbl for call in gen.calls for lbl in call].count("X") == 1
    assert result.proof == ["t1", "x1", "done"]  # the better path to X was kept
    assert result.stats["dedup_hits"] == 3  # loop -> R, back -> R, x1 -> X
    assert result.stats["reparented"] == 1
    assert result.stats["nodes"] == 4


def chain(n: int) -> tuple[Graph, dict]:
    labels = [f"L{i:02d}" for i in range(n)]
    edges = {a: {f"step{i}": b} for i, (a, b) in enumerate(zip(labels, labels[1:], strict=False))}
    table = {a: [(f"step{i}", -0.1), ("nope", -1.0)] for i, a in enumerate(labels[:-1])}
    return Graph(labels[0], edges), table


def test_max_expansions_budget_is_honoured():
    graph, table = chain(30)
    gen = ScriptedGenerator(graph, table)
    result = BestFirstSearch(gen, SearchConfig(max_expansions=7)).search(GraphEnv(graph), THM)
    assert result.status == "failed" and result.stats["stop_reason"] == "max_expansions"
    assert result.expansions == 7 and sum(len(c) for c in gen.calls) == 7
    # a wide tree with a batch larger than the budget left: never more than max_expansions
    wide = Graph("R", {"R": {f"t{i}": f"S{i}" for i in range(6)}})
    wide_table = {"R": [(f"t{i}", -i / 10) for i in range(6)]}
    for i in range(6):
        wide_table[f"S{i}"] = [("x", -1.0)]
    gen = ScriptedGenerator(wide, wide_table)
    cfg = SearchConfig(max_expansions=3, frontier_batch=4)
    result = BestFirstSearch(gen, cfg).search(GraphEnv(wide), THM)
    assert result.expansions == 3 and gen.calls == [["R"], ["S0", "S1"]]


def test_nothing_left_to_expand_is_failed_exhausted():
    graph, table = crafted()
    del table["C"]
    result = BestFirstSearch(ScriptedGenerator(graph, table)).search(GraphEnv(graph), THM)
    assert result.status == "failed" and result.stats["stop_reason"] == "exhausted"
    assert result.proof is None and result.checked_by is None and result.expansions == 8


def test_wall_clock_timeout_with_a_slow_env_is_honoured():
    graph, table = chain(60)
    env = GraphEnv(graph, latency=0.1)
    t0 = time.perf_counter()
    result = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(timeout=0.8)).search(
        env, THM
    )
    elapsed = time.perf_counter() - t0
    assert result.status == "timeout"
    assert 0.8 <= result.seconds < 0.8 + 0.1 + 0.25 and elapsed < 1.5
    # no tactic was given more time than was left
    assert all(timeout <= 0.8 for _, _, timeout in env.calls)


def test_wall_clock_timeout_during_a_slow_generator_is_honoured():
    graph, table = crafted()
    gen = ScriptedGenerator(graph, table, delay=2.0)
    t0 = time.perf_counter()
    result = BestFirstSearch(gen, SearchConfig(timeout=0.3)).search(GraphEnv(graph), THM)
    assert result.status == "timeout" and result.stats["stop_reason"] == "timeout_in_generator"
    assert time.perf_counter() - t0 < 1.5


def test_tactic_timeout_is_passed_to_run_tactic_and_a_timed_out_branch_is_dropped():
    graph = Graph(
        "R",
        {"R": {"slow": ("slow", 5.0, "A"), "ok": "B"}, "A": {"a": FINISHED}, "B": {"b": FINISHED}},
    )
    table = {"R": [("slow", -0.1), ("ok", -0.5)], "A": [("a", -0.1)], "B": [("b", -0.1)]}
    env = GraphEnv(graph)
    cfg = SearchConfig(tactic_timeout=0.2)
    t0 = time.perf_counter()
    result = BestFirstSearch(ScriptedGenerator(graph, table), cfg).search(env, THM)
    assert time.perf_counter() - t0 < 2.0
    assert {timeout for _, _, timeout in env.calls} == {0.2}
    assert result.status == "proved" and result.proof == ["ok", "b"]
    assert result.stats["tactic_timeouts"] == 1 and result.stats["tactic_errors"] == {"timeout": 1}


def test_max_depth_stops_expanding_deep_states():
    graph, table = chain(10)
    gen = ScriptedGenerator(graph, table)
    result = BestFirstSearch(gen, SearchConfig(max_depth=3)).search(GraphEnv(graph), THM)
    assert result.status == "failed" and result.expansions == 3
    assert [c[0] for c in gen.calls] == ["L00", "L01", "L02"]


def test_a_proof_counts_only_after_verify_and_a_rejection_is_counted_and_search_goes_on():
    graph = Graph("R", {"R": {"t1": FINISHED, "t2": "A"}, "A": {"a": FINISHED}})
    table = {"R": [("t1", -0.1), ("t2", -0.5)], "A": [("a", -0.1)]}
    env = GraphEnv(graph, reject=[("t1",)])
    result = BestFirstSearch(ScriptedGenerator(graph, table)).search(env, THM)
    assert result.status == "proved" and result.proof == ["t2", "a"]
    assert result.stats["verify_rejected"] == 1 and result.stats["verify_calls"] == 2
    assert "rejected by the test" in result.stats["rejections"][0]


def test_generator_error_gives_status_error_not_an_exception():
    graph, table = crafted()
    gen = ScriptedGenerator(graph, table, fail_on="B")
    result = BestFirstSearch(gen, SearchConfig(frontier_batch=1)).search(GraphEnv(graph), THM)
    assert result.status == "error" and "model exploded on B" in result.error
    assert result.stats["stop_reason"] == "generator_error" and result.expansions == 1


def test_malformed_generator_output_gives_status_error():
    graph, table = crafted()

    class Bad(ScriptedGenerator):
        def generate(self, states, num_samples, *, prefix=None):
            return [["simp"]]

    result = BestFirstSearch(Bad(graph, table)).search(GraphEnv(graph), THM)
    assert result.status == "error" and "Candidate(tactic: str, logprob: float)" in result.error


def test_unknown_theorem_gives_status_error():
    graph, table = crafted()
    env = GraphEnv(graph, theorem_name="Some.other")
    result = BestFirstSearch(ScriptedGenerator(graph, table)).search(env, THM)
    assert result.status == "error" and "not in this environment" in result.error
    assert result.stats["stop_reason"] == "unknown_theorem"


def test_crash_drops_only_that_branch_and_lost_states_are_recreated():
    graph = Graph(
        "R",
        {
            "R": {"t": "A", "u": "B"},
            "A": {"boom": ("crash",), "a": "C"},
            "B": {"b": FINISHED},
        },
    )
    table = {
        "R": [("t", -0.5), ("u", -1.0)],
        "A": [("boom", -0.1), ("a", -0.2)],
        "B": [("b", -0.1)],
    }
    env = GraphEnv(graph, shares_states=False)  # states die with the process
    search = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(frontier_batch=1))
    result = search.search(env, THM)
    assert result.status == "proved" and result.proof == ["u", "b"]
    assert order(search, graph) == ["R", "A", "C", "B"]
    s = result.stats
    assert s["env_crashes"] == 1 and s["stale_states"] == 2 and s["rebuilds"] == 2
    assert s["rebuild_failures"] == 0 and "scripted process died" in s["crash_messages"][0]
    crash_edges = [e for e in search.last_tree.edges if e.outcome == "crash"]
    assert [e.tactic for e in crash_edges] == ["boom"]


def test_tactics_of_one_expansion_run_concurrently_across_envs():
    graph = Graph("R", {"R": {f"t{i}": f"S{i}" for i in range(8)}})
    table = {"R": [(f"t{i}", -i / 10) for i in range(8)]}

    def run(n: int) -> tuple[float, list[GraphEnv]]:
        envs = [GraphEnv(graph, name=f"env{i}", latency=0.05) for i in range(n)]
        result = BestFirstSearch(ScriptedGenerator(graph, table)).search(envs, THM)
        assert result.status == "failed" and result.stats["nodes"] == 9
        return result.stats["env_wall_seconds"], envs

    one, _ = run(1)
    four, envs = run(4)
    assert four < 0.6 * one, (one, four)
    assert all(len(e.calls) == 2 for e in envs)


def test_envs_that_do_not_share_states_run_a_node_only_where_it_lives():
    graph = Graph(
        "R",
        {
            "R": {f"t{i}": f"S{i}" for i in range(4)},
            "S3": {"x": "T"},
            "T": {"done": FINISHED},
        },
    )
    table = {"R": [(f"t{i}", -(3 - i) / 10) for i in range(4)], "S3": [("x", -0.1)]}
    table["T"] = [("done", -0.1)]
    envs = [GraphEnv(graph, name=f"env{i}", latency=0.01, shares_states=False) for i in range(2)]
    result = BestFirstSearch(ScriptedGenerator(graph, table)).search(envs, THM)
    assert result.status == "proved" and result.proof == ["t3", "x", "done"]
    assert result.stats["stale_states"] == 0 and result.stats["shared_states"] is False
    assert all(any(label == "R" for label, _, _ in e.calls) for e in envs)  # root on both


class StepsModel:
    """A progress model that predicts a fixed number of steps per state label."""

    def __init__(self, graph: Graph, steps: dict[str, float]) -> None:
        self.graph, self.steps, self.calls = graph, steps, []

    def predict(self, goals, tactics=None, prefixes=None):
        self.calls.append((list(goals), list(prefixes)))
        return [self.steps[self.graph.label(g)] for g in goals]


def test_progress_weight_adds_predicted_steps_remaining_to_the_priority():
    graph = Graph("R", {"R": {"t1": "A", "t2": "B"}, "A": {"a": FINISHED}, "B": {"b": FINISHED}})
    table = {"R": [("t1", -1.0), ("t2", -0.9)], "A": [("a", -0.1)], "B": [("b", -0.1)]}
    plain = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(frontier_batch=1))
    assert plain.search(GraphEnv(graph), THM).proof == ["t2", "b"]
    model = StepsModel(graph, {"A": 0.0, "B": 5.0})
    cfg = SearchConfig(frontier_batch=1, progress_weight=1.0)
    guided = BestFirstSearch(ScriptedGenerator(graph, table), cfg, progress_model=model)
    result = guided.search(GraphEnv(graph), THM)
    assert result.proof == ["t1", "a"]  # A: -1.0 - 0, B: -0.9 - 5
    goals, prefixes = model.calls[0]
    # children in the generator's order (best log-prob first), the tactics so far as prefix
    assert [graph.label(g) for g in goals] == ["B", "A"] and prefixes == ["t2", "t1"]
    assert result.stats["progress_calls"] == 1


def test_progress_weight_without_a_model_is_a_config_error(monkeypatch):
    monkeypatch.delenv("LEANPROGRESS_MODEL", raising=False)
    graph, table = crafted()
    with pytest.raises(ConfigError, match="progress"):
        BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(progress_weight=0.5))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_samples": 0},
        {"max_expansions": -1},
        {"timeout": 0},
        {"tactic_timeout": float("inf")},
        {"frontier_batch": 1.5},
        {"progress_weight": -1.0},
        {"max_depth": 0},
    ],
)
def test_bad_search_config_values_are_config_errors(kwargs):
    with pytest.raises(ConfigError, match="SearchConfig"):
        SearchConfig(**kwargs)


def test_bad_env_or_theorem_is_a_config_error():
    graph, table = crafted()
    search = BestFirstSearch(ScriptedGenerator(graph, table))
    with pytest.raises(ConfigError, match="ProofEnv"):
        search.search("not an env", THM)
    with pytest.raises(ConfigError, match="Theorem"):
        search.search(GraphEnv(graph), "Crafted.thm")
    with pytest.raises(ConfigError, match="TacticGenerator"):
        BestFirstSearch(object())


def test_sync_search_works_inside_a_running_event_loop():
    graph, table = crafted()

    async def main():
        return search_theorem(ScriptedGenerator(graph, table), GraphEnv(graph), THM)

    assert asyncio.run(main()).proof == ["t1", "a1", "c1"]


def test_verify_that_raises_is_not_a_proof_and_not_a_crash():
    from lean_dojo_v2.interaction import InteractionError

    graph, table = crafted()

    class NoVerify(GraphEnv):
        async def verify(self, theorem, proof):
            raise InteractionError("cannot verify Crafted.thm: it has no theorem_statement")

    result = BestFirstSearch(ScriptedGenerator(graph, table)).search(NoVerify(graph), THM)
    assert result.status == "failed" and result.proof is None
    assert result.stats["verify_errors"] == 2 and result.stats["env_crashes"] == 0  # 1 retry
    assert "no theorem_statement" in result.stats["rejections"][0]
