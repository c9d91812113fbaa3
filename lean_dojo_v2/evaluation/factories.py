"""Layer 4 (evaluation): your own environment or generator factory (``evaluate(make_env=...,
make_generator=...)``), checked before anything is written.

The pipeline calls a factory in each worker, where a failure would come after ``--out`` was
opened, as a plain ``TypeError`` or ``PicklingError``. So each is checked here first: it must
be callable; with ``parallel="process"`` it must survive pickle's trip to a worker (a lambda or
a local function does not: use a module-level function, a ``functools.partial`` of one, or
``parallel="inline"``; Ray's cloudpickle takes them, and is tried with ``"ray"``); and it is
called once, in this process, so that one that raises
or returns None (or a generator that cannot do what the mode asks) is an
:class:`~.errors.EvalFactoryError` now. With ``parallel="inline"`` the generator that call made
is the one the run uses (a model is loaded once); for worker processes and Ray actors, which make
their own, it is closed and dropped, and the memory it held on a GPU given back.
"""

from __future__ import annotations

import pickle
import sys
import threading
from typing import TYPE_CHECKING, cast

from .errors import EvalFactoryError

if TYPE_CHECKING:
    from ..models.generator import TacticGenerator
    from ..prover.search_types import EnvFactory, Envs, GeneratorFactory

__all__ = ["FirstMade", "check_factories", "try_factories"]

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
    make_env: EnvFactory | None,
    make_generator: GeneratorFactory | None,
    mode: str,
    parallel: str,
) -> GeneratorFactory | None:
    """Call each factory given once: it must return an environment (a generator that can do
    what ``mode`` asks), not raise and not return None. The environment is closed; the generator
    factory the run is to use is returned (inline: a :class:`FirstMade` handing out the
    generator made here first; else ``make_generator``, what it made closed)."""
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
        if parallel == "inline":
            return FirstMade(make_generator, cast("TacticGenerator", generator))
        close = getattr(generator, "close", None)
        if callable(close):
            close()
        del generator
        _give_back_gpu_memory()
    return make_generator


class FirstMade:
    """A generator factory whose first call returns ``made`` (what the check made, in this
    process) and whose later calls call ``factory``."""

    def __init__(self, factory: GeneratorFactory, made: TacticGenerator) -> None:
        self.factory = factory
        self._made: TacticGenerator | None = made
        self._lock = threading.Lock()

    def __call__(self) -> TacticGenerator:
        with self._lock:
            made, self._made = self._made, None
        return made if made is not None else self.factory()


def _give_back_gpu_memory() -> None:
    """The check's model is gone; torch's CUDA cache would keep its memory from the workers."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")  # only where the factory imported it
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


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
