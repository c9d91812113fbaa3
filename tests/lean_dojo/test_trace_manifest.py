"""A trace manifest that is not what ``trace()`` writes is a typed error that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_dojo_v2.lean_dojo.errors import TraceFormatError
from lean_dojo_v2.lean_dojo.traced_repo import MANIFEST, TRACE_DIR, TracedRepo


def test_a_manifest_that_is_not_an_object_is_a_trace_format_error(tmp_path: Path) -> None:
    manifest = tmp_path / TRACE_DIR / MANIFEST
    manifest.parent.mkdir(parents=True)
    manifest.write_text("[]", encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"not a trace manifest.*trace\(\)"):
        TracedRepo.load(tmp_path)


def test_a_missing_manifest_says_to_trace_first(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="trace it first"):
        TracedRepo.load(tmp_path)
