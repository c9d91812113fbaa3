"""The progress model in search: ``LEANPROGRESS_MODEL`` or ``prove
--progress-model DIR`` makes best-first search rank states by predicted steps remaining, with
``DEFAULT_PROGRESS_WEIGHT`` unless a weight is given; a path that holds no progress model is a
typed one-line error before any search. Tiny random BERT regressors (tests/lean_progress/
tiny_bert.py) stand in for trained models."""

from __future__ import annotations

from pathlib import Path

import pytest
from lean_progress.tiny_bert import build_tiny_progress_model, one_torch_thread

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.errors import ConfigError, ModelError, ModelNotFoundError
from lean_dojo_v2.prover import BestFirstSearch, SearchConfig
from lean_dojo_v2.prover.search_config import DEFAULT_PROGRESS_WEIGHT

from ._oracle_server import oracle_answer
from ._search_helpers import FINISHED, Graph, GraphEnv, ScriptedGenerator, theorem
from .fake_openai import FakeOpenAI

SAMPLE = str(sample_dataset_path())
THM = theorem()


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    yield from one_torch_thread()


@pytest.fixture(scope="module")
def progress_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_progress_model(tmp_path_factory.mktemp("tiny_progress"))


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_progress_model(tmp_path_factory.mktemp("tiny_cls"), num_labels=2)


@pytest.fixture(scope="module")
def tiny_causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal"))


@pytest.fixture(autouse=True)
def _no_env_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEANPROGRESS_MODEL", raising=False)


def _graph() -> tuple[Graph, dict]:
    graph = Graph("R", {"R": {"t1": "A", "t2": "B"}, "A": {"a": FINISHED}, "B": {"b": FINISHED}})
    table = {"R": [("t1", -1.0), ("t2", -0.9)], "A": [("a", -0.1)], "B": [("b", -0.1)]}
    return graph, table


class StepsModel:
    def __init__(self, graph: Graph, steps: dict[str, float]) -> None:
        self.graph, self.steps = graph, steps

    def predict(self, goals, tactics=None, prefixes=None):
        return [self.steps[self.graph.label(g)] for g in goals]


# -- the search ----------------------------------------------------------------------------------


def test_a_given_progress_model_is_used_with_the_default_weight() -> None:
    graph, table = _graph()
    model = StepsModel(graph, {"A": 0.0, "B": 5.0})
    search = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(frontier_batch=1), model)
    result = search.search(GraphEnv(graph), THM)
    # A: -1.0 - 0.5·0 beats B: -0.9 - 0.5·5; without the progress model B would go first.
    assert result.proof == ["t1", "a"]
    assert result.stats["progress_weight"] == DEFAULT_PROGRESS_WEIGHT == 0.5
    assert result.stats["progress_calls"] == 1


