"""Layer 3 (trainer): what every trainer's ``train()`` returns: a dataclass (``TrainResult``,
``RetrievalResult``, ...) on :class:`DictResult`.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any, Protocol


class DictResult:
    """Mixin for a trainer's result dataclass: ``to_dict()`` (what ``summary.json`` and the CLIs'
    ``--json`` hold) and read access by key (``result["steps"]``), so callers written when a
    trainer returned a plain dict keep working."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    # Any, as a dict's value is to its reader: the fields differ in type by key.
    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: object = None) -> Any:
        return getattr(self, key) if key in self.keys() else default

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)]  # type: ignore[arg-type]


class TrainingResult(Protocol):
    """What :meth:`CurriculumTrainer.train` returns: a dataclass with the run's database id."""

    run_id: int | None

    def to_dict(self) -> dict[str, Any]: ...


__all__ = ["DictResult", "TrainingResult"]
