"""Layer 4 (external_api): how the served encoders spend the CPU.

Two facts of a CPU server (measured on 2 cores shared with other work; docs/api_server.md):

- A short encode (a goal state, one ``/encode`` text: a few dozen tokens) is a string of small
  matrix products, each split across torch's threads and joined at a barrier. When other
  processes hold the cores, a thread that is not running holds up the rest at every barrier:
  one MiniLM encode of a goal state took 80-95 ms with 2 threads and 30 ms with 1 under a load
  of 4. :func:`threads_for` runs such an encode on one thread; a large batch (the new premises
  of a file) keeps every thread, which it keeps busy.
- bfloat16 matrix products run at about twice float32's rate on a CPU with AVX512-BF16 or AMX
  (:func:`native_bf16`); elsewhere they are emulated and no faster. :func:`precision` is the
  autocast context of a precision name.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

SMALL_ENCODE = 8
"""Encodes of at most this many texts run on one torch thread (:func:`threads_for`)."""

_lock = threading.Lock()


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 matrix products natively (AVX512-BF16 or AMX);
    bfloat16 emulated with plain AVX512 is no faster than float32."""
    from ..models.loading import native_bf16 as native

    return native("cpu")


def precision(dtype: str, device_type: str) -> contextlib.AbstractContextManager[object]:
    """The context that computes in ``dtype`` (``"float32"``: as the model is; ``"bfloat16"``:
    torch's autocast on ``device_type``)."""
    if dtype == "float32":
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type, dtype=torch.bfloat16)


@contextlib.contextmanager
def threads_for(texts: int, device_type: str) -> Iterator[None]:
    """Run an encode of ``texts`` texts on one torch thread when it is small (at most
    :data:`SMALL_ENCODE`) and on the CPU; else as torch is set. torch's thread count is the
    process's (the threads that start meanwhile, and MKL's products in other threads, get one
    thread too): the count found when the encode starts is set back when it ends, and one such
    encode runs at a time."""
    if texts > SMALL_ENCODE or device_type != "cpu":
        yield
        return
    import torch

    with _lock:
        before = torch.get_num_threads()
        if before <= 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)
