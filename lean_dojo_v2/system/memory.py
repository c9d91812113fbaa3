"""Layer 0 (system): keep a CPU training process from holding memory it has freed.

glibc's ``malloc`` serves an allocation above its mmap threshold with ``mmap`` and gives it back
on ``free``, but it raises that threshold to the size of every such block freed (up to 32 MiB).
A training step allocates and frees activations of a few MiB each, so after the first steps
they all come from the heap, which fragments and is not returned: measured on a LoRA SFT step
of SmolLM2-135M on the CPU (batch 2, the bundled sample), the process stayed at 2.4 GB resident
between steps with the default behaviour and 1.15 GB with a fixed threshold, and its peak fell
from 3.0 to 2.4 GB, for up to ~12 % more time per step (an ``mmap`` per large tensor; docs/training.md,
"Memory on the CPU").

:func:`bound_heap_retention` fixes the thresholds with ``mallopt`` (as the environment variables
``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` would at start-up). It does nothing off
glibc, when ``LEAN_DOJO_V2_MALLOC_TUNING=0``, or when either variable is set already (the user
chose).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
DEFAULT_THRESHOLD = 128 * 1024  # glibc's own starting value, kept fixed
_done = False


def bound_heap_retention(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds at ``threshold`` bytes for the rest of the process.
    Returns whether it did (once per process; later calls return the first answer)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("LEAN_DOJO_V2_MALLOC_TUNING") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    ok = bool(mallopt(_M_MMAP_THRESHOLD, threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, threshold))
    log.debug("malloc thresholds fixed at %d bytes: %s", threshold, ok)
    _done = ok
    return ok


__all__ = ["DEFAULT_THRESHOLD", "bound_heap_retention"]
