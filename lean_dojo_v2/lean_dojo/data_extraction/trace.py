"""Upstream path ``lean_dojo_v2.lean_dojo.data_extraction.trace``: tracing a repository.

Re-exports (the same objects): :func:`~lean_dojo_v2.lean_dojo.trace` (``trace(repo,
dst_dir=None, build_deps=False, ...) -> TracedRepo``),
:func:`~lean_dojo_v2.lean_dojo.get_traced_repo_path` and
:func:`~lean_dojo_v2.lean_dojo.is_available_in_cache`.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {
    "trace": "lean_dojo_v2.lean_dojo",
    "get_traced_repo_path": "lean_dojo_v2.lean_dojo",
    "is_available_in_cache": "lean_dojo_v2.lean_dojo",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
)
