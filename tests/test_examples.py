"""The examples run as users would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_data_tour_runs(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "data_tour.py"),
            str(ROOT / "lean_dojo_v2" / "resources" / "leandojo_b4_sample"),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "'theorems': 100" in proc.stdout
    assert (tmp_path / "out" / "random" / "train.json").is_file()


def test_trace_example_explains_bad_input(tmp_path):
    """Without Lean the example can still be run on bad input: it says what is wrong."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trace_repo.py"), str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LEAN_DOJO_V2_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 1, proc.stderr
    assert "error:" in proc.stdout and "missing" in proc.stdout


# -- the agent examples --------------------------------------------------------------------------

import json  # noqa: E402
import socket  # noqa: E402

import pytest  # noqa: E402

TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def _run_example(name: str, args: list[str], tmp_path: Path, **env: str):
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "RAID_DIR": str(tmp_path / "raid"), "HF_HUB_OFFLINE": "1", **env},
    )


def test_external_api_example_proves_whole_proofs_through_the_endpoint(tmp_path):
    from prover._oracle_server import oracle_answer
    from prover.fake_openai import FakeOpenAI

    model = "deepseek-ai/DeepSeek-Prover-V2-671B:novita"
    with FakeOpenAI(completions=oracle_answer(), models=(model,)) as server:
        proc = _run_example("external_api.py", [], tmp_path, OPENAI_BASE_URL=server.base_url)
        assert server.requests and server.requests[0]["model"] == model
    assert proc.returncode == 0, proc.stderr
    assert "with whole proofs; backend replay" in proc.stdout
    assert "backend: replay" in proc.stderr  # the one-line notice


def test_external_api_example_without_an_endpoint_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _run_example(
        "external_api.py", [], tmp_path, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1"
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and lines[-1].startswith("lean-dojo-v2: error:")
    assert f"127.0.0.1:{port}" in lines[-1]


def test_external_agent_example_says_nothing_to_train_and_proves(tmp_path):
    from prover._oracle_server import oracle_answer
    from prover.fake_openai import FakeOpenAI

    with FakeOpenAI(completions=oracle_answer()) as server:
        proc = _run_example("external_agent.py", ["--base-url", server.base_url], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nothing to train" in proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["backend"] == "replay" and out["attempted"] == 2 and out["proved"] >= 1


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from tiny_models import build_tiny_causal
    from trainer.test_retrieval_fixtures import build_tiny_encoder

    root = tmp_path_factory.mktemp("tiny")
    return build_tiny_causal(root / "causal"), build_tiny_encoder(root / "encoder")


@pytest.mark.slow  # a subprocess that loads TRL and trains: about a minute on 2 cores
def test_lora_example_trains_and_proves(tmp_path, tiny_models):
    causal, _ = tiny_models
    proc = _run_example("lora.py", ["--model", str(causal), "--max-steps", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "backend replay" in proc.stdout and (tmp_path / "outputs-lora").is_dir()


@pytest.mark.slow  # Lightning, two passes, evaluations and two searches in a subprocess
def test_lean_agent_example_reports_forgetting_and_proves(tmp_path, tiny_models):
    causal, encoder = tiny_models
    args = ["--encoder", str(encoder), "--generator", str(causal), "--max-steps", "1"]
    proc = _run_example("lean_agent.py", args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "forgetting" in proc.stdout and "backend replay" in proc.stdout
