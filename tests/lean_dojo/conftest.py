"""Fixtures for the tracing tests: a Lean project made of real data, its extractor output, and an
isolated cache directory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lean_dojo_v2.config import reset_settings

sys.path.insert(0, str(Path(__file__).parent))

import fixture_project  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own cache directory (git mirrors, traces)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(cache))
    reset_settings()
    yield cache
    reset_settings()


@pytest.fixture(scope="session")
def project(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> fixture_project.FixtureProject:
    """The fixture project (a git repository with one commit) and its extractor outputs."""
    base = tmp_path_factory.mktemp("fixture")
    return fixture_project.build(shared_data, base / "repo", base / "toolchain")
