"""Layer 4 (evaluation): your own environment or generator factory (``evaluate(make_env=...,
make_generator=...)``), checked before anything is written.

The pipeline calls a factory in each worker, where a failure would come after ``--out`` was
opened, as a plain ``TypeError`` or ``PicklingError``. So each is checked here first: it must
be callable; with ``parallel="process"`` it must survive pickle's trip to a worker (a lambda or
a local function does not: use a module-level function, a ``functools.partial`` of one, or
``parallel="inline"``; Ray's cloudpickle takes them, and is tried with ``"ray"``); and it is
called once, in this process, so that one that raises
or returns None (or a generator that cannot do what the mode asks) is an
:class:`~.errors.EvalFactoryError` now. What that call made is closed and dropped.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, cast

from .errors import EvalFactoryError

if TYPE_CHECKING:
    from ..prover.search_types import EnvFactory, Envs, GeneratorFactory

__all__ = ["check_factories", "try_factories"]

# what a mode asks of a generator (any one of the methods will do)
_GENERATOR_METHODS = {
    "tactic": ("generate",),
    "whole": ("sample_proofs", "generate_proofs"),
    "refine": ("sample_proofs",),
}


def check_factories(
    make_env: EnvFactory | None, make_generator: GeneratorFactory | None, parallel: str
) -> None:
    """Each factory given is callable and, for worker processes or Ray actors, can be sent to
    them (nothing is called)."""
    for key, factory in (("make_env", make_env), ("make_generator", make_generator)):
        if factory is None:
            continue
        if not callable(factory):
            raise EvalFactoryError(
                f"{key} must be a callable without arguments that makes the "
                f"{_what(key)} (a function, a functools.partial), got {factory!r} "
                f"({type(factory).__name__})"
            )
        _check_sendable(key, factory, parallel)


def try_factories(
    make_env: EnvFactory | None, make_generator: GeneratorFactory | None, mode: str
) -> None:
    """Call each factory given once: it must return an environment (a generator that can do
    what ``mode`` asks), not raise and not return None. What it made is closed."""
    from ..prover.workers import close_env

    if make_env is not None:
        env = _call("make_env", make_env)
        if isinstance(env, (list, tuple)) and not env:
            raise EvalFactoryError("make_env returned an empty list: return an environment")
        close_env(cast("Envs", env))
    if make_generator is not None:
        generator = _call("make_generator", make_generator)
        methods = _GENERATOR_METHODS.get(mode, ())
        if methods and not any(callable(getattr(generator, m, None)) for m in methods):
            raise EvalFactoryError(
                f"make_generator returned a {type(generator).__name__}, which has no "
                f"{' or '.join(m + '()' for m in methods)}: {mode} mode cannot use it"
            )
        close = getattr(generator, "close", None)
        if callable(close):
            close()


def _what(key: str) -> str:
    return "environment" if key == "make_env" else "generator"


def _call(key: str, factory: object) -> object:
    try:
        made = factory()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - any failure of your code: one line, nothing written
        text = " ".join(str(exc).split())
        raise EvalFactoryError(
            f"{key} raised {type(exc).__name__}: {text} (called once to check it, before "
            "anything is written)"
        ) from exc
    if made is None:
        raise EvalFactoryError(f"{key} returned None: it must return the {_what(key)}")
    return made


def _check_sendable(key: str, factory: object, parallel: str) -> None:
    """Worker processes receive factories by pickle, Ray actors by cloudpickle."""
    if parallel == "inline":
        return
    try:
        if parallel == "ray":
            from ray import cloudpickle

            cloudpickle.dumps(factory)
        else:
            pickle.dumps(factory)
    except ImportError:  # no Ray: the Ray check before this one said so already
        return
    except Exception as exc:  # noqa: BLE001 - pickling raises many types
        where = "Ray actors" if parallel == "ray" else "worker processes"
        raise EvalFactoryError(
            f"{key} cannot be sent to {where} (parallel={parallel!r}): "
            f"{type(exc).__name__}: {' '.join(str(exc).split())}; use a module-level function "
            "or a functools.partial of one, or parallel='inline'"
        ) from None
