"""Layer 3 (trainer): the config system's old home, kept so that its import path keeps working.

The config system (documented dataclasses, YAML files, ``--set`` overrides, field docs) is shared
by the trainers, ``prove`` and ``serve``, so it lives in layer 0: :mod:`lean_dojo_v2.config.loading`.
Every name below is the very same object as there.
"""

from __future__ import annotations

from ..config.loading import (
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
from ..errors import ConfigValueError, UnknownConfigKeyError

__all__ = [
    "ConfigValueError",
    "UnknownConfigKeyError",
    "check_keys",
    "coerce_value",
    "config_fields",
    "config_from_dict",
    "config_to_dict",
    "describe_config",
    "dump_config",
    "field_docs",
    "field_types",
    "load_config",
    "parse_overrides",
    "read_config_file",
    "replace_config",
]
