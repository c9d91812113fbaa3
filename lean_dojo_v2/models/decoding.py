"""The decoding loop behind :class:`~lean_dojo_v2.models.generator.HFTacticGenerator`'s sampling
and greedy decoding of causal LMs.

``model.generate`` decodes every sequence of a batch until the last one ends, grows the KV cache
by concatenation at every step and sorts the whole vocabulary of every row for top-p. Tactics are
short and end at very different steps, so :func:`decode_causal` instead

* runs each prompt once and copies its KV cache to its samples (``share_prompt=True``);
* runs the prompts in groups of similar length (:func:`prefill_grouped`), each padded only to its
  own longest prompt rather than to the batch's;
* drops a sequence from the batch (its rows of the KV cache, mask and positions) as soon as it has
  ended, so the per-step cost follows the sequences still running; the rows that ended are
  refilled in place with running rows from the end of the batch (:func:`drop_rows`), so only as
  many rows are copied as have ended and no buffer is reallocated;
* writes keys and values into a preallocated buffer (:class:`_GrowingLayer`) instead of
  concatenating;
* samples with top-p over a ``topk`` shortlist, falling back to a full sort only for the rows whose
  shortlist holds less than ``top_p`` of the probability mass (exact: the same distribution as
  transformers' ``TopPLogitsWarper``);
* records each chosen token's log-probability (temperature 1, before any warper) from the raw
  logits as ``logit - logsumexp``, in float32 whatever the model's dtype (bf16 on GPUs), into a
  buffer on the device;
* waits for the device only when it looks at the new tokens to stop the sequences that have
  ended (every step on a CPU, every :data:`CHECK_EVERY` steps on a GPU, one transfer each), and
  passes a preallocated attention mask as a growing view instead of concatenating one per step.

Prompts must be left-padded (:func:`check_left_padded`): each row's last position is taken as its
newest token.

Every tensor it creates is made on the device of the model's inputs or cache.

It only calls the model's forward pass with a ``DynamicCache``, so it works for any decoder-only
model that transformers can ``generate`` with, on CPU or GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

SHORTLIST = 64
"""Candidates per row examined first by top-p sampling; rows where they hold less than top_p of
the mass are tried again with 16 times as many, up to the whole vocabulary."""


@functools.cache
def _growing_layer_class():
    from transformers.cache_utils import DynamicLayer

    class _GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` whose keys/values live in a buffer with room for ``capacity``
        positions: an update writes in place and returns views, instead of copying the whole
        cache into a new tensor at every step."""

        def adopt(self, keys: Any, values: Any, capacity: int, repeats: int = 1) -> None:
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
            self, like: Any, rows: int, capacity: int, length: int, zero_until: int
        ) -> None:
            """Empty buffers of ``rows`` rows and ``capacity`` positions, shaped and typed as the
            keys/values ``like`` (``(n, heads, _, dim)``), holding ``length`` positions of which
            the first ``zero_until`` (padding no prompt writes) are zeros: masked positions must
            still hold finite numbers, as attention multiplies them by a zero weight."""
            _, heads, _, dim = like.shape
            self._kbuf = like.new_empty((rows, heads, capacity, dim))
            self._vbuf = like.new_empty((rows, heads, capacity, dim))
            self._kbuf[:, :, :zero_until].zero_()
            self._vbuf[:, :, :zero_until].zero_()
            self._rows, self._len = rows, length
            self.dtype, self.device = like.dtype, like.device
            self.is_initialized = True
            self._views()

        def write_rows(self, rows: Sequence[int], repeats: int, keys: Any, values: Any) -> None:
            """Put ``keys[j]``/``values[j]`` into the ``repeats`` rows of prompt ``rows[j]``,
            right-aligned at the end of the prompt positions (left padding before them)."""
            width, end = keys.shape[2], self._len
            kview = self._kbuf.view(-1, repeats, *self._kbuf.shape[1:])
            vview = self._vbuf.view(-1, repeats, *self._vbuf.shape[1:])
            for j, row in enumerate(rows):
                kview[row, :, :, end - width : end] = keys[j]
                vview[row, :, :, end - width : end] = values[j]

        def _views(self) -> None:
            self.keys = self._kbuf[: self._rows, :, : self._len]
            self.values = self._vbuf[: self._rows, :, : self._len]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any):
            step = key_states.shape[-2]
            if self._len + step > self._kbuf.shape[2]:  # pragma: no cover - capacity is exact
                return super().update(key_states, value_states, *args, **kwargs)
            self._kbuf[: self._rows, :, self._len : self._len + step] = key_states
            self._vbuf[: self._rows, :, self._len : self._len + step] = value_states
            self._len += step
            self._views()
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self._len

        def compact(self, holes: Any, sources: Any, rows: int) -> None:
            """Keep the first ``rows`` rows, after moving row ``sources[i]`` into row
            ``holes[i]`` (rows that have ended): only the moved rows are copied, in place."""
            if holes.numel():
                for buf in (self._kbuf, self._vbuf):
                    live = buf[:, :, : self._len]
                    live.index_copy_(0, holes, live.index_select(0, sources))
            self._rows = rows
            self._views()

        def batch_select_indices(self, indices: Any) -> None:
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

    return _GrowingLayer


