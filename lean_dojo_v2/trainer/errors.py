"""Typed errors of the trainers (layer 3). Each message names what is wrong and the valid choices."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import get_close_matches

from ..errors import ConfigError, LeanDojoError


class TrainerError(LeanDojoError):
    """Base of the errors raised by ``lean_dojo_v2.trainer``."""


class UnknownConfigKeyError(ConfigError, KeyError):
    """A config file, ``--set`` override or keyword names a field the config does not have.

    ``key`` is the unknown name, ``valid`` the config's field names, ``source`` where it came from.
    """

    def __init__(
        self, key: str, valid: Sequence[str], *, source: str = "", config: str = ""
    ) -> None:
        self.key = key
        self.valid = list(valid)
        self.source = source
        self.config = config
        where = f" in {source}" if source else ""
        what = f" of {config}" if config else ""
        close = get_close_matches(key, self.valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        self.message = (
            f"unknown config key {key!r}{where}{hint}; valid keys{what}: {', '.join(self.valid)}"
        )
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message

    def __reduce__(self):  # type: ignore[override]
        return (_rebuild_unknown_key, (type(self), self.key, self.valid, self.source, self.config))


def _rebuild_unknown_key(cls, key, valid, source, config):  # noqa: ANN001
    return cls(key, valid, source=source, config=config)


class ConfigValueError(ConfigError, ValueError):
    """A config field got a value of the wrong type or out of its range; the message names the
    field, the value, and what it accepts."""


class EmptyDatasetError(TrainerError, ValueError):
    """The training data yields no example: no theorems, or theorems without traced tactics (term
    proofs), or only ``sorry`` tactics, or every example longer than ``max_seq_len``. The message
    says which and how many were seen."""


class TrainingStateError(TrainerError):
    """An ``output_dir`` holds a run of this library that cannot be resumed as asked (its config or
    data differ). Choose another ``output_dir``, or set ``overwrite_output_dir`` / ``--force``."""
