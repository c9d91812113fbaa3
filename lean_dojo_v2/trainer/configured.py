"""Layer 3 (trainer): how every trainer is built: ``XTrainer(config)``, or
``XTrainer.from_config(config_yaml_path_or_dict)`` (:class:`ConfiguredTrainer`), next to the keyword
constructor upstream LeanDojo-v2 shows for it."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from ..config.loading import config_argument

C = TypeVar("C")
V = TypeVar("V")


class ConfiguredTrainer(Generic[C]):
    """A trainer whose settings are one config dataclass, ``config_class``, held as
    ``self.config``. Its constructor takes that config first (``XTrainer(config)``);
    :meth:`from_config` takes the config, the path of a YAML file of its keys or a dict of them."""

    config_class: ClassVar[type[Any]]
    # The config fields its repr shows.
    repr_fields: ClassVar[tuple[str, ...]] = ("model_name", "output_dir")
    config: C

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self.config, k)!r}" for k in self.repr_fields)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def from_config(
        cls,
        config: C | str | os.PathLike[str] | Mapping[str, object],
        *args: object,
        **kwargs: object,
    ) -> Self:
        """``cls(config, *args, **kwargs)``, ``config`` given as the trainer's config, the path
        of a YAML file of its keys or a dict of them (read as a YAML file is: unknown keys named,
        values checked); anything else is a ``ConfigValueError`` saying how to build one."""
        config = config_argument(cls.config_class, config, who=f"{cls.__name__}.from_config")
        build = cast("Callable[..., Self]", cls)
        return build(config, *args, **kwargs)


class ConfigAttribute(Generic[V]):
    """An attribute upstream LeanDojo-v2's trainers had (``trainer.lr``): read-only, the config
    field of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, trainer: ConfiguredTrainer[Any] | None, owner: type) -> V:
        return cast(V, self if trainer is None else getattr(trainer.config, self.name))

    def __set__(self, trainer: object, value: object) -> None:
        raise AttributeError(f"{self.name} is read from the config: set config.{self.name}")


def changed_arguments(
    init: Callable[..., object], arguments: Mapping[str, object]
) -> dict[str, object]:
    """The ``arguments`` of constructor ``init`` that differ from their defaults: what
    ``XTrainer(config, lr=...)`` changes in the config it is given."""
    params = inspect.signature(init).parameters
    return {k: v for k, v in arguments.items() if v != params[k].default}


__all__ = ["ConfigAttribute", "ConfiguredTrainer", "changed_arguments"]
