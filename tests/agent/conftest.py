"""Fixtures of the agent tests: a private RAID_DIR per test, tiny models built once, the bundled
sample, a git repository holding the sample's theorems as ``sorry`` (for write-back)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture(autouse=True)
def raid_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from lean_dojo_v2.config import reset_settings

    raid = tmp_path / "raid"
    monkeypatch.setenv("RAID_DIR", str(raid))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_settings()
    yield raid
    reset_settings()


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_tiny_causal

    return build_tiny_causal(tmp_path_factory.mktemp("tiny") / "causal")


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trainer.test_retrieval_fixtures import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny") / "encoder")


@pytest.fixture(scope="session")
def sample() -> Path:
    from lean_dojo_v2.data import sample_dataset_path

    return sample_dataset_path()
