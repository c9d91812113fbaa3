"""``import lean_dojo`` → :mod:`lean_dojo_v2.v1`, for one run of a v1 script only.

:func:`install` puts a finder first on ``sys.meta_path`` that answers ``lean_dojo`` and v1's
submodules (``lean_dojo.interaction.dojo``, ``lean_dojo.data_extraction.lean``…) with alias
modules: fresh module objects whose names are the very objects of :mod:`lean_dojo_v2.v1` (so
``isinstance`` holds across both spellings and pickles name ``lean_dojo_v2.v1``, which any
process can import). A v1 submodule or name we do not provide raises
:class:`~lean_dojo_v2.v1.errors.UnsupportedV1NameError` naming our equivalent.

Processes the script starts (``multiprocessing`` with *spawn*, Ray workers) are fresh
interpreters: :func:`install` also writes a one-file ``lean_dojo`` package into a temporary
directory and puts that directory first on ``sys.path`` and ``PYTHONPATH``; importing it there
installs the same finder. :func:`uninstall` undoes all of it. Nothing happens unless
:func:`install` is called, so a real ``lean_dojo`` installed beside this library is never
shadowed otherwise.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

V1_PACKAGE = "lean_dojo"
OUR_PACKAGE = "lean_dojo_v2.v1"

# v1's module → the module of ours that holds its names (v1 4.20.0 layout; older releases used
# the same paths).
ALIASES: dict[str, str] = {
    "lean_dojo": OUR_PACKAGE,
    "lean_dojo.interaction": OUR_PACKAGE,
    "lean_dojo.interaction.dojo": f"{OUR_PACKAGE}.dojo",
    "lean_dojo.interaction.parse_goals": f"{OUR_PACKAGE}.goals",
    "lean_dojo.data_extraction": OUR_PACKAGE,
    "lean_dojo.data_extraction.lean": f"{OUR_PACKAGE}.repo",
    # Tracing and constants: the package answers the names it has (is_available_in_cache,
    # __version__) and names our equivalent for the rest.
    "lean_dojo.data_extraction.trace": OUR_PACKAGE,
    "lean_dojo.data_extraction.traced_data": OUR_PACKAGE,
    "lean_dojo.constants": OUR_PACKAGE,
}

# v1 modules with nothing to alias → what to use instead.
MODULES_NOT_PROVIDED: dict[str, str] = {
    "lean_dojo.utils": "the standard library and lean_dojo_v2.system (commands, toolchain)",
    "lean_dojo.data_extraction.ast": "lean_dojo_v2.lean_dojo.TracedFile (trace schema 2)",
    "lean_dojo.data_extraction.cache": "lean_dojo_v2.lean_dojo.trace's cache (docs/tracing.md)",
}

SHIM = '''"""A stand-in for LeanDojo v1 written by lean_dojo_v2.v1 for one run: resolves to it."""
from lean_dojo_v2.v1.alias import install_from_shim

install_from_shim()
'''

_state: dict[str, Any] = {"finder": None, "shim_dir": None, "pythonpath": None, "saved": {}}


def _unsupported(fullname: str, hint: str) -> ImportError:
    from .errors import UnsupportedV1NameError

    return UnsupportedV1NameError(
        f"{fullname} is a module of LeanDojo v1 that lean_dojo_v2.v1 does not provide; use {hint}"
    )


def make_alias(fullname: str) -> types.ModuleType:
    """A module named ``fullname`` whose attributes are those of the module it aliases."""
    from . import NOT_PROVIDED, not_provided

    real = importlib.import_module(ALIASES[fullname])
    module = types.ModuleType(fullname, real.__doc__)
    public = getattr(real, "__all__", None)
    if public is not None:
        module.__dict__["__all__"] = list(public)
    # __file__: the module of ours it stands for, so that code locating v1's files
    # (os.path.dirname(lean_dojo.__file__)) gets a real directory: ours.
    for key in ("__version__", "__file__"):
        if hasattr(real, key):
            setattr(module, key, getattr(real, key))
    module.__path__ = []  # a package: v1's submodules are found below it

    def __getattr__(name: str) -> object:
        if name.startswith("__") or name in NOT_PROVIDED:
            raise not_provided(fullname, name)
        try:
            value = getattr(real, name)
        except AttributeError:
            raise not_provided(fullname, name) from None
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(dir(real)) | set(vars(module)))

    # A module's own __getattr__/__dir__ (PEP 562); the checker takes them for methods.
    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return make_alias(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class V1Finder(importlib.abc.MetaPathFinder):
    """Finds ``lean_dojo`` and its submodules as aliases of :mod:`lean_dojo_v2.v1`."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != V1_PACKAGE and not fullname.startswith(V1_PACKAGE + "."):
            return None
        if fullname in ALIASES:
            return importlib.util.spec_from_loader(fullname, _AliasLoader(), is_package=True)
        if fullname in MODULES_NOT_PROVIDED:
            raise _unsupported(fullname, MODULES_NOT_PROVIDED[fullname])
        # Never a module of v1 (or `from lean_dojo import name` probing for a submodule):
        # Python's own "No module named" / "cannot import name" follows.
        return None


