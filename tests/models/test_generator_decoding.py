"""The causal decoding loop (``lean_dojo_v2.models.decoding``): exact top-p over a shortlist,
finished sequences leaving the batch, the preallocated KV cache."""

from __future__ import annotations

import pytest

from lean_dojo_v2.models.decoding import decode_causal, length_groups, next_tokens
from lean_dojo_v2.models.generator import HFTacticGenerator

STATES = ["n : ℕ\n⊢ n + 0 = n", "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q", "⊢ True"]


def _nucleus(logits, temperature: float, top_p: float):
    """transformers' own top-p support: tokens its warper leaves finite."""
    from transformers import TopPLogitsWarper

    warped = TopPLogitsWarper(top_p)(None, logits / temperature)
    return warped.isfinite()


@pytest.mark.parametrize("scale", [0.05, 1.0, 8.0])  # flat (needs the full sort) .. peaked
def test_top_p_shortlist_samples_exactly_the_warpers_nucleus(scale):
    import torch

    torch.manual_seed(0)
    vocab, draws = 5000, 4000
    logits = torch.randn(1, vocab) * scale
    allowed = _nucleus(logits, 0.8, 0.9)[0]
    picked = next_tokens(
        logits.expand(draws, vocab).contiguous(), greedy=False, temperature=0.8, top_p=0.9
    )
    assert bool(allowed[picked].all())  # never outside the nucleus
    if int(allowed.sum()) <= 20:  # a small nucleus: every member is drawn, in proportion
        probs = torch.softmax(logits[0] / 0.8, -1) * allowed
        probs = probs / probs.sum()
        freq = torch.bincount(picked, minlength=vocab).double() / draws
        assert set(freq.nonzero().squeeze(1).tolist()) == set(allowed.nonzero().squeeze(1).tolist())
        assert float((freq - probs).abs().max()) < 0.04
    else:  # a wide nucleus (beyond the first shortlist): draws spread over it
        assert len(set(picked.tolist())) > 1000


def test_top_p_mixes_rows_that_need_the_full_sort_with_rows_that_do_not():
    import torch

    torch.manual_seed(1)
    vocab = 3000
    logits = torch.randn(6, vocab) * torch.tensor([[0.01], [10.0], [0.5], [20.0], [2.0], [0.01]])
    allowed = _nucleus(logits, 1.0, 0.95)
    for _ in range(50):
        picked = next_tokens(logits, greedy=False, temperature=1.0, top_p=0.95)
        assert bool(allowed.gather(1, picked[:, None]).all())
    assert next_tokens(logits, greedy=True, temperature=1.0, top_p=0.95).tolist() == (
        logits.argmax(-1).tolist()
    )


def _encode(loaded, states):
    gen = HFTacticGenerator(loaded, strategy="greedy", max_new_tokens=6)
    enc = loaded.tokenizer(gen.prompts(states), return_tensors="pt", padding=True)
    return enc["input_ids"], enc["attention_mask"]


def test_finished_sequences_leave_the_batch(tiny_causal, monkeypatch):
    import torch

    model = tiny_causal.model
    ids, mask = _encode(tiny_causal, STATES[:2])
    widths = []
    original = model.forward

    def forward(*args, **kwargs):
        widths.append(kwargs["input_ids"].shape[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forward)
    # Odd rows finish after their second token; even rows run to max_new_tokens.
    with torch.inference_mode():
        tokens, scores = decode_causal(
            model,
            ids,
            mask,
            num_samples=3,
            max_new_tokens=5,
            stop_ids=[],
            greedy=False,
            temperature=1.0,
            top_p=1.0,
            finished=lambda row, toks: row % 2 == 1 and len(toks) >= 2,
        )
    assert [len(t) for t in tokens] == [5, 2, 5, 2, 5, 2]
    assert [len(s) for s in scores] == [len(t) for t in tokens]
    # Prompt once per state, then 6 rows, then only the 3 that are still running.
    assert widths == [2, 6, 3, 3, 3]


def _assert_option_changes_nothing(loaded, states, option, *, seed, num_samples, greedy):
    """Decode ``states`` with ``option=True`` and ``option=False`` from the same seed: the same
    tokens, log-probs within 1e-5."""
    import torch

    ids, mask = _encode(loaded, states)
    runs = []
    for value in (True, False):
        torch.manual_seed(seed)
        with torch.inference_mode():
            runs.append(
                decode_causal(
                    loaded.model,
                    ids,
                    mask,
                    num_samples=num_samples,
                    max_new_tokens=8,
                    stop_ids=[loaded.tokenizer.eos_token_id],
                    greedy=greedy,
                    temperature=0.9,
                    top_p=0.9,
                    finished=lambda row, toks: False,
                    **{option: value},
                )
            )
    (tok_a, lp_a), (tok_b, lp_b) = runs
    assert tok_a == tok_b
    for a, b in zip(lp_a, lp_b, strict=True):
        assert all(abs(x - y) < 1e-5 for x, y in zip(a, b, strict=True))


def test_preallocated_cache_decodes_like_the_dynamic_cache(tiny_causal):
    _assert_option_changes_nothing(
        tiny_causal, STATES, "preallocate_cache", seed=5, num_samples=4, greedy=False
    )


def test_length_groups_bound_the_padding_and_cover_every_prompt():
    lengths = [176, 216, 125, 163, 141, 142, 118, 132, 134, 180, 137, 155, 136, 127, 152, 151]
    groups = length_groups(lengths, slack=0.15)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert len(groups) > 1
    for g in groups:
        real = sum(lengths[i] for i in g)
        assert len(g) * max(lengths[i] for i in g) <= 1.15 * real
    assert length_groups([5, 5, 5]) == [[0, 1, 2]]
    assert length_groups([]) == []


LONG_AND_SHORT = [
    "⊢ True",
    "a b c : ℕ\nh₁ : a ≤ b\nh₂ : b ≤ c\nh₃ : c ≤ a + 1\n⊢ a ≤ c ∧ c ≤ a + 1 ∧ b ≤ a + 1 ∧ a + b ≤ 2 * c",
    "n : ℕ\n⊢ n + 0 = n",
]


@pytest.mark.parametrize("greedy", [True, False])
def test_grouped_prefill_decodes_like_one_padded_prefill(tiny_causal, greedy):
    _, mask = _encode(tiny_causal, LONG_AND_SHORT)
    assert len(length_groups(mask.sum(-1).tolist())) > 1  # the grouping is exercised
    _assert_option_changes_nothing(
        tiny_causal, LONG_AND_SHORT, "group_prompts", seed=11, num_samples=3, greedy=greedy
    )
