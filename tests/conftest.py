"""Shared test set-up: offline hubs, the real data folder, and skips for Lean/GPU tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Nothing in the test suite may wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``../shared/data`` beside the checkout (or ``LEAN_DOJO_V2_SHARED_DATA``)."""
    env = os.environ.get("LEAN_DOJO_V2_SHARED_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("real Lean data (../shared/data) not found")
    return path


@pytest.fixture(scope="session")
def b4_records_path(shared_data: Path) -> Path:
    return shared_data / "leandojo_b4" / "random_test_records_1_100.json"


def _has_lean() -> bool:
    return shutil.which("lean") is not None and shutil.which("lake") is not None


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lean = _has_lean()
    skip_lean = pytest.mark.skip(reason="no Lean toolchain (lean and lake) on PATH; install elan")
    skip_gpu = pytest.mark.skip(reason="no CUDA device")
    cuda: bool | None = None
    for item in items:
        if "lean" in item.keywords and not lean:
            item.add_marker(skip_lean)
        if "gpu" in item.keywords:
            if cuda is None:
                cuda = _has_cuda()
            if not cuda:
                item.add_marker(skip_gpu)
