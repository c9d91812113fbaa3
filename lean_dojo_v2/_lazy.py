"""Lazy re-exports: package ``__init__`` modules and the upstream LeanDojo-v2 import paths.

A compatibility module lists, for each public name, where the one real implementation lives; the
object is imported on first access (PEP 562 module ``__getattr__``) and is the very same object,
so importing the compatibility module costs nothing and has no side effects. Upstream names with
no equivalent here raise ``AttributeError`` with a hint saying what to use instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def no_attribute(module_name: str, name: str, hints: Mapping[str, str]) -> AttributeError:
    """The error for a missing attribute; for an upstream name we leave out, it says what to use."""
    message = f"module {module_name!r} has no attribute {name!r}"
    hint = hints.get(name)
    if hint is not None:
        message += f" (upstream LeanDojo-v2 name, not provided by lean-dojo-v2: {hint})"
    return AttributeError(message)


def reexport(
    namespace: dict[str, Any],
    exports: Mapping[str, str],
    *,
    submodules: Iterable[str] = (),
    not_provided: Mapping[str, str] | None = None,
    missing: Callable[[str, str], Exception] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for the module whose ``globals()`` is ``namespace``.

    - ``exports``: public name → ``"package.module:attribute"`` of the real object (the attribute
      may be left out when it has the same name; the module may be relative, e.g. ``".errors"``).
    - ``submodules``: names of this package's own submodules, imported on attribute access.
    - ``not_provided``: upstream names that are deliberately absent → what to use instead.
    - ``missing``: ``(module name, name) -> exception`` for any other name instead of
      :func:`no_attribute`'s (a package with its own error for names it leaves out).
    """
    module_name = namespace["__name__"]
    subs = frozenset(submodules)
    hints = dict(not_provided or {})

    def __getattr__(name: str) -> object:
        target = exports.get(name)
        if target is not None:
            module, _, attribute = target.partition(":")
            value = getattr(importlib.import_module(module, module_name), attribute or name)
        elif name in subs:
            value = importlib.import_module(f"{module_name}.{name}")
        elif missing is not None:
            raise missing(module_name, name)
        else:
            raise no_attribute(module_name, name, hints)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | subs)

    return __getattr__, __dir__