def test_leanprogress_model_alone_turns_the_progress_model_on(
    progress_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream LeanDojo-v2's promise: once LEANPROGRESS_MODEL is set, search uses the model,
    with no progress_weight given."""
    monkeypatch.setenv("LEANPROGRESS_MODEL", str(progress_dir))
    graph, table = _graph()
    search = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(frontier_batch=1))
    assert search.progress_model is not None and search.progress_weight == 0.5
    result = search.search(GraphEnv(graph), THM)
    assert result.status == "proved"
    assert result.stats["progress_calls"] >= 1 and result.stats["progress_weight"] == 0.5
    # Loaded once per process: the next search (a worker's next theorem) reuses it.
    again = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig())
    assert again.progress_model is search.progress_model


def test_weight_zero_turns_leanprogress_model_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEANPROGRESS_MODEL", "/nonexistent/progress")
    graph, table = _graph()
    search = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig(progress_weight=0.0))
    assert search.progress_model is None and search.progress_weight == 0.0
    assert search.search(GraphEnv(graph), THM).stats["progress_calls"] == 0


def test_no_model_anywhere_means_weight_zero() -> None:
    graph, table = _graph()
    search = BestFirstSearch(ScriptedGenerator(graph, table), SearchConfig())
    assert search.progress_model is None and search.progress_weight == 0.0


@pytest.mark.parametrize("where", ["env", "config"])
def test_a_path_without_a_progress_model_is_an_error_not_ignored(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "nonexistent")
    cfg = SearchConfig()
    if where == "env":
        monkeypatch.setenv("LEANPROGRESS_MODEL", missing)
    else:
        cfg = SearchConfig(progress_model_path=missing)
    graph, table = _graph()
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        BestFirstSearch(ScriptedGenerator(graph, table), cfg)


@pytest.mark.parametrize("value", [True, -0.5, float("nan"), "0.5"])
def test_bad_progress_weights_are_config_errors(value: object) -> None:
    with pytest.raises(ConfigError, match="progress_weight"):
        SearchConfig(progress_weight=value)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="progress_model_path"):
        SearchConfig(progress_model_path="  ")


# -- prove ---------------------------------------------------------------------------------------


def _prove(tiny_causal_dir: Path, *extra: str) -> list[str]:
    return ["prove", "--data", SAMPLE, "--model", str(tiny_causal_dir), "--parallel", "inline"] + [
        "--limit",
        "1",
        "--num-samples",
        "2",
        "--max-expansions",
        "2",
        "--no-progress",
        "--json",
        *extra,
    ]


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("lean-dojo-v2: error:")]
    assert len(lines) == 1
    assert out.strip() == ""  # refused before any search: no summary
    return lines[0]


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any search fail the test: the errors below must come before one starts."""

    def boom(*args, **kwargs):
        raise AssertionError("a search started")

    monkeypatch.setattr("lean_dojo_v2.prover.parallel.prove_theorems", boom)


def test_prove_refuses_a_leanprogress_model_that_does_not_exist(
    tiny_causal_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys, no_search
) -> None:
    monkeypatch.setenv("LEANPROGRESS_MODEL", "/nonexistent")
    line = _one_line_error(_prove(tiny_causal_dir), capsys)
    assert "progress model /nonexistent does not exist" in line


def test_prove_refuses_bad_progress_models(
    tiny_causal_dir: Path, classifier_dir: Path, tmp_path: Path, capsys, no_search
) -> None:
    line = _one_line_error(_prove(tiny_causal_dir, "--progress-model", str(classifier_dir)), capsys)
    assert "not a steps-remaining regressor" in line and "2 outputs" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _one_line_error(_prove(tiny_causal_dir, "--progress-model", str(empty)), capsys)
    assert "has no config.json" in line
    # A causal LM is no progress model either (transformers' default of 2 outputs).
    line = _one_line_error(
        _prove(tiny_causal_dir, "--progress-model", str(tiny_causal_dir)), capsys
    )
    assert "not a steps-remaining regressor" in line
    line = _one_line_error(_prove(tiny_causal_dir, "--progress-weight", "0.3"), capsys)
    assert "needs a progress model" in line


def test_check_progress_model_needs_weights(progress_dir: Path, tmp_path: Path) -> None:
    import shutil

    from lean_dojo_v2.models.progress import check_progress_model

    assert check_progress_model(progress_dir) == progress_dir
    copy = tmp_path / "no_weights"
    shutil.copytree(progress_dir, copy)
    for f in copy.glob("*.safetensors"):
        f.unlink()
    for f in copy.glob("*.bin"):
        f.unlink()
    with pytest.raises(ModelNotFoundError, match="has no weights"):
        check_progress_model(copy)
    (copy / "config.json").write_text("[1]", "utf-8")
    with pytest.raises(ModelNotFoundError, match="not an object"):
        check_progress_model(copy)
    with pytest.raises(ModelError):
        check_progress_model(progress_dir / "config.json")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_prove_uses_the_progress_model(
    how: str,
    progress_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from lean_dojo_v2.models.progress import ProgressModel

    calls: list[int] = []
    real = ProgressModel.predict

    def counting(self, goals, tactics=None, prefixes=None):
        calls.append(len(goals))
        return real(self, goals, tactics, prefixes)

    monkeypatch.setattr(ProgressModel, "predict", counting)
    extra: list[str] = []
    if how == "flag":
        extra = ["--progress-model", str(progress_dir), "--progress-weight", "0.25"]
    else:
        monkeypatch.setenv("LEANPROGRESS_MODEL", str(progress_dir))
    with FakeOpenAI(completions=oracle_answer(), models=("oracle",)) as server:
        rc = main(
            ["prove", "--data", SAMPLE, "--generator", "openai", "--model", "oracle"]
            + ["--base-url", server.base_url, "--parallel", "inline", "--limit", "2"]
            + ["--num-samples", "3", "--max-expansions", "6", "--no-progress", "--json", *extra]
        )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["progress_model"] == str(progress_dir.resolve())
    assert summary["progress_weight"] == (0.25 if how == "flag" else 0.5)
    assert calls, "the progress model scored no state"


def test_prove_progress_weight_zero_turns_the_variable_off(
    tiny_causal_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    monkeypatch.setenv("LEANPROGRESS_MODEL", "/nonexistent")
    assert main(_prove(tiny_causal_dir, "--progress-weight", "0")) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["progress_model"] is None and summary["progress_weight"] == 0.0
