"""The decoding loop behind :class:`~lean_dojo_v2.models.generator.HFTacticGenerator`'s sampling
and greedy decoding of causal LMs.

``model.generate`` decodes every sequence of a batch until the last one ends, grows the KV cache
by concatenation at every step and sorts the whole vocabulary of every row for top-p. Tactics are
short and end at very different steps, so :func:`decode_causal` instead

* runs each prompt once and copies its KV cache to its samples (``share_prompt=True``);
* drops a sequence from the batch (its rows of the KV cache, mask and positions) as soon as it has
  ended, so the per-step cost follows the sequences still running;
* writes keys and values into a preallocated buffer (:class:`_GrowingLayer`) instead of
  concatenating;
* samples with top-p over a ``topk`` shortlist, falling back to a full sort only for the rows whose
  shortlist holds less than ``top_p`` of the probability mass (exact: the same distribution as
  transformers' ``TopPLogitsWarper``);
* records each chosen token's log-probability (temperature 1, before any warper) from the raw
  logits as ``logit - logsumexp``.

It only calls the model's forward pass with a ``DynamicCache``, so it works for any decoder-only
model that transformers can ``generate`` with, on CPU or GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SHORTLIST = 64
"""Candidates per row examined first by top-p sampling; rows where they hold less than top_p of
the mass are tried again with 16 times as many, up to the whole vocabulary."""


def _growing_layer_class():
    from transformers.cache_utils import DynamicLayer

    class _GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` whose keys/values live in a buffer with room for ``capacity``
        positions: an update writes in place and returns views, instead of copying the whole
        cache into a new tensor at every step."""

        def adopt(self, keys: Any, values: Any, capacity: int) -> None:
            import torch

            rows, heads, length, _ = keys.shape
            self._kbuf = torch.empty(
                (rows, heads, capacity, keys.shape[-1]), dtype=keys.dtype, device=keys.device
            )
            self._vbuf = torch.empty(
                (rows, heads, capacity, values.shape[-1]), dtype=values.dtype, device=values.device
            )
            self._kbuf[:, :, :length] = keys
            self._vbuf[:, :, :length] = values
            self._len = length
            self.dtype, self.device = keys.dtype, keys.device
            self.is_initialized = True
            self._views()

        def _views(self) -> None:
            self.keys = self._kbuf[:, :, : self._len]
            self.values = self._vbuf[:, :, : self._len]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any):
            step = key_states.shape[-2]
            if self._len + step > self._kbuf.shape[2]:  # pragma: no cover - capacity is exact
                return super().update(key_states, value_states, *args, **kwargs)
            self._kbuf[:, :, self._len : self._len + step] = key_states
            self._vbuf[:, :, self._len : self._len + step] = value_states
            self._len += step
            self._views()
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self._len

        def batch_select_indices(self, indices: Any) -> None:
            self._kbuf = self._kbuf.index_select(0, indices)
            self._vbuf = self._vbuf.index_select(0, indices)
            self._views()

        def batch_repeat_interleave(self, repeats: int) -> None:
            self._kbuf = self._kbuf.repeat_interleave(repeats, dim=0)
            self._vbuf = self._vbuf.repeat_interleave(repeats, dim=0)
            self._views()

        def crop(self, tokens_to_remove: int) -> None:  # pragma: no cover - not used here
            raise NotImplementedError("a generation cache is not cropped")

    return _GrowingLayer


