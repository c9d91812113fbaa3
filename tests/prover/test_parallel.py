"""Parallel proving (``prove_theorems``): results in input order for every backend, equal to a
single inline run; a killed worker loses no other theorem's result (its theorem is retried on a
fresh worker or gets status "error"); a factory that fails is raised as its own typed error.

Real data: the bundled LeanDojo sample through ``ReplayEnv``; the generator proposes the
recorded tactics among wrong ones (tests/prover/pipeline_oracle.py)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.errors import ConfigError, DatasetNotFoundError
from lean_dojo_v2.interaction import ReplayEnv
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.result import proof_text
from lean_dojo_v2.prover.search import SearchConfig

from .pipeline_oracle import OracleSpec, replay_provable

CONFIG = SearchConfig(num_samples=4, max_expansions=30, timeout=60, frontier_batch=2)


@pytest.fixture(scope="module")
def inline_results(theorems: list, data: str) -> list:
    return prove_theorems(
        theorems, ReplayEnvSpec(data), OracleSpec(data), CONFIG, backend="inline", progress=False
    )


def _summary(results: list) -> list[tuple[str, str, list[str] | None]]:
    return [(r.theorem, r.status, r.proof) for r in results]


def test_inline_proves_what_direct_replay_proves(inline_results: list, theorems: list) -> None:
    assert [r.theorem for r in inline_results] == [t.full_name for t in theorems]
    proved = {r.theorem: r for r in inline_results if r.status == "proved"}
    by_name = {t.full_name: t for t in theorems}
    with ReplayEnv.from_dataset(sample_dataset_path()) as env:
        expected = replay_provable(env, theorems)
        # Every proof found replays (a fresh re-check), and nothing direct replay proves is missed.
        for name, r in proved.items():
            assert r.checked_by == "replay"
            assert env.verify(by_name[name], proof_text(r.proof)).ok
    assert expected  # the sample has replay-provable theorems among these
    assert expected <= set(proved)
    term_mode = {t.full_name for t in theorems if not t.traced_tactics}
    assert {r.theorem for r in inline_results if r.status == "error"} >= term_mode


def test_process_workers_give_the_inline_results_in_input_order(
    theorems: list, data: str, inline_results: list
) -> None:
    seen = []
    results = prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        OracleSpec(data),
        CONFIG,
        workers=2,
        on_result=lambda r: seen.append(r.theorem),
        progress=False,
    )
    assert _summary(results) == _summary(inline_results)
    assert sorted(seen) == sorted(t.full_name for t in theorems)  # on_result once per theorem


def test_killed_worker_loses_no_other_theorem(
    theorems: list, data: str, inline_results: list, tmp_path: Path
) -> None:
    """A worker killed from outside (SIGKILL) while it proves one theorem: that theorem gets
    status "error", every other theorem's result is what the inline run gives."""
    victim = next(r.theorem for r in inline_results if r.status == "proved")
    pid_file = tmp_path / "pid"

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    results = prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        OracleSpec(data, kill_on=victim, pid_file=str(pid_file)),
        CONFIG,
        workers=2,
        retries=0,
        progress=False,
    )
    thread.join(timeout=5)
    by_name = {r.theorem: r for r in results}
    assert by_name[victim].status == "error" and "died (signal 9)" in by_name[victim].error
    others = [r for r in results if r.theorem != victim]
    assert _summary(others) == [s for s in _summary(inline_results) if s[0] != victim]


def test_killed_worker_theorem_is_retried_on_a_fresh_worker(
    theorems: list, data: str, inline_results: list, tmp_path: Path
) -> None:
    victim = next(r.theorem for r in inline_results if r.status == "proved")
    marker = tmp_path / "killed-once"
    results = prove_theorems(
        theorems,
        ReplayEnvSpec(data),
        OracleSpec(data, kill_on=victim, once_marker=str(marker)),
        CONFIG,
        workers=2,
        retries=1,
        progress=False,
    )
    assert marker.exists()  # the worker did die once
    assert _summary(results) == _summary(inline_results)  # and the retry proved it