def _v1_modules() -> list[str]:
    return [m for m in sys.modules if m == V1_PACKAGE or m.startswith(V1_PACKAGE + ".")]


def install(*, children: bool = True) -> None:
    """Make ``import lean_dojo`` resolve to :mod:`lean_dojo_v2.v1` in this process and (with
    ``children``) in the Python processes it starts, until :func:`uninstall`."""
    if _state["finder"] is None:
        # A real lean_dojo imported earlier would keep answering; set it aside until uninstall.
        _state["saved"] = {m: sys.modules.pop(m) for m in _v1_modules()}
        finder = V1Finder()
        sys.meta_path.insert(0, finder)
        _state["finder"] = finder
    if children and _state["shim_dir"] is None:
        shim_dir = Path(tempfile.mkdtemp(prefix="lean_dojo_v2_v1_"))
        (shim_dir / V1_PACKAGE).mkdir()
        (shim_dir / V1_PACKAGE / "__init__.py").write_text(SHIM, encoding="utf-8")
        _state["shim_dir"] = shim_dir
        sys.path.insert(0, str(shim_dir))
        _state["pythonpath"] = os.environ.get("PYTHONPATH")
        parts = [str(shim_dir), *(p for p in (_state["pythonpath"] or "").split(os.pathsep) if p)]
        # The library must be importable from the shim in a child started elsewhere.
        parts.append(str(Path(__file__).resolve().parents[2]))
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)


def uninstall() -> None:
    """Undo :func:`install`: the finder, the alias modules, the temporary directory and the
    ``sys.path`` / ``PYTHONPATH`` entries; a real ``lean_dojo`` set aside comes back."""
    finder = _state["finder"]
    if finder is not None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for name in _v1_modules():
            del sys.modules[name]
        sys.modules.update(_state["saved"])
        _state["finder"], _state["saved"] = None, {}
    shim_dir = _state["shim_dir"]
    if shim_dir is not None:
        if str(shim_dir) in sys.path:
            sys.path.remove(str(shim_dir))
        if _state["pythonpath"] is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = _state["pythonpath"]
        shutil.rmtree(shim_dir, ignore_errors=True)
        _state["shim_dir"] = _state["pythonpath"] = None


def install_from_shim() -> None:
    """Run by the stand-in ``lean_dojo`` package in a child process: install the finder and put
    the alias of ``lean_dojo`` where the stand-in is being imported."""
    if _state["finder"] is None:
        finder = V1Finder()
        sys.meta_path.insert(0, finder)
        _state["finder"] = finder
    sys.modules[V1_PACKAGE] = make_alias(V1_PACKAGE)


__all__ = ["ALIASES", "MODULES_NOT_PROVIDED", "V1Finder", "install", "make_alias", "uninstall"]
