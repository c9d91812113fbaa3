"""Upstream path ``lean_dojo_v2.lean_dojo.data_extraction.traced_data``: traced files and repos.

Re-exports (the same objects): :class:`~lean_dojo_v2.lean_dojo.TracedRepo`,
:class:`~lean_dojo_v2.lean_dojo.TracedFile` and :class:`~lean_dojo_v2.data.TracedTactic` (the
traced tactic records a traced file yields). Theorems come out of ``TracedRepo.theorems()`` as
:class:`lean_dojo_v2.data.Theorem` records; there is no separate ``TracedTheorem`` class.
"""

from __future__ import annotations

from lean_dojo_v2._lazy import reexport

_EXPORTS = {
    "TracedRepo": "lean_dojo_v2.lean_dojo",
    "TracedFile": "lean_dojo_v2.lean_dojo",
    "TracedTactic": "lean_dojo_v2.data",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    not_provided={
        "TracedTheorem": "TracedRepo.theorems() yields lean_dojo_v2.data.Theorem records",
    },
)
