"""Shared test set-up: offline hubs, the bundled real data, and skips for Lean/GPU tests (the only
tests that may skip)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# Nothing in the test suite may wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The real Lean data the tests read: a trimmed, byte-for-byte copy of ``shared/data`` with the same
# layout (tests/data/real/README.md; regenerate with scripts/copy_real_test_data.py).
REAL_DATA = Path(__file__).resolve().parent / "data" / "real"


def full_shared_data_dir() -> Path | None:
    """The complete ``../shared/data`` beside the checkout (or ``LEAN_DOJO_V2_SHARED_DATA``), if any.

    Optional extra coverage only: a test may read more there, but the tests collected, run and
    passed must be the same without it (``LEAN_DOJO_V2_SHARED_DATA=/nonexistent`` simulates that).
    """
    env = os.environ.get("LEAN_DOJO_V2_SHARED_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The bundled real data (``tests/data/real``); paths under it are those under ``shared/data``."""
    return REAL_DATA


@pytest.fixture(scope="session")
def full_shared_data() -> Path | None:
    """``../shared/data`` when it is there (see :func:`full_shared_data_dir`), else None."""
    return full_shared_data_dir()


@pytest.fixture(scope="session")
def fullest_data(shared_data: Path, full_shared_data: Path | None) -> Callable[[str], Path]:
    """``fullest_data("a/b")``: ``a/b`` under ``../shared/data`` where that exists, else the bundled
    copy. For tests that loop over every file or record they find (never parametrise over it)."""

    def pick(relative: str) -> Path:
        if full_shared_data is not None and (full_shared_data / relative).exists():
            return full_shared_data / relative
        return shared_data / relative

    return pick


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
