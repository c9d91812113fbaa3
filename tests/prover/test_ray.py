"""Parallel proving on a local Ray instance (``backend="ray"``): the inline results in input
order, and an actor killed mid-theorem loses only that theorem (retried on a fresh actor).
One Ray start for the module; skipped only when Ray is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.search import SearchConfig

from .pipeline_oracle import OracleSpec

CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60, frontier_batch=2)


@pytest.fixture(scope="module")
def local_ray():  # noqa: ANN201
    import os
    import sys

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    yield
    ray.shutdown()


@pytest.mark.slow  # a local Ray instance (13 s with its start); make test-slow runs it
def test_ray_actors_prove_in_input_order_and_survive_a_killed_actor(
    local_ray: None, tmp_path: Path
) -> None:
    data = str(sample_dataset_path())
    all_theorems = load_theorems(data)
    theorems = [t for t in all_theorems if t.traced_tactics][:8]
    theorems.insert(3, next(t for t in all_theorems if not t.traced_tactics))
    inline = prove_theorems(
        theorems, ReplayEnvSpec(data), OracleSpec(data), CONFIG, backend="inline", progress=False
    )
    summary = [(r.theorem, r.status, r.proof) for r in inline]

    results = prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        OracleSpec(data),
        CONFIG,
        workers=2,
        backend="ray",
        progress=False,
    )
    assert [(r.theorem, r.status, r.proof) for r in results] == summary
    assert ray.is_initialized()  # a Ray instance that was running is left alone

    # Two actors die while proving: one theorem's actor once (it is retried on a fresh actor
    # and proved), the other's every time (after its retry it gets status "error"). Every other
    # theorem's result is kept.
    proved = [r.theorem for r in inline if r.status == "proved"]
    once, always = proved[0], proved[-1]
    marker = tmp_path / "killed-once"
    results = prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        OracleSpec(data, kill_on=once, once_marker=str(marker), kill_always=always),
        CONFIG,
        workers=2,
        backend="ray",
        retries=1,
        progress=False,
    )
    assert marker.exists()
    by_name = {r.theorem: r for r in results}
    assert by_name[always].status == "error" and "Ray actor died" in by_name[always].error
    assert [(r.theorem, r.status, r.proof) for r in results if r.theorem != always] == [
        s for s in summary if s[0] != always
    ]
