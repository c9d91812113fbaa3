"""Fixtures of the trainer tests: the tiny random causal LM (``tests/tiny_models.py``), built once
per session, and short real datasets cut from the bundled sample."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # tiny_models lives in tests/
    sys.path.insert(0, str(TESTS_DIR))

from tiny_models import build_tiny_causal, tiny_tokenizer  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal_trainer"))


@pytest.fixture(scope="session")
def tiny_tok():
    return tiny_tokenizer()


@pytest.fixture(scope="session")
def sample_path() -> Path:
    from lean_dojo_v2.data import sample_dataset_path

    return sample_dataset_path()


def fast_settings(**extra):
    """Config values for a quick, deterministic tiny-model run on CPU."""
    values = dict(
        batch_size=2,
        lr=5e-3,
        max_examples=8,
        max_seq_len=1024,
        use_cpu=True,
        progress_bar=False,
        loss_curve=False,
        report_to=["none"],
        save_steps=1000,
    )
    values.update(extra)
    return values
