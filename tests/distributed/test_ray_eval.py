"""`eval prove --parallel ray`: the evaluation's problems proved on Ray actors (a local Ray this
run starts and stops) give the solved set, pass@k and budget counts of the inline run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evaluation.test_run_resume import _argv, _totals, scenario  # noqa: F401 (a fixture)
from prover.fake_openai import FakeOpenAI

from lean_dojo_v2.cli import main

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def test_eval_on_ray_actors_gives_the_inline_totals(
    scenario: tuple[FakeOpenAI, list[str], dict[str, int]],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ray

    from lean_dojo_v2.prover import ray_backend

    ran = []
    real = ray_backend.run_ray

    def spy(*args: object, **kwargs: object) -> object:
        ran.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ray_backend, "run_ray", spy)

    server, names, correct = scenario
    inline, on_ray = tmp_path / "inline", tmp_path / "ray"
    assert main([*_argv(server, names, inline), "--parallel", "inline", "--no-progress"]) == 0
    assert not ray.is_initialized()
    argv = [*_argv(server, names, on_ray), "--parallel", "ray", "--workers", "2", "--no-progress"]
    assert main(argv) == 0
    assert ran  # the problems went to Ray actors
    assert not ray.is_initialized()  # the Ray this run started is stopped
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(line["solved_problems"]) == {n for n, c in correct.items() if c}

    def totals(out: Path) -> dict[str, object]:
        return _totals(json.loads((out / "summary.json").read_text("utf-8")))

    assert totals(on_ray) == totals(inline)
