"""Layer 0 (config): settings read from the environment, and the config system of every command.

Settings are read from the environment when first used (never at import): ``get_settings()``
builds a :class:`Settings` on first call and caches it; ``reset_settings()`` forgets the cache
(tests and notebooks that change variables use it). Nothing here creates directories: callers ask
for a path and create it when they write. They live in this ``__init__`` itself, not in a
submodule, because the cache is this module's global ``_settings`` (callers and tests read it as
``lean_dojo_v2.config._settings``) and importing the settings must load nothing else.

The config system, for the trainers, ``prove`` and ``serve`` alike, is in two submodules, loaded
only when used:

- :mod:`~lean_dojo_v2.config.loading`: documented config dataclasses, YAML files, ``--set``
  overrides, field docs read from TRL-style docstrings (``load_config``, ``describe_config``,
  ``field_docs``, ...; also importable from here);
- :mod:`~lean_dojo_v2.config.cli`: the argparse side (``--config FILE``, ``--set key=value``,
  ``--help-config``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import reexport
from ..errors import ConfigError

if TYPE_CHECKING:
    from .loading import (
        check_keys,
        coerce_value,
        config_fields,
        config_from_dict,
        config_to_dict,
        describe_config,
        dump_config,
        field_docs,
        field_types,
        load_config,
        parse_overrides,
        read_config_file,
        replace_config,
    )

_ENV_PREFIX = "LEAN_DOJO_V2_"


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


@dataclass(frozen=True)
class Settings:
    """Where the library keeps its files, and optional credentials.

    - ``raid_dir``: working directory for data, checkpoints and traces (``RAID_DIR``, default ``./raid``,
      resolved against the current directory when the settings are first read).
    - ``cache_dir``: traced repositories and converted models (``LEAN_DOJO_V2_CACHE_DIR``, default
      ``$XDG_CACHE_HOME/lean_dojo_v2`` or ``~/.cache/lean_dojo_v2``).
    - ``github_token`` / ``hf_token``: optional; only used for metadata or private models, never required.
    """

    raid_dir: Path
    cache_dir: Path
    github_token: str | None = field(default=None, repr=False)
    hf_token: str | None = field(default=None, repr=False)
    num_workers: int = 1

    @property
    def data_dir(self) -> Path:
        return self.raid_dir / "data"

    @property
    def checkpoint_dir(self) -> Path:
        return self.raid_dir / "checkpoints"

    @property
    def models_dir(self) -> Path:
        return self.raid_dir / "models"

    @classmethod
    def from_env(cls) -> Settings:
        raid = _env("RAID_DIR") or _env(_ENV_PREFIX + "RAID_DIR") or "raid"
        xdg = _env("XDG_CACHE_HOME")
        default_cache = (Path(xdg) if xdg else Path.home() / ".cache") / "lean_dojo_v2"
        cache = _env(_ENV_PREFIX + "CACHE_DIR")
        workers_text = _env(_ENV_PREFIX + "NUM_WORKERS")
        try:
            workers = int(workers_text) if workers_text else max(1, (os.cpu_count() or 1))
        except ValueError as exc:
            raise ConfigError(
                f"{_ENV_PREFIX}NUM_WORKERS must be a whole number, got {workers_text!r}"
            ) from exc
        if workers < 1:
            raise ConfigError(f"{_ENV_PREFIX}NUM_WORKERS must be at least 1, got {workers}")
        return cls(
            raid_dir=Path(raid).expanduser().resolve(),
            cache_dir=Path(cache).expanduser().resolve() if cache else default_cache,
            github_token=_env("GITHUB_ACCESS_TOKEN") or _env("GITHUB_TOKEN"),
            hf_token=_env("HF_TOKEN") or _env("HUGGING_FACE_HUB_TOKEN"),
            num_workers=workers,
        )


_settings: Settings | None = None


def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    global _settings
    if _settings is None:
        _settings = Settings.from_env()
    return _settings


def reset_settings() -> None:
    """Forget cached settings so the next :func:`get_settings` re-reads the environment."""
    global _settings
    _settings = None


# The config system, imported on first use (``from lean_dojo_v2.config import load_config``).
_EXPORTS = {
    "check_keys": ".loading",
    "coerce_value": ".loading",
    "config_fields": ".loading",
    "config_from_dict": ".loading",
    "config_to_dict": ".loading",
    "describe_config": ".loading",
    "dump_config": ".loading",
    "field_docs": ".loading",
    "field_types": ".loading",
    "load_config": ".loading",
    "parse_overrides": ".loading",
    "read_config_file": ".loading",
    "replace_config": ".loading",
}
__all__ = [
    "Settings",
    "check_keys",
    "coerce_value",
    "config_fields",
    "config_from_dict",
    "config_to_dict",
    "describe_config",
    "dump_config",
    "field_docs",
    "field_types",
    "get_settings",
    "load_config",
    "parse_overrides",
    "read_config_file",
    "replace_config",
    "reset_settings",
]

__getattr__, __dir__ = reexport(globals(), _EXPORTS, submodules=("cli", "loading"))
