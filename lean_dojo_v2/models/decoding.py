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
* writes keys and values into a preallocated buffer (:class:`~.kv_cache.GrowingLayer`) instead of
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

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from transformers.cache_utils import Cache

SHORTLIST = 64
"""Candidates per row examined first by top-p sampling; rows where they hold less than top_p of
the mass are tried again with 16 times as many, up to the whole vocabulary."""


def preallocate(cache: Cache, extra: int, repeats: int = 1) -> None:
    """Give each plain ``DynamicLayer`` of ``cache`` (after the prompt) room for ``extra`` more
    positions, and repeat each of its rows ``repeats`` times (consecutively, as
    ``batch_repeat_interleave``); other layer kinds (sliding window, linear attention) are only
    repeated."""
    from .kv_cache import GrowingLayer

    layers = getattr(cache, "layers", None)
    if not layers:
        if repeats > 1:
            cache.batch_repeat_interleave(repeats)
        return
    for i, layer in enumerate(layers):
        kv = _plain_kv(layer)
        if kv is None:
            if repeats > 1:
                layer.batch_repeat_interleave(repeats)
            continue
        keys, values = kv
        new = GrowingLayer()
        new.adopt(keys, values, keys.shape[2] + extra, repeats)
        layers[i] = new


def _plain_kv(layer: object) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The keys and values of ``layer`` when it is a plain, initialised ``DynamicLayer`` with
    ``(rows, heads, length, dim)`` keys (what a :class:`~.kv_cache.GrowingLayer` can take
    over); None for any other layer kind."""
    from transformers.cache_utils import DynamicLayer

    if type(layer) is not DynamicLayer or not layer.is_initialized:
        return None
    keys, values = layer.keys, layer.values
    if keys is None or values is None or keys.dim() != 4:
        return None
    return keys, values


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
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    mask: torch.Tensor,
    *,
    extra_positions: int,
    repeats: int,
    forward_kwargs: Mapping[str, object],
) -> tuple[Cache, torch.Tensor] | None:
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

    from .kv_cache import GrowingLayer

    lengths = mask.sum(-1).tolist()
    groups = length_groups(lengths)
    if len(groups) < 2:
        return None
    prompts, total = input_ids.shape
    cache: Cache | None = None
    logits: torch.Tensor | None = None
    big: list[GrowingLayer] = []
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
        # Every group's model gives the same layer kinds: only the first group can say no.
        layers = [_plain_kv(layer) for layer in getattr(out.past_key_values, "layers", None) or ()]
        kvs = [kv for kv in layers if kv is not None]
        if not kvs or len(kvs) < len(layers):
            return None
        last = out.logits[:, -1, :].float()
        if logits is None:
            cache = out.past_key_values
            for keys, _ in kvs:
                new = GrowingLayer()
                new.allocate(
                    keys, prompts * repeats, total + extra_positions, total, total - min(lengths)
                )
                big.append(new)
            logits = last.new_empty((prompts, last.shape[-1]))
        logits[index] = last
        for new, (keys, values) in zip(big, kvs, strict=True):
            new.write_rows(group, repeats, keys, values)
        del out
    if cache is None or logits is None:  # pragma: no cover - two groups at least
        return None
    cache.layers[:] = big
    return cache, logits


def drop_rows(cache: Cache, keep: list[int]) -> list[int]:
    """Shrink the batch of ``cache`` to the rows ``keep`` (sorted positions of the rows still
    running) and return the new order: position ``i`` of the smaller batch holds the old row
    ``order[i]``.

    Rows that have ended are filled with running rows taken from the end of the batch, so a
    preallocated layer copies only as many rows as have ended, in place (no new buffers), instead
    of every row after the first that ended. Other layers select ``order``."""
    import torch

    from .kv_cache import GrowingLayer

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
    holes_t = torch.tensor(holes, dtype=torch.long, device=device)
    sources_t = torch.tensor(sources, dtype=torch.long, device=device)
    order_t = None
    for layer in layers:
        if isinstance(layer, GrowingLayer):
            layer.compact(holes_t, sources_t, rows)
        elif getattr(layer, "is_initialized", False):
            if order_t is None:
                order_t = torch.tensor(order, dtype=torch.long, device=device)
            layer.batch_select_indices(order_t)
    return order


def _cache_device(cache: Cache) -> torch.device | None:
    for layer in getattr(cache, "layers", None) or ():
        keys = getattr(layer, "keys", None)
        if keys is not None and hasattr(keys, "device"):
            return keys.device
    return None


def next_tokens(
    logits: torch.Tensor,
    *,
    greedy: bool,
    temperature: float,
    top_p: float,
    shortlist: int = SHORTLIST,
    generator: torch.Generator | None = None,
    sync_free: bool | None = None,
) -> torch.Tensor:
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


def _sample_nucleus(
    sorted_probs: torch.Tensor, top_p: float, generator: torch.Generator | None = None
) -> torch.Tensor:
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


def check_left_padded(mask: torch.Tensor) -> None:
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
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
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
    generator: torch.Generator | None = None,
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


def _compact(buf: torch.Tensor, order: list[int]) -> None:
    """Rearrange the first rows of ``buf`` in place so that row ``i`` holds old row ``order[i]``
    (the order :func:`drop_rows` returns: only the rows that change are copied)."""
    import torch

    holes = [i for i, src in enumerate(order) if src != i]
    if holes:
        index = torch.tensor(holes, device=buf.device)
        sources = torch.tensor([order[i] for i in holes], device=buf.device)
        buf.index_copy_(0, index, buf.index_select(0, sources))
