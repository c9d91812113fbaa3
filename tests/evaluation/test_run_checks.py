"""``evaluate(...)`` from Python: what it is given is checked before anything is written (your
own factories, the types of its paths), and a problem that ran out of time asks its server
nothing more."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.errors import ConfigError
from lean_dojo_v2.evaluation import EvalConfig, evaluate, prepare
from lean_dojo_v2.evaluation.errors import EvalFactoryError
from lean_dojo_v2.prover.parallel import ExternalProverSpec

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(completions=["```lean4\nnorm_num\n```"], models=("prover",)) as s:
        yield s


def _settings(out: Path, **changes: object) -> dict[str, object]:
    return {
        "benchmark": "minif2f-test",
        "limit": 1,
        "n": 2,
        "verifier": "recorded",
        "verdict_cache": "none",
        "out": str(out),
        "parallel": "inline",
        "progress": False,
        **changes,
    }


def _raises() -> object:
    raise RuntimeError("no GPU here")


def _nothing() -> object:
    return None


@pytest.mark.parametrize(
    ("own", "says"),
    [
        ({"make_generator": 5}, "make_generator must be a callable without arguments"),
        ({"make_env": "pantograph"}, "make_env must be a callable without arguments"),
        ({"make_generator": _raises}, "RuntimeError: no GPU here"),
        ({"make_env": _raises}, "RuntimeError: no GPU here"),
        ({"make_generator": _nothing}, "returned None"),
        ({"make_env": _nothing}, "returned None"),
    ],
)
def test_your_own_factory_is_checked_before_anything_is_written(
    tmp_path: Path, own: dict[str, object], says: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(EvalFactoryError, match=says) as info:
        evaluate(**_settings(out), **own)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_factory_worker_processes_cannot_receive_is_refused(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    spec = ExternalProverSpec("prover", server.base_url)
    local: Callable[[], object] = lambda: spec()  # noqa: E731 - a lambda is what is refused
    with pytest.raises(EvalFactoryError, match="cannot be sent to worker processes"):
        evaluate(**_settings(tmp_path / "out", parallel="process"), make_generator=local)
    assert list(tmp_path.iterdir()) == []
    # inline, the same factory is fine
    result = evaluate(**_settings(tmp_path / "out"), make_generator=local)
    assert result.attempted == 1


def test_inline_the_generator_the_check_made_is_the_runs(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    """A factory that loads a model is called once inline: the check's generator proves."""
    spec = ExternalProverSpec("prover", server.base_url)
    made: list[object] = []

    def counting() -> object:
        made.append(spec())
        return made[-1]

    result = evaluate(**_settings(tmp_path / "out", limit=2), make_generator=counting)
    assert result.attempted == 2 and len(made) == 1


def test_a_path_setting_must_be_a_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config key 'out' must be a path"):
        evaluate(**{**_settings(tmp_path / "out"), "out": 123})
    with pytest.raises(ConfigError, match="config key 'prompt' must be a path"):
        evaluate(**_settings(tmp_path / "out", prompt=["a.yaml"]))
    assert list(tmp_path.iterdir()) == []
    # a path object is a path
    assert EvalConfig(out=tmp_path / "x").out == str(tmp_path / "x")
    prepared = prepare(**{**_settings(tmp_path / "out"), "out": tmp_path / "out"})
    assert prepared.plan.path == tmp_path / "out"


def test_a_timed_out_problem_sends_no_further_request(tmp_path: Path) -> None:
    """A server that answers one choice per request, slowly: the problem's --timeout ends its
    search, and its sampling stops with it (the requests after it would be counted nowhere)."""
    with FakeOpenAI(
        completions=["```lean4\nnorm_num\n```"], models=("prover",), honour_n=False, delay=0.2
    ) as s:
        settings = _settings(tmp_path / "out", n=40, timeout=1.0)
        result = evaluate(**settings, generator="openai", model="prover", base_url=s.base_url)
        time.sleep(1.0)  # five more requests' time
        sent = len(s.requests)
    (problem,) = result.problems
    assert problem.status == "timeout"
    # 1 s of 0.2 s requests, and the one under way when the time ran out
    assert 3 <= sent <= 7, sent