def test_factory_error_is_raised_as_its_own_typed_error(theorems: list, data: str) -> None:
    with pytest.raises(DatasetNotFoundError):
        prove_theorems(
            theorems[:2],
            ReplayEnvSpec("/nonexistent/dataset"),
            OracleSpec(data),
            CONFIG,
            progress=False,
        )


def test_bad_arguments_are_config_errors(theorems: list, data: str) -> None:
    with pytest.raises(ConfigError, match="backend"):
        prove_theorems(theorems, ReplayEnvSpec(data), OracleSpec(data), CONFIG, backend="threads")
    with pytest.raises(ConfigError, match="workers"):
        prove_theorems(theorems, ReplayEnvSpec(data), OracleSpec(data), CONFIG, workers=0)
    with pytest.raises(ConfigError, match="Theorem records"):
        prove_theorems(["a"], ReplayEnvSpec(data), OracleSpec(data), CONFIG)
    assert prove_theorems([], ReplayEnvSpec(data), OracleSpec(data), CONFIG) == []


# -- scripts without a main guard ----------------------------------------------------------------

_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
with open({marker!r}, "a") as f:
    f.write("top-level code ran\\n")
from lean_dojo_v2.data import load_theorems
from lean_dojo_v2.prover.parallel import ReplayEnvSpec, prove_theorems
from lean_dojo_v2.prover.search import SearchConfig
from prover.pipeline_oracle import OracleSpec
{factory}
def run():
    theorems = [t for t in load_theorems({data!r}) if t.traced_tactics][:4]
    results = prove_theorems(theorems, ReplayEnvSpec({data!r}), FACTORY,
                             SearchConfig(num_samples=4, max_expansions=30, timeout=60),
                             workers=2, backend="process", progress=False)
    print(sum(r.status == "proved" for r in results), len(results))
{call}
"""
_LIBRARY_FACTORY = "FACTORY = OracleSpec({data!r})"
_SCRIPT_FACTORY = """
class ScriptFactory:  # defined in the script: a worker needs __main__ to unpickle it
    def __call__(self):
        return OracleSpec({data!r})()
FACTORY = ScriptFactory()
"""


def _run_script(tmp_path: Path, data: str, factory: str, call: str) -> tuple[str, int]:
    import subprocess
    import sys

    marker = tmp_path / "ran.txt"
    tests = str(Path(__file__).resolve().parents[1])
    text = _SCRIPT.format(
        tests=tests, marker=str(marker), data=data, factory=factory.format(data=data), call=call
    )
    script = tmp_path / "seed_style.py"
    script.write_text(text)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip(), len(marker.read_text().splitlines())


def test_a_script_without_a_main_guard_runs_its_top_level_code_once(tmp_path, data):
    """Upstream LeanDojo-v2's example scripts are top-level code: a worker must not import the script again (it
    would train again, then fail to start its own workers)."""
    out, runs = _run_script(tmp_path, data, _LIBRARY_FACTORY, "run()")
    assert out == "4 4" and runs == 1


def test_a_guarded_script_may_define_its_factory_in_the_script(tmp_path, data):
    """A factory of the script's own needs ``__main__`` in the worker: multiprocessing's usual
    rule (the guard) applies and works."""
    out, runs = _run_script(
        tmp_path, data, _SCRIPT_FACTORY, 'if __name__ == "__main__":\n    run()'
    )
    # the parent ran the top level once and each worker imported the script once more
    assert out == "4 4" and runs >= 2


def test_needs_main_module_tells_library_factories_from_script_ones(data):
    import __main__
    from lean_dojo_v2.prover.parallel import _needs_main_module

    assert not _needs_main_module(OracleSpec(data), ReplayEnvSpec(data), CONFIG)
    assert _needs_main_module(lambda: None)  # unpicklable: multiprocessing's own error

    class Local:
        pass

    Local.__module__ = "__main__"
    Local.__qualname__ = "Local"
    __main__.Local = Local
    try:
        assert _needs_main_module(Local())
    finally:
        del __main__.Local
