"""Upstream path ``lean_dojo_v2.lean_agent.database``: re-exports
:class:`lean_dojo_v2.database.DynamicDatabase` (the same class, SQLite-backed; it also reads and
writes upstream's ``dynamic_database.json``). New code should import from
:mod:`lean_dojo_v2.database`."""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {"DynamicDatabase": "lean_dojo_v2.database"}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(globals(), _EXPORTS)
