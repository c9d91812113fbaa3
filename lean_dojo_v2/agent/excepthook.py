"""Layer 4 (agent): a script built on an agent ends in one line, not a traceback, on bad input.

Upstream LeanDojo-v2's snippets (``agent = HFAgent(trainer); agent.setup_github_repository(...)``)
are plain scripts without a ``try``. :func:`install` (called when an agent is created, never at
import) wraps ``sys.excepthook`` so that an *uncaught* :class:`~lean_dojo_v2.errors.LeanDojoError`
is printed as ``lean-dojo-v2: error: <message>`` on stderr (exit status 1, as for any uncaught
exception); every other exception, and everything with ``LEAN_DOJO_V2_DEBUG=1``, goes to the hook
that was there before. A hook a user or another tool installed is left alone. Interactive shells
(IPython, Jupyter) do not use ``sys.excepthook`` and show their usual tracebacks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import TracebackType

_installed = False

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def _hook(
    previous: ExceptHook,
    exc_type: type[BaseException],
    exc: BaseException,
    tb: TracebackType | None,
) -> None:
    from ..errors import LeanDojoError

    debug = os.environ.get("LEAN_DOJO_V2_DEBUG", "") not in ("", "0")
    if isinstance(exc, LeanDojoError) and not debug:
        message = " ".join(str(exc).split())
        print(f"lean-dojo-v2: error: {message}", file=sys.stderr)
        return
    previous(exc_type, exc, tb)


def install() -> None:
    """Wrap ``sys.excepthook`` (once, and only while it is Python's own)."""
    global _installed
    if _installed or sys.excepthook is not sys.__excepthook__:
        return
    sys.excepthook = _Hook(sys.excepthook)
    _installed = True


class _Hook:
    """The installed hook; ``lean_dojo_v2`` marks it as this library's for whoever inspects
    ``sys.excepthook``."""

    lean_dojo_v2 = True

    def __init__(self, previous: ExceptHook) -> None:
        self.previous = previous

    def __call__(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        _hook(self.previous, exc_type, exc, tb)


__all__ = ["install"]
