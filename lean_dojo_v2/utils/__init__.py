"""Shared helpers under their upstream LeanDojo-v2 import paths: git (:mod:`.git`), the file
system (:mod:`.filesystem`) and constants (:mod:`.constants`, read from the settings when used).

Every name is a lazy re-export of the one real implementation elsewhere in the package, so
``import lean_dojo_v2.utils`` imports nothing else, reads no environment variable and creates no
file. ``remove_marks`` is :func:`lean_dojo_v2.data.remove_marks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import reexport

if TYPE_CHECKING:
    from ..data.marks import remove_marks
    from . import constants, filesystem, git

_TRAINING = "training helpers are not part of lean-dojo-v2 yet"

_EXPORTS = {
    "remove_marks": "..data.marks",
}
__all__ = ["constants", "filesystem", "git", "remove_marks"]

__getattr__, __dir__ = reexport(
    globals(),
    _EXPORTS,
    submodules=("constants", "filesystem", "git"),
    not_provided={
        "zip_strict": "use zip(..., strict=True)",
        "load_checkpoint": _TRAINING,
        "cpu_checkpointing_enabled": _TRAINING,
    },
)
