"""Fixtures of the models tests: tiny models built once per session (``tests/tiny_models.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # tiny_models lives in tests/
    sys.path.insert(0, str(TESTS_DIR))

from tiny_models import build_tiny_causal, build_tiny_seq2seq  # noqa: E402


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal"))


@pytest.fixture(scope="session")
def tiny_seq2seq_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_seq2seq(tmp_path_factory.mktemp("tiny_seq2seq"))


@pytest.fixture(scope="session")
def tiny_causal(tiny_causal_dir: Path):
    from lean_dojo_v2.models import load_model

    return load_model(str(tiny_causal_dir), device="cpu")


@pytest.fixture(scope="session")
def tiny_seq2seq(tiny_seq2seq_dir: Path):
    from lean_dojo_v2.models import load_model

    return load_model(str(tiny_seq2seq_dir), device="cpu")
