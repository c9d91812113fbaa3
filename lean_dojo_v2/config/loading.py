"""Layer 0 (config): documented config dataclasses, YAML files, ``--set`` overrides, field docs.

The config system of every trainer and command (``train ...``, ``prove``, ``serve``).

A config is a dataclass whose docstring documents every field, grouped by concern, in the
style of TRL's configs::

    Parameters:
        > Parameters that control the model

        model_name (`str` or `None`, *optional*, defaults to `None`):
            What to train ...

:func:`load_config` builds one from a YAML file (a mapping of field names to values), then
``key=value`` overrides (the CLI's ``--set``), then keyword values, in that order. Every value is
checked against the field's type (``bool``, ``int``, ``float``, ``str``, ``X | None``,
``Literal[...]``, ``list[...]``, ``dict[str, ...]``); a float must be finite (``nan`` and ``inf``
are refused up front: ``lr=inf`` would otherwise train NaN weights), unless its field's metadata
says ``{"allow_inf": True}`` (then ``±inf`` is accepted, ``nan`` still not). An unknown key raises
:class:`~lean_dojo_v2.errors.UnknownConfigKeyError` naming the valid ones, a bad value
:class:`~lean_dojo_v2.errors.ConfigValueError` naming the field and what it accepts.

**Inherited fields.** A config may extend another (``SFTConfig`` and ``GRPOConfig`` extend
``CausalLMConfig``): :func:`field_docs` reads the docstrings up the class hierarchy, so a field is
documented once, in the nearest class that documents it; a subclass documents its own fields and
those whose meaning or default it changes. Its group headers (``> Parameters that control ...``)
say where its new groups go, so a header with no fields under it is a place mark.

**Field metadata.** :func:`config_field` declares a field that does not change what is trained
(``fingerprint=False``: where outputs go, how often to log; a run may resume with another value)
or that accepts ``±inf`` (``allow_inf=True``).

**Aliases.** A config class may map keys of another design's files onto its own fields with a
class attribute ``config_aliases: ClassVar[dict[str, str | Callable[[Any], dict[str, Any]]]]``
(an old key → the field it is now, or → a function of the old value giving field values):
:func:`load_config` rewrites such keys of a YAML file, of overrides (a mapping or ``--set``)
and of keyword values, logs one note per key of a file or override saying what it became, and
lets a field given under its own name win over an alias. ``GRPOConfig`` uses it for the keys of upstream LeanDojo-v2's GRPO design
(``base_model``, ``learning_rate``, ...), ``PremiseSelectorConfig`` for LeanHammer's names.

Only the standard library and PyYAML are used here (no torch).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, cast, overload

from ..errors import ConfigValueError, UnknownConfigKeyError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C")
D = TypeVar("D", bound="DataclassInstance")
T = TypeVar("T")
log = logging.getLogger(__name__)

_NONE_WORDS = {"none", "null", "~", ""}
_TRUE_WORDS = {"true", "yes", "on", "1"}
_FALSE_WORDS = {"false", "no", "off", "0"}
# A field entry in a TRL-style docstring: ``    name (`type`, ...):``
_DOC_FIELD = re.compile(r"^(?P<indent>\s+)(?P<name>[A-Za-z_]\w*) \((?P<type>.*)\):\s*$")
_NOT_FINITE = "a finite number (nan and inf are refused)"
_DOC_GROUP = re.compile(r"^\s*>\s*(?P<title>\S.*?)\s*$")


def config_fields(cls: type) -> dict[str, dataclasses.Field]:
    """The init fields of config dataclass ``cls``, by name, in declaration order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def field_types(cls: type) -> dict[str, Any]:
    """The resolved type hints of ``cls``'s fields (``from __future__ import annotations`` safe)."""
    hints = typing.get_type_hints(cls)
    return {name: hints[name] for name in config_fields(cls)}


