"""The preallocated KV-cache layer that :mod:`.decoding` writes into.

Imports torch and transformers at module level: :mod:`.decoding` imports it inside the functions
that decode, so that ``import lean_dojo_v2.models`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys/values live in a buffer with room for ``capacity``
    positions: an update writes in place and returns views, instead of copying the whole cache
    into a new tensor at every step."""

    _kbuf: torch.Tensor
    _vbuf: torch.Tensor
    _rows: int
    _len: int

    def adopt(
        self, keys: torch.Tensor, values: torch.Tensor, capacity: int, repeats: int = 1
    ) -> None:
        """Take over ``keys``/``values`` (``(rows, heads, length, dim)``), each row repeated
        ``repeats`` times (consecutively), into buffers with room for ``capacity`` positions."""
        rows, heads, length, _ = keys.shape
        self._kbuf = keys.new_empty((rows * repeats, heads, capacity, keys.shape[-1]))
        self._vbuf = values.new_empty((rows * repeats, heads, capacity, values.shape[-1]))
        # Broadcast each row into its ``repeats`` copies: one write, no intermediate tensor.
        kview = self._kbuf.view(rows, repeats, heads, capacity, keys.shape[-1])
        vview = self._vbuf.view(rows, repeats, heads, capacity, values.shape[-1])
        kview[:, :, :, :length] = keys[:, None]
        vview[:, :, :, :length] = values[:, None]
        self._rows = rows * repeats
        self._len = length
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._views()

    def allocate(
        self, like: torch.Tensor, rows: int, capacity: int, length: int, zero_until: int
    ) -> None:
        """Empty buffers of ``rows`` rows and ``capacity`` positions, shaped and typed as the
        keys/values ``like`` (``(n, heads, _, dim)``), holding ``length`` positions of which the
        first ``zero_until`` (padding no prompt writes) are zeros: masked positions must still
        hold finite numbers, as attention multiplies them by a zero weight."""
        _, heads, _, dim = like.shape
        self._kbuf = like.new_empty((rows, heads, capacity, dim))
        self._vbuf = like.new_empty((rows, heads, capacity, dim))
        self._kbuf[:, :, :zero_until].zero_()
        self._vbuf[:, :, :zero_until].zero_()
        self._rows, self._len = rows, length
        self.dtype, self.device = like.dtype, like.device
        self.is_initialized = True
        self._views()

    def write_rows(
        self, rows: Sequence[int], repeats: int, keys: torch.Tensor, values: torch.Tensor
    ) -> None:
        """Put ``keys[j]``/``values[j]`` into the ``repeats`` rows of prompt ``rows[j]``,
        right-aligned at the end of the prompt positions (left padding before them)."""
        width, end = keys.shape[2], self._len
        kview = self._kbuf.view(-1, repeats, *self._kbuf.shape[1:])
        vview = self._vbuf.view(-1, repeats, *self._vbuf.shape[1:])
        for j, row in enumerate(rows):
            kview[row, :, :, end - width : end] = keys[j]
            vview[row, :, :, end - width : end] = values[j]

    def _views(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Point ``keys``/``values`` at the live part of the buffers; returns them."""
        keys = self._kbuf[: self._rows, :, : self._len]
        values = self._vbuf[: self._rows, :, : self._len]
        self.keys, self.values = keys, values
        return keys, values

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        step = key_states.shape[-2]
        if self._len + step > self._kbuf.shape[2]:  # pragma: no cover - capacity is exact
            return super().update(key_states, value_states, *args, **kwargs)
        self._kbuf[: self._rows, :, self._len : self._len + step] = key_states
        self._vbuf[: self._rows, :, self._len : self._len + step] = value_states
        self._len += step
        return self._views()

    def get_seq_length(self) -> int:
        return self._len

    def compact(self, holes: torch.Tensor, sources: torch.Tensor, rows: int) -> None:
        """Keep the first ``rows`` rows, after moving row ``sources[i]`` into row ``holes[i]``
        (rows that have ended): only the moved rows are copied, in place."""
        if holes.numel():
            for buf in (self._kbuf, self._vbuf):
                live = buf[:, :, : self._len]
                live.index_copy_(0, holes, live.index_select(0, sources))
        self._rows = rows
        self._views()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._kbuf = self._kbuf[: self._rows].index_select(0, indices)
        self._vbuf = self._vbuf[: self._rows].index_select(0, indices)
        self._rows = self._kbuf.shape[0]
        self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._kbuf = self._kbuf[: self._rows].repeat_interleave(repeats, dim=0)
        self._vbuf = self._vbuf[: self._rows].repeat_interleave(repeats, dim=0)
        self._rows = self._kbuf.shape[0]
        self._views()

    def crop(self, tokens_to_remove: int) -> None:  # pragma: no cover - not used here
        raise NotImplementedError("a generation cache is not cropped")
