"""The generator pads causal prompts on the left whatever the shared
tokenizer says, leaves torch's global RNG alone, and the decoding loop waits for the device only
at its looks (every ``check_every`` steps) with the same tokens as looking every step."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from lean_dojo_v2.errors import ModelError
from lean_dojo_v2.models.decoding import decode_causal, next_tokens
from lean_dojo_v2.models.generator import HFTacticGenerator

# Prompts of very different lengths: right padding would put many pad tokens after the short ones.
STATES = [
    "⊢ True",
    "a b c : ℕ\nh₁ : a ≤ b\nh₂ : b ≤ c\nh₃ : c ≤ a + 1\n⊢ a ≤ c ∧ c ≤ a + 1 ∧ b ≤ a + 1",
    "n : ℕ\n⊢ n + 0 = n",
    "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q",
]

LOGPROB_TOL = 1e-4
"""Left vs right tokenizer setting: the same padded batch either way once the generator pads, so
equal up to float32 rounding (see tests/models/test_generator.py's FORWARD_TOL)."""


def _with_padding_side(loaded, side: str):
    """``loaded`` with its own copy of the tokenizer, set to pad on ``side`` (the session's
    fixture is shared and must not change)."""
    tok = copy.deepcopy(loaded.tokenizer)
    tok.padding_side = side
    return dataclasses.replace(loaded, tokenizer=tok)


def _same(a, b) -> None:
    assert [[c.tactic for c in cs] for cs in a] == [[c.tactic for c in cs] for cs in b]
    for xs, ys in zip(a, b, strict=True):
        for x, y in zip(xs, ys, strict=True):
            assert abs(x.logprob - y.logprob) < LOGPROB_TOL


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_a_right_padding_tokenizer_gives_the_same_tactics_as_left(tiny_causal, strategy):
    left = _with_padding_side(tiny_causal, "left")
    right = _with_padding_side(tiny_causal, "right")  # as SFTTrainer leaves a shared tokenizer
    kw = dict(strategy=strategy, max_new_tokens=8, seed=0, batch_size=len(STATES))
    a = HFTacticGenerator(left, **kw).generate(STATES, 3)
    b = HFTacticGenerator(right, **kw).generate(STATES, 3)
    assert sum(len(cs) for cs in a) >= len(STATES)  # not vacuous
    _same(a, b)
    # One state at a time needs no padding: the batched answers are the model's own.
    if strategy == "greedy":
        single = HFTacticGenerator(right, **{**kw, "batch_size": 1}).generate(STATES, 3)
        _same(b, single)
    assert right.tokenizer.padding_side == "right"  # the shared setting is left as it was


@pytest.mark.parametrize("strategy", ["greedy", "sample"])
def test_seq2seq_encoders_do_not_care_where_the_padding_is(tiny_seq2seq, strategy):
    # The random T5 ends at once when free; a prefix makes it write something to compare.
    kw = dict(strategy=strategy, max_new_tokens=6, seed=0, batch_size=len(STATES))
    a = HFTacticGenerator(_with_padding_side(tiny_seq2seq, "right"), **kw)
    b = HFTacticGenerator(_with_padding_side(tiny_seq2seq, "left"), **kw)
    out_a = a.generate(STATES, 2, prefix="simp")
    _same(out_a, b.generate(STATES, 2, prefix="simp"))
    # ... and, with the attention mask, padding does not change an encoder's answer at all.
    single = HFTacticGenerator(tiny_seq2seq, **{**kw, "batch_size": 1, "strategy": "greedy"})
    if strategy == "greedy":
        _same(out_a, single.generate(STATES, 2, prefix="simp"))


def test_decoding_a_right_padded_batch_is_a_clear_error(tiny_causal):
    import torch

    tok = tiny_causal.tokenizer
    enc = tok(STATES[:2], return_tensors="pt", padding=True, padding_side="right")
    with torch.inference_mode(), pytest.raises(ModelError, match="left-padded"):
        decode_causal(
            tiny_causal.model,
            enc["input_ids"],
            enc["attention_mask"],
            num_samples=1,
            max_new_tokens=2,
            stop_ids=[],
            greedy=True,
            temperature=1.0,
            top_p=1.0,
        )


@pytest.mark.parametrize("which,strategy", [("tiny_causal", "sample"), ("tiny_seq2seq", "sample")])
def test_seeded_generation_leaves_the_global_rng_alone(which, strategy, request):
    import torch

    loaded = request.getfixturevalue(which)
    prefix = "simp" if loaded.kind == "seq2seq" else None
    gen = HFTacticGenerator(loaded, strategy=strategy, max_new_tokens=6, seed=7)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = gen.generate(STATES[:2], 4, prefix=prefix)
    assert torch.equal(torch.get_rng_state(), before)
    # Reproducible whatever the global state, and the same for a second generator.
    torch.manual_seed(999)
    assert gen.generate(STATES[:2], 4, prefix=prefix) == first
    again = HFTacticGenerator(loaded, strategy=strategy, max_new_tokens=6, seed=7)
    assert again.generate(STATES[:2], 4, prefix=prefix) == first


def test_without_a_seed_sampling_follows_the_global_rng(tiny_causal):
    import torch

    gen = HFTacticGenerator(tiny_causal, strategy="sample", max_new_tokens=6)
    torch.manual_seed(5)
    a = gen.generate(STATES[:2], 4)
    torch.manual_seed(5)
    assert gen.generate(STATES[:2], 4) == a


def _encode(loaded, states):
    gen = HFTacticGenerator(loaded, strategy="greedy")
    enc = loaded.tokenizer(gen.prompts(states), return_tensors="pt", padding=True)
    return enc["input_ids"], enc["attention_mask"]


def _decode(loaded, ids, mask, **kw):
    import torch

    kw.setdefault("num_samples", 3)
    kw.setdefault("max_new_tokens", 8)
    kw.setdefault("stop_ids", [loaded.tokenizer.eos_token_id])
    kw.setdefault("temperature", 0.9)
    kw.setdefault("top_p", 0.9)
    with torch.inference_mode():
        return decode_causal(loaded.model, ids, mask, **kw)


@pytest.mark.parametrize("check_every", [2, 3, 8])
def test_looking_every_k_steps_gives_the_tokens_of_looking_every_step(tiny_causal, check_every):
    ids, mask = _encode(tiny_causal, STATES)
    # Rows end at different steps, inside the windows between two looks.
    ends = {0: 1, 1: 2, 4: 4, 7: 5}

    def finished(row, toks):
        return len(toks) >= ends.get(row, 99)

    every_step = _decode(tiny_causal, ids, mask, greedy=True, finished=finished, check_every=1)
    windowed = _decode(
        tiny_causal, ids, mask, greedy=True, finished=finished, check_every=check_every
    )
    assert every_step[0] == windowed[0]
    for a, b in zip(every_step[1], windowed[1], strict=True):
        assert len(a) == len(b) and all(abs(x - y) < 1e-5 for x, y in zip(a, b, strict=True))
    assert [len(t) for t in windowed[0]][:8] == [1, 2, 8, 8, 4, 8, 8, 5]


def test_rows_leave_the_batch_at_the_next_look(tiny_causal, monkeypatch):
    model = tiny_causal.model
    ids, mask = _encode(tiny_causal, STATES[:2])
    widths = []
    original = model.forward

    def forward(*args, **kwargs):
        widths.append(kwargs["input_ids"].shape[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forward)
    tokens, scores = _decode(
        tiny_causal,
        ids,
        mask,
        max_new_tokens=5,
        stop_ids=[],
        greedy=False,
        top_p=1.0,
        finished=lambda row, toks: row % 2 == 1 and len(toks) >= 2,
        check_every=3,
        group_prompts=False,
    )
    assert [len(t) for t in tokens] == [5, 2, 5, 2, 5, 2]  # cut where they ended
    assert [len(s) for s in scores] == [len(t) for t in tokens]
    # The prompts, two steps of all 6 rows before the look at step 3, then the 3 still running.
    assert widths == [2, 6, 6, 3, 3]


def test_the_decode_loop_waits_for_the_device_only_at_its_looks(tiny_causal, monkeypatch):
    """A read of a tensor's value on the host (``tolist``, ``item``, ``bool``) waits for a GPU to
    finish all queued work; the loop used to do four a step. Counted: the
    reads made by the decoding module itself (the model's forward makes its own)."""
    import sys

    import torch

    import lean_dojo_v2.models.decoding as decoding

    ids, mask = _encode(tiny_causal, STATES[:2])
    reads = []
    for name in ("tolist", "item", "__bool__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            if sys._getframe(1).f_code.co_filename == decoding.__file__:
                reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    steps = 12
    tokens, _ = _decode(
        tiny_causal,
        ids,
        mask,
        max_new_tokens=steps,
        stop_ids=[],
        greedy=True,
        finished=None,
        check_every=4,
    )
    monkeypatch.undo()
    assert all(len(t) == steps for t in tokens)
    # The padding check, the prompt lengths (grouping), a look every 4 steps, the scores.
    assert len(reads) <= 2 + steps // 4 + 1, reads


@pytest.mark.parametrize("sync_free", [False, True])
def test_top_p_draws_from_the_given_generator(sync_free):
    import torch

    logits = torch.randn(5, 300, generator=torch.Generator().manual_seed(0)) * 3
    before = torch.get_rng_state()

    def draw(seed):
        rng = torch.Generator().manual_seed(seed)
        return next_tokens(
            logits, greedy=False, temperature=0.7, top_p=0.9, generator=rng, sync_free=sync_free
        ).tolist()

    assert draw(1) == draw(1)
    assert torch.equal(torch.get_rng_state(), before)
    assert len({tuple(draw(s)) for s in range(6)}) > 1  # it does sample