def _own_field_docs(doc: str) -> tuple[list[str], dict[str, tuple[str, str, str]]]:
    """The group headers of one docstring, in order (a header without fields too), and
    ``{field: (group title, type text, description)}`` of the fields it documents."""
    groups: list[str] = []
    out: dict[str, tuple[str, str, str]] = {}
    group = ""
    current: str | None = None
    indent = 0
    for line in doc.splitlines():
        g = _DOC_GROUP.match(line)
        m = _DOC_FIELD.match(line)
        if g and not m:
            group, current = g["title"], None
            groups.append(group)
            continue
        if m:
            current, indent = m["name"], len(m["indent"])
            out[current] = (group, m["type"], "")
            continue
        if current is not None:
            stripped = line.strip()
            if stripped and len(line) - len(line.lstrip()) <= indent:
                current = None
                continue
            g_, t, text = out[current]
            out[current] = (g_, t, f"{text} {stripped}".strip())
    return groups, out


def field_docs(cls: type) -> dict[str, tuple[str, str, str]]:
    """``{field: (group title, type text, description)}`` read from the docstrings of ``cls`` and
    of the config classes it extends, grouped in the order ``--help-config`` lists them.

    A field's entry is that of the nearest class that documents it. Groups keep the base's order;
    a group a subclass adds goes after the group its docstring names before it (first when it
    names none), and a subclass's new fields follow the inherited ones of their group. Entries
    inherited for a field that ``cls`` does not take (an ``init=False`` override) are left out.
    """
    order: list[str] = []  # group titles
    members: dict[str, list[str]] = {}
    entries: dict[str, tuple[str, str, str]] = {}
    own: dict[str, tuple[str, str, str]] = {}
    for klass in reversed(cls.__mro__):
        doc = klass.__dict__.get("__doc__")
        groups, own = _own_field_docs(doc if isinstance(doc, str) else "")
        previous: str | None = None
        for group in groups:
            if group not in order:
                order.insert(order.index(previous) + 1 if previous is not None else 0, group)
            previous = group
        for name, entry in own.items():
            old = entries.get(name)
            if old is not None and old[0] != entry[0]:
                members[old[0]].remove(name)
            if old is None or old[0] != entry[0]:
                members.setdefault(entry[0], []).append(name)
            if entry[0] not in order:
                order.append(entry[0])
            entries[name] = entry
    # cls's own docstring is kept whole: a field it documents but lacks is an error to see.
    taken = set(config_fields(cls)) if dataclasses.is_dataclass(cls) else set(entries)
    return {
        name: entries[name]
        for group in order
        for name in members.get(group, [])
        if name in taken or name in own
    }


