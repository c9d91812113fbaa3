"""Constants under the upstream path ``lean_dojo_v2.utils.constants``, read when used.

Upstream computed these at import (and raised there without ``GITHUB_ACCESS_TOKEN``). Here each
value is looked up on access from :func:`lean_dojo_v2.config.get_settings`, so importing this
module reads no environment variable, raises nothing and creates nothing, and a value follows
``reset_settings()``:

===========================  ================================================================
``RAID_DIR``                 ``str`` of ``Settings.raid_dir`` (``RAID_DIR``, default ``./raid``)
``DATA_DIR``                 ``"data"``: ``Settings.data_dir`` relative to ``RAID_DIR`` (join
                             them, as upstream did: ``os.path.join(RAID_DIR, DATA_DIR)``)
``CHECKPOINT_DIR``           ``"checkpoints"``: ``Settings.checkpoint_dir`` relative to ``RAID_DIR``
``CACHE_DIR``                ``Settings.cache_dir`` (a ``Path``; ``LEAN_DOJO_V2_CACHE_DIR``)
``GITHUB_ACCESS_TOKEN``      ``Settings.github_token``; ``None`` when unset (it is optional)
``NUM_PROCS``, ``NUM_WORKERS``  ``Settings.num_workers`` (``LEAN_DOJO_V2_NUM_WORKERS``)
``MARK_START_SYMBOL``        ``"<a>"`` (:data:`lean_dojo_v2.data.marks.MARK_START`)
``MARK_END_SYMBOL``          ``"</a>"`` (:data:`lean_dojo_v2.data.marks.MARK_END`)
``remove_marks``             :func:`lean_dojo_v2.data.remove_marks`
===========================  ================================================================

Nothing is cached here: every access reads the current settings.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import no_attribute
from ..config import Settings, get_settings

if TYPE_CHECKING:  # what each name reads as (see the table above)
    RAID_DIR: str
    DATA_DIR: str
    CHECKPOINT_DIR: str
    CACHE_DIR: Path
    GITHUB_ACCESS_TOKEN: str | None
    NUM_PROCS: int
    NUM_WORKERS: int
    MARK_START_SYMBOL: str
    MARK_END_SYMBOL: str
    remove_marks: Callable[[str], str]


def _settings() -> Settings:
    return get_settings()


def _under_raid(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it (upstream's
    ``DATA_DIR = "data"`` form), else the absolute path (``os.path.join`` keeps it either way)."""
    raid = _settings().raid_dir
    try:
        return path.relative_to(raid).as_posix()
    except ValueError:
        return os.fspath(path)


def _marks(name: str) -> object:
    return getattr(importlib.import_module("lean_dojo_v2.data.marks"), name)


_VALUES: dict[str, Callable[[], object]] = {
    "RAID_DIR": lambda: os.fspath(_settings().raid_dir),
    "DATA_DIR": lambda: _under_raid(_settings().data_dir),
    "CHECKPOINT_DIR": lambda: _under_raid(_settings().checkpoint_dir),
    "CACHE_DIR": lambda: _settings().cache_dir,
    "GITHUB_ACCESS_TOKEN": lambda: _settings().github_token,
    "NUM_PROCS": lambda: _settings().num_workers,
    "NUM_WORKERS": lambda: _settings().num_workers,
    "MARK_START_SYMBOL": lambda: _marks("MARK_START"),
    "MARK_END_SYMBOL": lambda: _marks("MARK_END"),
    "remove_marks": lambda: _marks("remove_marks"),
}
__all__ = sorted(_VALUES)

_NOT_PROVIDED = {
    "TMP_DIR": "use tempfile (it honours TMPDIR)",
    "REMOTE_CACHE_URL": "lean-dojo-v2 has no remote trace cache",
    "DISABLE_REMOTE_CACHE": "lean-dojo-v2 has no remote trace cache",
    "DB_FILE_NAME": "the database is SQLite: lean_dojo_v2.database.DEFAULT_DB_NAME",
    "__version__": "lean_dojo_v2.__version__ is the package version",
}


def __getattr__(name: str) -> object:
    value = _VALUES.get(name)
    if value is not None:
        return value()
    raise no_attribute(__name__, name, _NOT_PROVIDED)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_VALUES))
