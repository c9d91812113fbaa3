"""Layer 4 (agent): the checks every public agent method runs on its arguments first.

An agent is called from scripts and notebooks, so a wrong type (``limit="2"``, a path given as a
number, a misspelt prover keyword) must stop the call with one :class:`AgentConfigError` naming
the argument, what was given and what to pass, before a database, an export or a working copy is
touched. Each function returns the value in the form the agent keeps (a ``Path``, an ``int``...).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, overload

from .errors import AgentConfigError

PATH_FORMS = "a path (str or os.PathLike)"


def _got(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


@overload
def path_argument(
    name: str, value: object, *, optional: Literal[False] = ..., example: str = ""
) -> Path: ...
@overload
def path_argument(
    name: str, value: object, *, optional: bool, example: str = ""
) -> Path | None: ...
def path_argument(
    name: str, value: object, *, optional: bool = False, example: str = ""
) -> Path | None:
    """``value`` as a ``Path`` (``~`` expanded); None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        allowed = f"{PATH_FORMS}{' or None' if optional else ''}"
        hint = f", e.g. {example}" if example else ""
        raise AgentConfigError(
            f"{name} must be {allowed}, got {_got(value)}: pass {name}=PATH{hint}"
        )
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise AgentConfigError(
            f"{name} is an empty path: pass the path of {example or 'a file or directory'}"
        )
    return Path(text).expanduser()


@overload
def text_argument(
    name: str, value: object, *, optional: Literal[False] = ..., example: str = ""
) -> str: ...
@overload
def text_argument(name: str, value: object, *, optional: bool, example: str = "") -> str | None: ...
def text_argument(
    name: str, value: object, *, optional: bool = False, example: str = ""
) -> str | None:
    """A non-empty string (None only when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        allowed = f"non-empty text{' or None' if optional else ''}"
        hint = f", e.g. {name}={example}" if example else ""
        raise AgentConfigError(f"{name} must be {allowed}, got {_got(value)}{hint}")
    return value


@overload
def whole_number(
    name: str, value: object, *, minimum: int = 1, optional: Literal[False] = ...
) -> int: ...
@overload
def whole_number(name: str, value: object, *, minimum: int = 1, optional: bool) -> int | None: ...
def whole_number(
    name: str, value: object, *, minimum: int = 1, optional: bool = False
) -> int | None:
    """A whole number ``>= minimum`` (``True``/``False`` and ``1.0`` are not); None only when
    ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        none = " or None" if optional else ""
        raise AgentConfigError(
            f"{name} must be a whole number >= {minimum}{none}, got {_got(value)}: pass e.g. "
            f"{name}={max(minimum, 1)}"
        )
    return value


def flag(name: str, value: object) -> bool:
    """``True`` or ``False`` itself: a string such as ``"no"`` would be true."""
    if not isinstance(value, bool):
        raise AgentConfigError(f"{name} must be True or False, got {_got(value)}")
    return value


@overload
def one_of(
    name: str, value: object, choices: Iterable[str], *, optional: Literal[False] = ...
) -> str: ...
@overload
def one_of(name: str, value: object, choices: Iterable[str], *, optional: bool) -> str | None: ...
def one_of(
    name: str, value: object, choices: Iterable[str], *, optional: bool = False
) -> str | None:
    """One of ``choices`` (None only when ``optional``)."""
    options = tuple(choices)
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in options:
        none = " or None" if optional else ""
        raise AgentConfigError(
            f"{name} must be one of {', '.join(options)}{none}, got {_got(value)}"
        )
    return value


def keywords(
    name: str,
    value: object,
    accepted_by: Iterable[Callable[..., object]],
    *,
    set_by_agent: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``value`` (None or a mapping of keyword arguments) as a dict, every key one that a
    callable of ``accepted_by`` takes by name (a chain: a prover and the generator its
    ``**kwargs`` go to). ``set_by_agent`` maps the keys the agent passes itself to what to do
    instead (e.g. ``"pass device= to the agent"``)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AgentConfigError(
            f"{name} must be a dict of keyword arguments or None, got {_got(value)}: pass e.g. "
            f"{name}={{'temperature': 0.7}}"
        )
    own = dict(set_by_agent or {})
    valid: list[str] = []
    for target in accepted_by:
        for p in inspect.signature(target).parameters.values():
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
                if p.name not in own and p.name not in valid:
                    valid.append(p.name)
    for key in value:
        if not isinstance(key, str):
            raise AgentConfigError(f"{name} keys must be text, got {_got(key)}")
        if key in own:
            raise AgentConfigError(f"{name} must not set {key!r}: the agent sets it; {own[key]}")
        if key not in valid:
            from difflib import get_close_matches

            close = get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise AgentConfigError(
                f"{name} has an unknown key {key!r}{hint}; valid keys: {', '.join(sorted(valid))}"
            )
    return dict(value)


__all__ = ["flag", "keywords", "one_of", "path_argument", "text_argument", "whole_number"]