def preallocate(cache: Any, extra: int) -> None:
    """Give each plain ``DynamicLayer`` of ``cache`` (after the prompt) room for ``extra`` more
    positions; other layer kinds (sliding window, linear attention) are left as they are."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers:
        return
    grow = _growing_layer_class()
    for i, layer in enumerate(layers):
        if type(layer) is not DynamicLayer or not layer.is_initialized:
            continue
        keys, values = layer.keys, layer.values
        if keys is None or keys.dim() != 4:
            continue
        new = grow()
        new.adopt(keys, values, keys.shape[2] + extra)
        layers[i] = new


def next_tokens(
    logits: Any, *, greedy: bool, temperature: float, top_p: float, shortlist: int = SHORTLIST
) -> Any:
    """One token per row of ``logits`` (float, ``(rows, vocab)``): the argmax when ``greedy``,
    else a sample from ``softmax(logits / temperature)`` restricted to its top-p nucleus (the
    smallest set of most likely tokens whose mass reaches ``top_p``, as ``TopPLogitsWarper``)."""
    import torch

    if greedy:
        return logits.argmax(dim=-1)
    scores = logits / temperature if temperature != 1.0 else logits
    if top_p >= 1.0:
        return torch.multinomial(torch.softmax(scores, dim=-1), 1).squeeze(1)
    rows, vocab = scores.shape
    out = torch.empty(rows, dtype=torch.long, device=scores.device)
    todo = torch.arange(rows, device=scores.device)  # rows not sampled yet
    sub_scores = scores
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    k = min(shortlist, vocab)
    while True:
        top, idx = sub_scores.topk(k, dim=-1)  # sorted, best first
        probs = torch.exp(top - lse)
        covered = probs.sum(dim=-1) >= top_p
        if k >= vocab or bool(covered.all()):
            covered = torch.ones_like(covered)
        if todo.shape[0] == rows and bool(covered.all()):
            return idx.gather(1, _sample_nucleus(probs, top_p)[:, None]).squeeze(1)
        done = covered.nonzero().squeeze(1)
        if done.numel():
            choice = _sample_nucleus(probs.index_select(0, done), top_p)
            picked = idx.index_select(0, done).gather(1, choice[:, None]).squeeze(1)
            out[todo.index_select(0, done)] = picked
        if bool(covered.all()):
            return out
        rest = (~covered).nonzero().squeeze(1)  # the shortlist holds < top_p: widen it
        todo, sub_scores, lse = todo[rest], sub_scores[rest], lse[rest]
        k = min(k * 16, vocab)


def _sample_nucleus(sorted_probs: Any, top_p: float) -> Any:
    """Sample a column of ``sorted_probs`` (descending, rows holding at least ``top_p`` of their
    mass) among the columns whose preceding mass is below ``top_p``."""
    import torch

    before = sorted_probs.cumsum(dim=-1) - sorted_probs
    kept = sorted_probs.masked_fill(before >= top_p, 0.0)
    kept[:, 0] = sorted_probs[:, 0]  # at least one token, as min_tokens_to_keep=1
    return torch.multinomial(kept, 1).squeeze(1)


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
    finished: Callable[[int, list[int]], bool],
    share_prompt: bool = True,
    logits_to_keep: bool = True,
    preallocate_cache: bool = True,
) -> tuple[list[list[int]], list[list[float]]]:
    """Decode ``num_samples`` continuations of each left-padded prompt of ``input_ids``.

    Returns, per sequence (prompt-major: the samples of prompt 0 first), its generated token ids
    (up to and including the token that ended it) and each token's log-probability under the
    model (temperature 1). A sequence ends at a token of ``stop_ids``, when ``finished(row, ids)``
    says its text is complete (``row`` numbers the sequences as in the result), or
    after ``max_new_tokens``. Run under ``torch.inference_mode()``."""
    import torch

    stops = torch.tensor(sorted(set(stop_ids)) or [-1], device=input_ids.device)
    mask = attention_mask.long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    extra = {"logits_to_keep": 1} if logits_to_keep else {}
    if not share_prompt and num_samples > 1:
        input_ids = input_ids.repeat_interleave(num_samples, dim=0)
        mask = mask.repeat_interleave(num_samples, dim=0)
        positions = positions.repeat_interleave(num_samples, dim=0)
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
        preallocate(cache, max_new_tokens)
    if share_prompt and num_samples > 1:
        cache.batch_repeat_interleave(num_samples)
        logits = logits.repeat_interleave(num_samples, dim=0)
        mask = mask.repeat_interleave(num_samples, dim=0)
        positions = positions.repeat_interleave(num_samples, dim=0)
    rows = logits.shape[0]
    tokens: list[list[int]] = [[] for _ in range(rows)]
    scores: list[list[float]] = [[] for _ in range(rows)]
    active_rows = list(range(rows))
    position = positions[:, -1]
    for step in range(max_new_tokens):
        chosen = next_tokens(logits, greedy=greedy, temperature=temperature, top_p=top_p)
        logp = logits.gather(1, chosen[:, None]).squeeze(1) - torch.logsumexp(logits, dim=-1)
        ended = torch.isin(chosen, stops)
        chosen_l, logp_l, ended_l = chosen.tolist(), logp.tolist(), ended.tolist()
        keep: list[int] = []
        for b, row in enumerate(active_rows):
            tokens[row].append(chosen_l[b])
            scores[row].append(logp_l[b])
            if not ended_l[b] and not finished(row, tokens[row]):
                keep.append(b)
        if not keep or step + 1 == max_new_tokens:
            break
        if len(keep) < len(active_rows):
            sel = torch.tensor(keep, device=input_ids.device)
            cache.batch_select_indices(sel)
            chosen, mask, position = chosen[sel], mask[sel], position[sel]
            active_rows = [active_rows[b] for b in keep]
        position = position + 1
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        out = model(
            input_ids=chosen[:, None],
            attention_mask=mask,
            position_ids=position[:, None],
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        logits = out.logits[:, -1, :].float()
        del out
    return tokens, scores