def preallocate(cache: Any, extra: int, repeats: int = 1) -> None:
    """Give each plain ``DynamicLayer`` of ``cache`` (after the prompt) room for ``extra`` more
    positions, and repeat each of its rows ``repeats`` times (consecutively, as
    ``batch_repeat_interleave``); other layer kinds (sliding window, linear attention) are only
    repeated."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers:
        if repeats > 1:
            cache.batch_repeat_interleave(repeats)
        return
    grow = _growing_layer_class()
    for i, layer in enumerate(layers):
        keys = getattr(layer, "keys", None)
        if (
            type(layer) is not DynamicLayer
            or not layer.is_initialized
            or keys is None
            or keys.dim() != 4
        ):
            if repeats > 1:
                layer.batch_repeat_interleave(repeats)
            continue
        new = grow()
        new.adopt(keys, layer.values, keys.shape[2] + extra, repeats)
        layers[i] = new


def length_groups(lengths: Sequence[int], slack: float = 0.15) -> list[list[int]]:
    """Split prompts (by their unpadded ``lengths``) into groups of similar length, shortest
    first, such that padding each group to its longest prompt adds at most ``slack`` of its real
    tokens. Returns lists of prompt indices."""
    groups: list[list[int]] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        group = groups[-1] if groups else None
        if group is not None and (len(group) + 1) * lengths[i] <= (1 + slack) * (
            total + lengths[i]
        ):
            group.append(i)
            total += lengths[i]
        else:
            groups.append([i])
            total = lengths[i]
    return groups


def prefill_grouped(
    model: Any,
    input_ids: Any,
    mask: Any,
    *,
    extra_positions: int,
    repeats: int,
    forward_kwargs: dict[str, Any],
) -> tuple[Any, Any] | None:
    """Run the left-padded prompts of ``input_ids`` through ``model`` in groups of similar length
    (:func:`length_groups`), each group padded only to its own longest prompt, and gather their
    KV caches into one preallocated cache (room for ``extra_positions`` more, each prompt's rows
    repeated ``repeats`` times), laid out as a prefill of the whole padded batch would leave it.
    Padding to the longest prompt of the batch costs compute in every layer (a third more tokens
    than the prompts hold on the benchmark's real states) and masked attention.

    Returns ``(cache, last_logits)`` (float32 logits of each prompt's last position), or None when
    grouping does not apply: a single group, or a model whose cache is not made of plain
    ``DynamicLayer`` s (sliding windows, linear attention)."""
    import torch
    from transformers.cache_utils import DynamicLayer

    lengths = mask.sum(-1).tolist()
    groups = length_groups(lengths)
    if len(groups) < 2:
        return None
    prompts, total = input_ids.shape
    grow = _growing_layer_class()
    cache = None
    logits = None
    for group in groups:
        width = max(lengths[i] for i in group)
        index = torch.tensor(group, device=input_ids.device)
        ids = input_ids.index_select(0, index)[:, total - width :]
        sub_mask = mask.index_select(0, index)[:, total - width :]
        positions = (sub_mask.cumsum(-1) - 1).clamp(min=0)
        out = model(
            input_ids=ids,
            attention_mask=sub_mask,
            position_ids=positions,
            use_cache=True,
            **forward_kwargs,
        )
        layers = getattr(out.past_key_values, "layers", None)
        if cache is None:
            plain = layers and all(
                type(layer) is DynamicLayer
                and layer.is_initialized
                and getattr(layer, "keys", None) is not None
                and layer.keys.dim() == 4
                for layer in layers
            )
            if not plain:
                return None
            cache = out.past_key_values
            big = []
            for layer in layers:
                new = grow()
                new.allocate(
                    layer.keys,
                    prompts * repeats,
                    total + extra_positions,
                    total,
                    total - min(lengths),
                )
                big.append(new)
            last = out.logits[:, -1, :].float()
            logits = last.new_empty((prompts, last.shape[-1]))
        else:
            last = out.logits[:, -1, :].float()
        logits[index] = last
        for new, layer in zip(big, layers, strict=True):
            new.write_rows(group, repeats, layer.keys, layer.values)
        del out
    cache.layers[:] = big
    return cache, logits


def drop_rows(cache: Any, keep: list[int]) -> list[int]:
    """Shrink the batch of ``cache`` to the rows ``keep`` (sorted positions of the rows still
    running) and return the new order: position ``i`` of the smaller batch holds the old row
    ``order[i]``.

    Rows that have ended are filled with running rows taken from the end of the batch, so a
    preallocated layer copies only as many rows as have ended, in place (no new buffers), instead
    of every row after the first that ended. Other layers select ``order``."""
    import torch

    rows = len(keep)
    kept = set(keep)
    holes = [b for b in range(rows) if b not in kept]
    sources = [b for b in keep if b >= rows]  # as many as holes
    order = list(range(rows))
    for h, src in zip(holes, sources, strict=True):
        order[h] = src
    device = _cache_device(cache)
    layers = getattr(cache, "layers", None)
    if not layers:
        cache.batch_select_indices(torch.tensor(order, device=device))
        return order
    grow = _growing_layer_class()
    holes_t = torch.tensor(holes, dtype=torch.long, device=device)
    sources_t = torch.tensor(sources, dtype=torch.long, device=device)
    order_t = None
    for layer in layers:
        if isinstance(layer, grow):
            layer.compact(holes_t, sources_t, rows)
        elif getattr(layer, "is_initialized", False):
            if order_t is None:
                order_t = torch.tensor(order, dtype=torch.long, device=device)
            layer.batch_select_indices(order_t)
    return order


def _cache_device(cache: Any) -> Any:
    for layer in getattr(cache, "layers", None) or ():
        keys = getattr(layer, "keys", None)
        if keys is not None and hasattr(keys, "device"):
            return keys.device
    return None


def next_tokens(
    logits: Any,
    *,
    greedy: bool,
    temperature: float,
    top_p: float,
    shortlist: int = SHORTLIST,
    generator: Any = None,
    sync_free: bool | None = None,
) -> Any:
    """One token per row of ``logits`` (float, ``(rows, vocab)``): the argmax when ``greedy``,
    else a sample from ``softmax(logits / temperature)`` restricted to its top-p nucleus (the
    smallest set of most likely tokens whose mass reaches ``top_p``, as ``TopPLogitsWarper``),
    drawn with ``generator`` (None: torch's global RNG).

    ``sync_free`` (default: on any device but the CPU) sorts the whole vocabulary of every row, as
    the warper does, instead of trying a ``shortlist`` first: the shortlist must ask the device
    whether it held enough mass, and on a GPU that wait costs more than the sort."""
    import torch

    if greedy:
        return logits.argmax(dim=-1)
    scores = logits / temperature if temperature != 1.0 else logits
    if top_p >= 1.0:
        return torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator).squeeze(1)
    if sync_free is None:
        sync_free = scores.device.type != "cpu"
    rows, vocab = scores.shape
    if sync_free:
        ordered, idx = scores.sort(dim=-1, descending=True)
        choice = _sample_nucleus(torch.softmax(ordered, dim=-1), top_p, generator)
        return idx.gather(1, choice[:, None]).squeeze(1)
    out = torch.empty(rows, dtype=torch.long, device=scores.device)
    todo = torch.arange(rows, device=scores.device)  # rows not sampled yet
    sub_scores = scores
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    k = min(shortlist, vocab)
    while True:
        top, idx = sub_scores.topk(k, dim=-1)  # sorted, best first
        probs = torch.exp(top - lse)
        covered = probs.sum(dim=-1) >= top_p
        if k >= vocab or bool(covered.all()):  # the one question asked of the device
            if todo.shape[0] == rows:
                return idx.gather(1, _sample_nucleus(probs, top_p, generator)[:, None]).squeeze(1)
            covered = torch.ones_like(covered)
        done = covered.nonzero().squeeze(1)
        if done.numel():
            choice = _sample_nucleus(probs.index_select(0, done), top_p, generator)
            picked = idx.index_select(0, done).gather(1, choice[:, None]).squeeze(1)
            out[todo.index_select(0, done)] = picked
        if todo.shape[0] == done.shape[0]:
            return out
        rest = (~covered).nonzero().squeeze(1)  # the shortlist holds < top_p: widen it
        todo, sub_scores, lse = todo[rest], sub_scores[rest], lse[rest]
        k = min(k * 16, vocab)


def _sample_nucleus(sorted_probs: Any, top_p: float, generator: Any = None) -> Any:
    """Sample a column of ``sorted_probs`` (descending, rows holding at least ``top_p`` of their
    mass) among the columns whose preceding mass is below ``top_p``."""
    import torch

    before = sorted_probs.cumsum(dim=-1) - sorted_probs
    kept = sorted_probs.masked_fill(before >= top_p, 0.0)
    kept[:, 0] = sorted_probs[:, 0]  # at least one token, as min_tokens_to_keep=1
    return torch.multinomial(kept, 1, generator=generator).squeeze(1)


CHECK_EVERY = 4
"""Decoding steps between two looks at the generated tokens on a GPU (on a CPU: every step).
Looking means waiting for the device; in between it runs ahead. A sequence that ended inside a
window is cut where it ended, at the cost of at most ``CHECK_EVERY - 1`` wasted steps of its row."""


def check_left_padded(mask: Any) -> None:
    """Raise :class:`~lean_dojo_v2.errors.ModelError` unless every row of the attention ``mask``
    is left-padded (its zeros, if any, come before its ones): decoding takes each row's last
    position as its newest token and numbers positions from the first real one."""
    from ..errors import ModelError

    if mask.shape[1] > 1 and not bool((mask[:, 1:] >= mask[:, :-1]).all()):
        raise ModelError(
            "decoding needs left-padded prompts, but the attention mask has padding after a real "
            "token; tokenize with padding_side='left'"
        )


def decode_causal(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    *,
    num_samples: int,
    max_new_tokens: int,
    stop_ids: Sequence[int],
    greedy: bool,
    temperature: float,
    top_p: float,
    finished: Callable[[int, list[int]], bool] | None = None,
    share_prompt: bool = True,
    logits_to_keep: bool = True,
    preallocate_cache: bool = True,
    group_prompts: bool = True,
    generator: Any = None,
    check_every: int | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """Decode ``num_samples`` continuations of each left-padded prompt of ``input_ids`` (a
    right-padded mask is a :class:`~lean_dojo_v2.errors.ModelError`).

    Returns, per sequence (prompt-major: the samples of prompt 0 first), its generated token ids
    (up to and including the token that ended it) and each token's log-probability under the
    model (temperature 1). A sequence ends at a token of ``stop_ids``, when ``finished(row, ids)``
    says its text is complete (``row`` numbers the sequences as in the result; called with each
    longer prefix of the row's tokens in turn until it says yes), or after ``max_new_tokens``.
    Run under ``torch.inference_mode()``. Sampling draws from ``generator`` (None: torch's global
    RNG).

    ``share_prompt``: run each prompt once and copy its cache to its samples (else the prompts are
    repeated first). ``logits_to_keep``: the model's forward takes it (the LM head is skipped on
    prompt positions). ``preallocate_cache``: decode into preallocated KV buffers.
    ``group_prompts``: with ``preallocate_cache``, prefill prompts in groups of similar length.
    ``check_every``: steps between looks at the tokens on the host (default: 1 on a CPU,
    :data:`CHECK_EVERY` elsewhere); ended sequences leave the batch at those looks.
    The switches change speed, not results (beyond float32 rounding, and which random numbers a
    sample draws); tests compare them."""
    import torch

    check_left_padded(attention_mask)
    device = input_ids.device
    mask = attention_mask.long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    extra = {"logits_to_keep": 1} if logits_to_keep else {}
    if not share_prompt and num_samples > 1:
        input_ids = input_ids.repeat_interleave(num_samples, dim=0)
        mask = mask.repeat_interleave(num_samples, dim=0)
        positions = positions.repeat_interleave(num_samples, dim=0)
    repeats = num_samples if share_prompt and num_samples > 1 else 1
    grouped = None
    if preallocate_cache and group_prompts:
        grouped = prefill_grouped(
            model,
            input_ids,
            mask,
            extra_positions=max_new_tokens,
            repeats=repeats,
            forward_kwargs=extra,
        )
    if grouped is not None:
        cache, logits = grouped
    else:
        out = model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **extra,
        )
        cache = out.past_key_values
        logits = out.logits[:, -1, :].float()
        del out
        if preallocate_cache:
            preallocate(cache, max_new_tokens, repeats)
        elif repeats > 1:
            cache.batch_repeat_interleave(repeats)
    if repeats > 1:
        logits = logits.repeat_interleave(repeats, dim=0)
        mask = mask.repeat_interleave(repeats, dim=0)
        positions = positions.repeat_interleave(repeats, dim=0)
    rows, width = mask.shape
    if check_every is None:
        check_every = 1 if device.type == "cpu" else CHECK_EVERY
    check_every = max(1, int(check_every))
    # The whole mask at once (the prompt's, then ones), passed as a growing view: no new
    # tensor per step. Generated tokens and their log-probs stay on the device, by sequence.
    full_mask = mask.new_ones((rows, width + max_new_tokens))
    full_mask[:, :width] = mask
    token_buf = torch.zeros((rows, max_new_tokens), dtype=torch.long, device=device)
    logp_buf = torch.zeros((rows, max_new_tokens), dtype=torch.float32, device=device)
    row_ids = torch.arange(rows, device=device)  # the sequence at each batch position
    stop_set = frozenset(int(t) for t in stop_ids)
    tokens: list[list[int]] = [[] for _ in range(rows)]  # the host's copy, cut where each ended
    active_rows = list(range(rows))
    position = positions[:, -1]
    looked = 0  # steps the host has seen
    for step in range(max_new_tokens):
        chosen = next_tokens(
            logits, greedy=greedy, temperature=temperature, top_p=top_p, generator=generator
        )
        logp = logits.gather(1, chosen[:, None]).squeeze(1) - torch.logsumexp(logits, dim=-1)
        token_buf[row_ids, step] = chosen
        logp_buf[row_ids, step] = logp
        last = step + 1 == max_new_tokens
        if last or step + 1 - looked >= check_every:
            # One transfer for the whole window: the only wait for the device in the loop.
            window = token_buf[row_ids, looked : step + 1].tolist()
            looked = step + 1
            keep = [
                b
                for b, row in enumerate(active_rows)
                if not _extend(tokens[row], window[b], row, stop_set, finished)
            ]
            if not keep or last:
                break
            if len(keep) < len(active_rows):
                order = drop_rows(cache, keep)
                _compact(full_mask, order)
                sel = torch.tensor(order, device=device)
                chosen, position, row_ids = chosen[sel], position[sel], row_ids[sel]
                active_rows = [active_rows[b] for b in order]
        position = position + 1
        out = model(
            input_ids=chosen[:, None],
            attention_mask=full_mask[: len(active_rows), : width + step + 1],
            position_ids=position[:, None],
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        logits = out.logits[:, -1, :].float()
        del out
    logps = logp_buf.tolist()
    return tokens, [lp[: len(ids)] for lp, ids in zip(logps, tokens, strict=True)]


def _extend(
    ids: list[int],
    new: list[int],
    row: int,
    stops: frozenset[int],
    finished: Callable[[int, list[int]], bool] | None,
) -> bool:
    """Append the ``new`` tokens of a sequence to ``ids`` one by one, stopping after the one that
    ends it (a stop token, or ``finished`` says so); whether it has ended."""
    for token in new:
        ids.append(token)
        if token in stops or (finished is not None and finished(row, ids)):
            return True
    return False


def _compact(buf: Any, order: list[int]) -> None:
    """Rearrange the first rows of ``buf`` in place so that row ``i`` holds old row ``order[i]``
    (the order :func:`drop_rows` returns: only the rows that change are copied)."""
    import torch

    holes = [i for i, src in enumerate(order) if src != i]
    if holes:
        index = torch.tensor(holes, device=buf.device)
        sources = torch.tensor([order[i] for i in holes], device=buf.device)
        buf.index_copy_(0, index, buf.index_select(0, sources))
