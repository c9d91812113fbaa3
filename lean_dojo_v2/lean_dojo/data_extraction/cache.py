"""Upstream path ``lean_dojo_v2.lean_dojo.data_extraction.cache``: what is cached where.

lean-dojo-v2 keeps two caches under the cache directory (``LEAN_DOJO_V2_CACHE_DIR``, default
``~/.cache/lean_dojo_v2``, read when first used): bare git mirrors of remote repositories
(:func:`mirror_path`) and finished traces, keyed by repository, commit and ``build_deps``
(:func:`get_traced_repo_path`, :func:`is_available_in_cache`). ``trace()`` fills and reuses them;
there is no separate cache object and no remote cache download.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {
    "get_traced_repo_path": "lean_dojo_v2.lean_dojo",
    "is_available_in_cache": "lean_dojo_v2.lean_dojo",
    "mirror_path": "lean_dojo_v2.lean_dojo.repo",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "Cache": "trace() caches its results; query with get_traced_repo_path / "
        "is_available_in_cache",
        "cache": "trace() caches its results; query with get_traced_repo_path / "
        "is_available_in_cache",
    },
)
