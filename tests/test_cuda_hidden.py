"""The suite runs every test not marked ``gpu`` on the CPU, also on a machine with a GPU
(``tests/conftest.py``): such a test sees no CUDA in this process nor in the programs it starts,
whatever the machine has. A GPU machine is simulated by making torch report a device."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # imported at collection, as the model tests do: the hiding patches it

from lean_dojo_v2.models.loading import resolve_device, resolve_dtype


def _fake_gpu_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")


def test_hiding_wins_over_a_gpu_that_torch_reports(monkeypatch, hide_cuda):
    from transformers.utils.import_utils import is_torch_cuda_available

    _fake_gpu_machine(monkeypatch)
    is_torch_cuda_available.cache_clear()
    # The simulation is real enough to move the library to CUDA and bf16 ...
    assert resolve_device("auto") == "cuda:0"
    assert resolve_dtype("auto", resolve_device("auto")) == torch.bfloat16
    assert is_torch_cuda_available()  # and transformers keeps that answer (lru_cache)
    # ... and hiding CUDA, as the conftest does before a test that is not marked gpu, undoes it.
    hide_cuda(monkeypatch)
    assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
    assert resolve_device("auto") == "cpu"
    assert resolve_dtype("auto", resolve_device("auto")) == torch.float32
    assert not is_torch_cuda_available()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_a_test_not_marked_gpu_already_runs_with_cuda_hidden():
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""
    assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
    assert torch.cuda.is_available.__name__ == "_no_cuda"  # the hiding, not merely a CPU machine
    assert resolve_device("auto") == "cpu"
    # Programs the test starts (CLI runs, prover workers) inherit the empty device list.
    seen = subprocess.run(
        [sys.executable, "-c", "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert seen == "''"


@pytest.mark.gpu
def test_a_gpu_test_sees_the_real_device():
    assert os.environ.get("CUDA_VISIBLE_DEVICES") != ""
    assert torch.cuda.is_available.__name__ != "_no_cuda"
    assert torch.cuda.is_available() and resolve_device("auto").startswith("cuda")


_FAKE_CUDA_PLUGIN = """
import torch

# This machine "has" one CUDA device, as far as anyone asks torch.
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.is_bf16_supported = lambda *a, **k: True
torch.cuda.init = lambda: None
"""

_INNER_TESTS = """
import os

import pytest
import torch
from transformers.utils.import_utils import is_torch_cuda_available

from lean_dojo_v2.models.loading import resolve_device


@pytest.fixture(scope="module")
def chosen_in_a_module_fixture():
    return resolve_device("auto")


def test_not_marked_gpu(chosen_in_a_module_fixture):
    assert chosen_in_a_module_fixture == "cpu"
    assert torch.cuda.is_available() is False and resolve_device("auto") == "cpu"
    assert not is_torch_cuda_available()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


@pytest.mark.gpu
def test_marked_gpu():
    assert torch.cuda.is_available() is True and resolve_device("auto") == "cuda:0"
    assert os.environ.get("CUDA_VISIBLE_DEVICES") != ""
    assert is_torch_cuda_available()  # not the answer cached while CUDA was hidden


def test_not_marked_gpu_after_a_gpu_test():
    assert torch.cuda.is_available() is False and resolve_device("auto") == "cpu"
    assert not is_torch_cuda_available()
"""


@pytest.mark.slow  # a nested pytest run (9 s); make test-slow runs it
def test_on_a_simulated_gpu_machine_only_gpu_tests_see_cuda(tmp_path):
    # A pytest session with the suite's conftest on a machine whose torch reports a GPU from
    # the start (collection included), as a real GPU machine does.
    (tmp_path / "conftest.py").write_text(
        (Path(__file__).parent / "conftest.py").read_text("utf-8"), "utf-8"
    )
    (tmp_path / "fake_cuda_plugin.py").write_text(_FAKE_CUDA_PLUGIN, "utf-8")
    (tmp_path / "test_inner.py").write_text(_INNER_TESTS, "utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers\nmarkers =\n    gpu: needs CUDA\n    lean: Lean\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the outer test's hiding is not the one under test
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fake_cuda_plugin"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout, proc.stdout[-2000:]