def describe_config(cls: type) -> str:
    """A plain-text listing of every field of ``cls``: group, name, type, default and description
    (what ``--help-config`` prints, e.g. ``lean-dojo-v2 train sft --help-config``)."""
    docs = field_docs(cls)
    fields = config_fields(cls)
    # In the docstring's order, each group once: a config may declare its fields in another
    # order (dataclass field order is positional API, and inherited fields come first).
    order = [n for n in docs if n in fields] + [n for n in fields if n not in docs]
    groups: dict[str, list[str]] = {}
    for name in order:
        f = fields[name]
        group, _type_text, text = docs.get(name, ("Other parameters", "", ""))
        entry = groups.setdefault(group, [])
        entry.append(f"  {name} = {json.dumps(_default_of(f), default=str)}")
        if text:
            entry.append(f"      {text}")
    blocks = [f"{group}:\n" + "\n".join(entry) for group, entry in groups.items()]
    aliases = getattr(cls, "config_aliases", None) or {}
    if aliases:
        lines = [f"  {old}: {_alias_target(target)}" for old, target in aliases.items()]
        blocks.append("Other key names a config file may use:\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def _alias_target(target: str | Callable[[Any], dict[str, Any]]) -> str:
    if isinstance(target, str):
        return target
    doc = (target.__doc__ or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else "see the docstring"


def _default_of(f: dataclasses.Field[object]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _type_name(tp: object) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def _bad(key: str, value: object, tp: object, source: str, why: str = "") -> ConfigValueError:
    where = f" (from {source})" if source else ""
    extra = f": {why}" if why else ""
    return ConfigValueError(
        f"config key {key!r}{where} expects {_type_name(tp)}, got {value!r}{extra}"
    )


def allows_inf(f: dataclasses.Field) -> bool:
    """Whether config field ``f`` accepts ``±inf`` (``field(metadata={"allow_inf": True})``)."""
    return bool(f.metadata.get("allow_inf", False))


def check_finite_floats(config: object) -> None:
    """Raise :class:`ConfigValueError` for the first float field of ``config`` (also a float in a
    list or a mapping field) that is ``nan`` or ``±inf`` (``±inf`` passes where the field
    :func:`allows_inf`). For ``__post_init__``: a config built in Python, not through
    :func:`load_config`, gets the same check."""
    for name, f in config_fields(type(config)).items():
        value = getattr(config, name, None)
        if isinstance(value, Mapping):
            items = list(value.values())
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            items = [value]
        for item in items:
            if not isinstance(item, float) or math.isfinite(item):
                continue
            if allows_inf(f) and math.isinf(item):
                continue
            raise ConfigValueError(
                f"config key {name!r} must be a finite number (nan and inf are refused), "
                f"got {value!r}"
            )


def require(config: object, ok: bool, key: str, what: str) -> None:
    """Raise the one-line :class:`ConfigValueError` of field ``key`` of ``config`` unless
    ``ok`` (a config's ``__post_init__`` checks: ``require(self, self.lr > 0, "lr",
    "positive")``)."""
    if not ok:
        raise ConfigValueError(f"config key {key!r} must be {what}, got {getattr(config, key)!r}")


def require_at_least(config: object, low: int, *keys: str, or_none: bool = False) -> None:
    """:func:`require` that each field ``keys`` is at least ``low`` (``or_none``: or None)."""
    what = ("None or " if or_none else "") + ("0 or more" if low == 0 else f"at least {low}")
    for key in keys:
        value = getattr(config, key)
        require(config, (or_none and value is None) or value >= low, key, what)


def require_positive(config: object, *keys: str) -> None:
    """:func:`require` that each field ``keys`` is above 0."""
    for key in keys:
        require(config, getattr(config, key) > 0, key, "positive")


def require_one_of(config: object, key: str, choices: Sequence[str]) -> None:
    """:func:`require` that field ``key`` is one of ``choices``."""
    require(config, getattr(config, key) in choices, key, f"one of {', '.join(choices)}")


def require_device(config: object, key: str = "device") -> None:
    """:func:`require` that field ``key`` names a device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``."""
    value = getattr(config, key)
    ok = value in ("auto", "cpu", "cuda") or value.startswith("cuda:")
    require(config, ok, key, "auto, cpu, cuda or cuda:N")


@overload
def config_field(default: T, *, fingerprint: bool = True, allow_inf: bool = False) -> T: ...


@overload
def config_field(
    *, default_factory: Callable[[], T], fingerprint: bool = True, allow_inf: bool = False
) -> T: ...


def config_field(
    default: object = dataclasses.MISSING,
    *,
    default_factory: Callable[[], object] | None = None,
    fingerprint: bool = True,
    allow_inf: bool = False,
) -> object:
    """A config field with metadata: ``fingerprint=False`` for a field that does not change what
    is trained (a run may resume with another value of it: where outputs go, how often to log),
    ``allow_inf=True`` for a float that accepts ``±inf``. Typed like ``dataclasses.field``: the
    value is the default's type (or the factory's), so ``x: int = config_field(3)`` checks."""
    metadata = {"fingerprint": fingerprint, "allow_inf": allow_inf}
    if default_factory is None:
        return dataclasses.field(default=default, metadata=metadata)
    if default is not dataclasses.MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return dataclasses.field(default_factory=default_factory, metadata=metadata)


def unfingerprinted_fields(cls: type) -> frozenset[str]:
    """The fields of ``cls`` declared with ``config_field(..., fingerprint=False)``."""
    return frozenset(
        name for name, f in config_fields(cls).items() if not f.metadata.get("fingerprint", True)
    )


def config_argument(cls: type[C], config: object, *, who: str) -> C:
    """``config`` as a ``cls`` config for ``who`` (e.g. ``"SFTTrainer.from_config"``): a ``cls``
    as it is, the path of a YAML file of its keys, or a mapping of its keys (both read as
    :func:`load_config` reads them: unknown keys named, values checked by type); anything else
    is a :class:`ConfigValueError` saying how to build one."""
    if isinstance(config, cls):
        return config
    if isinstance(config, str | os.PathLike):
        return load_config(cls, config)
    if isinstance(config, Mapping) and all(isinstance(k, str) for k in config):
        return load_config(cls, overrides=config)
    name = cls.__name__
    raise ConfigValueError(
        f"{who} takes a config of type {name}, got {type(config).__name__} (or the path of a "
        f"YAML file of its keys, or a dict of them); build one with {name}(**values) or "
        f"load_config({name}, PATH, ['key=value']), or pass the values to the trainer as keywords"
    )


def coerce_value(
    key: str,
    value: object,
    tp: object,
    *,
    source: str = "",
    from_text: bool = False,
    allow_inf: bool = False,
) -> object:
    """``value`` checked (and where lossless, converted) against type ``tp`` of field ``key``.

    ``from_text``: ``value`` is the raw text of a ``--set`` override, parsed by the field's type
    (``"2e-5"`` is a float for a float field, the text itself for a ``str`` field, ``none`` is None
    for an optional field, ``a,b`` or ``[a, b]`` is a list). A float (also inside a list or a
    mapping) must be finite; ``allow_inf`` accepts ``±inf`` (never ``nan``).
    """
    origin = typing.get_origin(tp)
    if tp is Any:
        return _yaml_scalar(value) if from_text else value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args and (
            value is None or (from_text and str(value).strip().lower() in _NONE_WORDS)
        ):
            return None
        errors = []
        # Try the non-text members first so "3" is an int for ``int | str``.
        for arg in sorted((a for a in args if a is not type(None)), key=lambda a: a is str):
            try:
                return coerce_value(
                    key, value, arg, source=source, from_text=from_text, allow_inf=allow_inf
                )
            except ConfigValueError as exc:
                errors.append(str(exc))
        # Keep the one reason worth repeating: a number that is not finite.
        why = _NOT_FINITE if any(e.endswith(_NOT_FINITE) for e in errors) else ""
        raise _bad(key, value, tp, source, why)
    if tp is type(None):
        if value is None or (from_text and str(value).strip().lower() in _NONE_WORDS):
            return None
        raise _bad(key, value, tp, source)
    if origin is Literal:
        choices = typing.get_args(tp)
        for choice in choices:
            if value == choice or (from_text and str(value) == str(choice)):
                return choice
        raise ConfigValueError(
            f"config key {key!r}{f' (from {source})' if source else ''} must be one of "
            f"{', '.join(repr(c) for c in choices)}; got {value!r}"
        )
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
        raise _bad(key, value, tp, source, "use true or false")
    if tp is int:
        if isinstance(value, bool):
            raise _bad(key, value, tp, source)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip().replace("_", ""))
            except ValueError:
                pass
        raise _bad(key, value, tp, source, "a whole number")
    if tp is float:
        if isinstance(value, bool):
            raise _bad(key, value, tp, source)
        number: float | None = None
        if isinstance(value, (int, float)):
            number = float(value)
        elif isinstance(value, str):  # YAML 1.1 reads 2e-5 as text; accept it
            try:
                number = float(value.strip())
            except ValueError:
                pass
        if number is None:
            raise _bad(key, value, tp, source, "a number such as 2e-5")
        if not math.isfinite(number) and not (allow_inf and math.isinf(number)):
            raise _bad(key, value, tp, source, _NOT_FINITE)
        return number
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not from_text:
            return str(value)
        raise _bad(key, value, tp, source)
    if tp is Path:
        if isinstance(value, (str, Path)):
            return Path(value)
        raise _bad(key, value, tp, source)
    if origin in (list, tuple, Iterable) or tp in (list, tuple):
        (item_tp,) = typing.get_args(tp)[:1] or (Any,)
        items: object = value
        if from_text:
            text = str(value).strip()
            if text.startswith("["):
                items = _yaml_load(key, text, source)
                if not isinstance(items, list):
                    raise _bad(key, value, tp, source, "a list")
            elif text.lower() in _NONE_WORDS:
                items = []
            else:
                items = [part.strip() for part in text.split(",")]
            return [
                coerce_value(
                    key,
                    v,
                    item_tp,
                    source=source,
                    from_text=isinstance(v, str),
                    allow_inf=allow_inf,
                )
                for v in items
            ]
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, (list, tuple)):
            raise _bad(key, value, tp, source, "a list")
        return [coerce_value(key, v, item_tp, source=source, allow_inf=allow_inf) for v in items]
    if origin in (dict, Mapping) or tp is dict:
        key_tp, val_tp = typing.get_args(tp) or (str, Any)
        data = value
        if from_text:
            data = _yaml_load(key, str(value), source) if str(value).strip() else {}
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise _bad(key, value, tp, source, "a mapping such as {a: 1}")
        return {
            coerce_value(key, k, key_tp, source=source): coerce_value(
                key, v, val_tp, source=source, allow_inf=allow_inf
            )
            for k, v in data.items()
        }
    # Every other annotation the config system reads is a class by now.
    if isinstance(value, cast(type, tp)):
        return value
    raise _bad(key, value, tp, source)


def _yaml_load(key: str, text: str, source: str) -> object:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigValueError(
            f"config key {key!r}{f' (from {source})' if source else ''}: cannot parse {text!r} "
            f"({' '.join(str(exc).split())})"
        ) from None


def _yaml_scalar(text: object) -> object:
    import yaml

    try:
        return yaml.safe_load(str(text))
    except yaml.YAMLError:
        return text


def parse_overrides(items: Iterable[str]) -> list[tuple[str, str]]:
    """``["a=1", "b.c=x"]`` → ``[("a", "1"), ("b.c", "x")]``; raises ConfigValueError on an item
    without ``=``."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigValueError(f"--set expects key=value, got {item!r}")
        out.append((key.strip(), value))
    return out


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in YAML (or JSON) file ``path``; an empty file is ``{}``."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ConfigValueError(f"config file {path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigValueError(
            f"config file {path} is not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} "
            f"at offset {exc.start}); save it as UTF-8 YAML"
        ) from None
    except OSError as exc:
        raise ConfigValueError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # PyYAML's message spans several lines (with a caret under the spot): one line here.
        raise ConfigValueError(
            f"config file {path} is not valid YAML: {' '.join(str(exc).split())}"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigValueError(
            f"config file {path} must hold a mapping of keys to values, got {type(data).__name__}"
        )
    return dict(data)


def check_keys(cls: type, keys: Iterable[str], *, source: str = "") -> None:
    """Raise :class:`UnknownConfigKeyError` for the first key that is not a field of ``cls``."""
    valid = list(config_fields(cls))
    for key in keys:
        if key not in valid:
            raise UnknownConfigKeyError(key, valid, source=source, config=cls.__name__)


def _coercer(cls: type) -> Callable[..., object]:
    """``coerce(key, value, source, from_text=False)`` for the fields of ``cls``: each value
    checked against its field's type, ``±inf`` only where the field allows it."""
    tps = field_types(cls)
    fields = config_fields(cls)

    def coerce(key: str, value: object, source: str, from_text: bool = False) -> object:
        return coerce_value(
            key,
            value,
            tps[key],
            source=source,
            from_text=from_text,
            allow_inf=allows_inf(fields[key]),
        )

    return coerce


def resolve_aliases(cls: type, data: Mapping[str, Any], *, source: str = "") -> dict[str, Any]:
    """``data`` with the keys of ``cls.config_aliases`` (see the module's doc) rewritten to
    fields of ``cls``, one logged note per key; a field given by its own name wins."""
    aliases = getattr(cls, "config_aliases", None) or {}
    fields = config_fields(cls)
    out: dict[str, Any] = {}
    mapped: dict[str, Any] = {}
    for key, value in data.items():
        target = aliases.get(key) if key not in fields else None
        if target is None:
            out[key] = value
            continue
        values = {target: value} if isinstance(target, str) else dict(target(value))
        if source != "arguments":  # keywords in code: the caller chose the name
            where = f" in {source}" if source else ""
            text = ", ".join(f"{k}={v!r}" for k, v in values.items())
            log.info("config key %r%s is %s here", key, where, text)
        mapped.update(values)
    for key, value in mapped.items():
        out.setdefault(key, value)
    return out


def config_from_dict(cls: type[C], values: Mapping[str, Any], *, source: str = "") -> C:
    """Build ``cls`` from a mapping of field values (each checked against its type)."""
    check_keys(cls, values, source=source)
    coerce = _coercer(cls)
    return cls(**{k: coerce(k, v, source) for k, v in values.items()})


def load_config(
    cls: type[C],
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | Mapping[str, object] = (),
    **values: object,
) -> C:
    """A ``cls`` config from YAML file ``path`` (optional), then ``overrides`` (``"key=value"``
    texts, typed by each field, or a mapping of values), then keyword ``values``."""
    merged: dict[str, object] = {}
    coerce = _coercer(cls)
    if path is not None:
        data = resolve_aliases(cls, read_config_file(path), source=str(path))
        check_keys(cls, data, source=str(path))
        merged.update({k: coerce(k, v, str(path)) for k, v in data.items()})
    if isinstance(overrides, Mapping):
        overrides = resolve_aliases(cls, overrides, source="overrides")
        check_keys(cls, overrides, source="overrides")
        merged.update({k: coerce(k, v, "overrides") for k, v in overrides.items()})
    else:
        texts = resolve_aliases(cls, dict(parse_overrides(overrides)), source="--set")
        check_keys(cls, texts, source="--set")
        merged.update({k: coerce(k, v, "--set", from_text=True) for k, v in texts.items()})
    values = resolve_aliases(cls, values, source="arguments")
    check_keys(cls, values, source="arguments")
    merged.update({k: coerce(k, v, "arguments") for k, v in values.items()})
    return cls(**merged)


def replace_config(config: D, **values: object) -> D:
    """A copy of ``config`` with ``values`` set (checked like :func:`load_config`'s keywords)."""
    cls = type(config)
    check_keys(cls, values, source="arguments")
    coerce = _coercer(cls)
    return dataclasses.replace(config, **{k: coerce(k, v, "arguments") for k, v in values.items()})


def config_to_dict(config: object) -> dict[str, Any]:
    """The config's fields as plain JSON/YAML-ready values (paths as text)."""
    out = {}
    for name in config_fields(type(config)):
        value = getattr(config, name)
        out[name] = str(value) if isinstance(value, Path) else value
    return json.loads(json.dumps(out, default=str))


def dump_config(config: object, path: str | Path) -> Path:
    """Write ``config`` as YAML to ``path`` (loadable again with :func:`load_config`)."""
    import yaml

    path = Path(path)
    path.write_text(
        f"# {type(config).__name__} written by lean-dojo-v2\n"
        + yaml.safe_dump(config_to_dict(config), sort_keys=False, allow_unicode=True),
        "utf-8",
    )
    return path
