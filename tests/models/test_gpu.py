"""The CUDA / bfloat16 paths of the models layer and of SFT, on the tiny models (seconds on any GPU).

Skipped without CUDA. On a machine with a GPU, one command checks them:

    .venv/bin/python -m pytest -m gpu tests/models/test_gpu.py -q

What they check: every tensor the generator creates lives on the model's device (a CPU tensor
mixed in fails at once on CUDA); log-probs are computed in float32 from bf16 logits (finite, <= 0,
equal to a float32 forward pass of the same bf16 model within bf16 rounding); batched greedy
decoding in float32 on CUDA equals one state at a time (1e-4, as on CPU); beam search and
seq2seq run; a few LoRA SFT steps train on CUDA in bf16, save an adapter that reloads and
generates. And the two paths of the decoding loop that a few short states never reach: rows that
end at different steps leaving the batch (``drop_rows``) and prompts of several lengths prefilled
in groups (``prefill_grouped``), each spied on to show it ran, decode token for token as
transformers' own greedy ``generate`` of the same left-padded batch, in float32 and in bf16.
"""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.gpu

STATES = [
    "n : ℕ\n⊢ n + 0 = n",
    "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1 ∧ b * b + 3 ≥ a",
    "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q",
]


@pytest.fixture(scope="module", autouse=True)
def _needs_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def _cuda_model(path, dtype: str):
    from lean_dojo_v2.models import load_model

    loaded = load_model(str(path), device="cuda", dtype=dtype)
    assert loaded.device.startswith("cuda")
    return loaded


def test_cuda_bf16_generation_logprobs_are_fp32_and_match_a_forward_pass(tiny_causal_dir):
    import torch

    from lean_dojo_v2.models.generator import HFTacticGenerator

    loaded = _cuda_model(tiny_causal_dir, "bfloat16")
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    gen = HFTacticGenerator(loaded, strategy="sample", max_new_tokens=8, seed=0)
    rows_seen = []
    original = gen._decode_rows

    def capture(*args, **kwargs):
        rows_seen.append(original(*args, **kwargs))
        return rows_seen[-1]

    gen._decode_rows = capture
    out = gen.generate(STATES, 4)
    assert len(out) == len(STATES) and sum(len(c) for c in out) >= len(STATES)
    for cands in out:
        assert all(math.isfinite(c.logprob) and c.logprob <= 0 for c in cands)
    ((rows, logprobs),) = rows_seen
    # Per token: the generator's log-prob (float32 from the bf16 logits) vs a direct forward pass.
    tok, model = loaded.tokenizer, loaded.model
    per_state = len(rows) // len(STATES)
    checked = 0
    for r, ids in enumerate(rows[:per_state]):  # the first state's samples
        prompt = tok(gen.prompts(STATES[:1])[0], add_special_tokens=False).input_ids
        full = torch.tensor([prompt + ids], device=loaded.device)
        with torch.inference_mode():
            lp = torch.log_softmax(model(input_ids=full).logits[0].float(), -1)
        ref = [float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(ids)]
        # bf16 activations: incremental and one-shot differ by bf16 rounding, not float32.
        assert all(abs(a - b) < 0.1 for a, b in zip(logprobs[r], ref, strict=True))
        checked += len(ids)
    assert checked > 0


def test_cuda_fp32_batched_greedy_equals_one_by_one(tiny_causal_dir):
    from lean_dojo_v2.models.generator import HFTacticGenerator

    loaded = _cuda_model(tiny_causal_dir, "float32")
    batched = HFTacticGenerator(loaded, strategy="greedy", max_new_tokens=10).generate(STATES, 1)
    single = HFTacticGenerator(loaded, strategy="greedy", max_new_tokens=10, batch_size=1)
    one_by_one = [single.generate([s], 1)[0] for s in STATES]
    assert [[c.tactic for c in cs] for cs in batched] == [
        [c.tactic for c in cs] for cs in one_by_one
    ]
    for b, o in zip(batched, one_by_one, strict=True):
        assert all(abs(x.logprob - y.logprob) < 1e-4 for x, y in zip(b, o, strict=True))


@pytest.mark.parametrize("which", ["tiny_causal_dir", "tiny_seq2seq_dir"])
def test_cuda_bf16_beam_and_seq2seq_generate(which, request):
    from lean_dojo_v2.models.generator import HFTacticGenerator

    loaded = _cuda_model(request.getfixturevalue(which), "bfloat16")
    prefix = "simp" if loaded.kind == "seq2seq" else None
    for strategy in ("beam", "sample", "greedy"):
        out = HFTacticGenerator(loaded, strategy=strategy, max_new_tokens=8, seed=0).generate(
            STATES[:2], 3, prefix=prefix
        )
        assert len(out) == 2
        assert all(math.isfinite(c.logprob) for cs in out for c in cs)


def test_cuda_bf16_lora_sft_steps_save_an_adapter_that_generates(tiny_causal_dir, tmp_path):
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.models.generator import HFTacticGenerator
    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    out = tmp_path / "lora"
    trainer = SFTTrainer(
        str(tiny_causal_dir),
        output_dir=out,
        lora_config=True,
        device="cuda",
        dtype="bfloat16",
        batch_size=2,
        lr=5e-3,
        max_steps=3,
        max_examples=8,
        progress_bar=False,
        loss_curve=False,
        report_to=["none"],
    )
    result = trainer.train(data_path=sample_dataset_path())
    assert result.steps == 3 and result.adapter
    assert math.isfinite(result.first_loss) and math.isfinite(result.last_loss)
    assert next(trainer.model.parameters()).device.type == "cuda"
    reloaded = load_model(str(out), device="cuda", dtype="bfloat16")
    assert next(reloaded.model.parameters()).device.type == "cuda"
    [cands] = HFTacticGenerator(reloaded, strategy="greedy", max_new_tokens=8).generate(
        STATES[:1], 1
    )
    assert all(math.isfinite(c.logprob) for c in cands)


# ----------------------------------------------------- the decoding paths a short test never takes

# Prompts of very different lengths, so that ``length_groups`` splits them into several groups
# (grouped prefill), in no particular order of length.
MIXED_STATES = [
    "a b c : ℕ\nh₁ : a ≤ b\nh₂ : b ≤ c\nh₃ : c ≤ a + 1\n⊢ a ≤ c ∧ c ≤ a + 1 ∧ b ≤ a + 1 ∧ a + b ≤ 2 * c",
    "⊢ True",
    "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q",
    "x y z w : ℝ\nhx : 0 < x\nhy : 0 < y\nhz : 0 < z\nh : x * y * z = 1\n"
    "hw : w = x ^ 3 + y ^ 3 + z ^ 3 - 3 * x * y * z\nh' : x + y + z ≤ 3 * (x * y + y * z)\n"
    "⊢ x ^ 2 / (y + z) + y ^ 2 / (z + x) + z ^ 2 / (x + y) ≥ 3 / 2 ∧ x + y + z ≥ 3 ∧ "
    "x * y + y * z + z * x ≥ 3",
    "n : ℕ\n⊢ n + 0 = n",
    "a b : ℕ\nh : a ≤ b\n⊢ a < b + 1 ∧ b * b + 3 ≥ a",
]
# The step after which each row is made to finish (a row may end sooner, at EOS): rows of the
# middle of the batch end first, so rows from its end are moved into their places; on a GPU the
# loop looks at the tokens every few steps (decoding.CHECK_EVERY, 4), so the ends are spread over
# several such windows.
ENDS = [2, 14, 6, 11, 3, 14, 1, 9, 5, 14, 10, 7]
MAX_NEW = 14


def _sharpened(loaded):
    """The tiny random model's logits are nearly flat (std ~0.2), so its greedy choices are
    near-ties at bf16 precision; a larger LM head keeps them apart (the same model for both
    decoders, so the comparison is unaffected)."""
    import torch

    with torch.no_grad():
        loaded.model.lm_head.weight.mul_(8)
    return loaded


def _left_padded(loaded, states, repeats: int = 1):
    from lean_dojo_v2.models.generator import HFTacticGenerator
    from lean_dojo_v2.models.prompts import add_special_tokens_for

    gen = HFTacticGenerator(loaded, strategy="greedy", max_new_tokens=MAX_NEW)
    prompts = [p for p in gen.prompts(states) for _ in range(repeats)]
    enc = loaded.tokenizer(
        prompts,
        return_tensors="pt",
        padding=True,
        padding_side="left",
        add_special_tokens=add_special_tokens_for(gen.style),
    ).to(loaded.device)
    return enc["input_ids"], enc["attention_mask"], gen.stop_ids


def _hf_greedy(loaded, ids, mask, stop_ids, ends):
    """transformers' own greedy ``generate`` of the same batch, each row stopped after
    ``ends[row]`` tokens (or at a stop token): its tokens per row and the raw logits per step."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    start = ids.shape[1]
    limit = torch.tensor(ends, device=ids.device)

    class EndAt(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return (input_ids.shape[1] - start) >= limit

    with torch.inference_mode():
        out = loaded.model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=False,
            max_new_tokens=MAX_NEW,
            eos_token_id=stop_ids,
            pad_token_id=loaded.tokenizer.pad_token_id,
            stopping_criteria=StoppingCriteriaList([EndAt()]),
            return_dict_in_generate=True,
            output_logits=True,
            top_k=None,
            top_p=None,
            temperature=None,
            repetition_penalty=None,
        )
    logits = torch.stack(out.logits, dim=1).float().cpu()  # (rows, steps, vocab)
    rows = []
    for r, seq in enumerate(out.sequences[:, start:].tolist()):
        n = min(ends[r], len(seq))
        stop = next((i + 1 for i, t in enumerate(seq[:n]) if t in stop_ids), n)
        rows.append(seq[:stop])
    return rows, logits


def _spy_decoding_paths(monkeypatch):
    """Count the calls of the two paths under test inside ``decode_causal``."""
    from lean_dojo_v2.models import decoding

    seen = {"dropped": [], "grouped": []}
    drop_rows, prefill_grouped = decoding.drop_rows, decoding.prefill_grouped

    def spy_drop(cache, keep):
        seen["dropped"].append(len(keep))
        return drop_rows(cache, keep)

    def spy_prefill(*args, **kwargs):
        result = prefill_grouped(*args, **kwargs)
        seen["grouped"].append(result is not None)
        return result

    monkeypatch.setattr(decoding, "drop_rows", spy_drop)
    monkeypatch.setattr(decoding, "prefill_grouped", spy_prefill)
    return seen


def _assert_decodes_like_hf(ours, our_lp, ref, ref_logits, *, lp_tol: float, tie_tol: float):
    """Token for token, row by row; a row may part from transformers' only where transformers'
    own logits put the two tokens within ``tie_tol`` (a near-tie that rounding decides), and is
    compared no further. Each matching token's log-prob is within ``lp_tol`` of transformers'."""
    import torch

    compared = total = 0
    for r, (a, b) in enumerate(zip(ours, ref, strict=True)):
        total += len(b)
        for step, (x, y) in enumerate(zip(a, b, strict=False)):
            logits = ref_logits[r, step]
            if x != y:
                gap = float(logits[y] - logits[x])
                assert gap <= tie_tol, f"row {r} step {step}: {x} instead of {y} (gap {gap})"
                break
            expected = float(torch.log_softmax(logits, -1)[x])
            assert abs(our_lp[r][step] - expected) < lp_tol, (r, step)
            compared += 1
        else:
            assert len(a) == len(b), f"row {r} ends after {len(a)} tokens, not {len(b)}"
    assert compared >= 0.8 * total  # near-ties are the exception, not the rule


def _decode_mixed_batch_like_hf(loaded, monkeypatch, *, repeats: int, lp_tol, tie_tol):
    import torch

    from lean_dojo_v2.models.decoding import decode_causal, length_groups

    _sharpened(loaded)
    states = MIXED_STATES
    ids, mask, stops = _left_padded(loaded, states)
    assert len(length_groups(mask.sum(-1).tolist())) >= 3  # several length groups
    ends = ENDS[: len(states) * repeats]
    seen = _spy_decoding_paths(monkeypatch)
    with torch.inference_mode():
        ours, our_lp = decode_causal(
            loaded.model,
            ids,
            mask,
            num_samples=repeats,
            max_new_tokens=MAX_NEW,
            stop_ids=stops,
            greedy=True,
            temperature=1.0,
            top_p=1.0,
            finished=lambda row, toks: len(toks) >= ends[row],
        )
    ref_ids, ref_mask, _ = _left_padded(loaded, states, repeats)
    ref, ref_logits = _hf_greedy(loaded, ref_ids, ref_mask, stops, ends)
    # Both paths were really taken: one grouped prefill, and rows left the batch at several steps.
    assert seen["grouped"] == [True]
    assert len(seen["dropped"]) >= 3, seen
    assert len({len(r) for r in ref}) >= 3  # rows of transformers' run end at different steps
    _assert_decodes_like_hf(ours, our_lp, ref, ref_logits, lp_tol=lp_tol, tie_tol=tie_tol)


@pytest.mark.parametrize("repeats", [1, 2])
def test_cuda_fp32_dropped_rows_and_grouped_prefill_decode_as_hf_generate(
    tiny_causal_dir, monkeypatch, repeats
):
    import torch

    # TF32 matmuls round to 10 bits: keep float32 float32 on both sides.
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        loaded = _cuda_model(tiny_causal_dir, "float32")
        _decode_mixed_batch_like_hf(loaded, monkeypatch, repeats=repeats, lp_tol=1e-4, tie_tol=1e-4)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.parametrize("repeats", [1, 2])
def test_cuda_bf16_dropped_rows_and_grouped_prefill_decode_as_hf_generate(
    tiny_causal_dir, monkeypatch, repeats
):
    # bf16: grouped prefill pads each prompt less than transformers' one padded prefill, so the
    # same logits come out of other matmul shapes and differ by bf16 rounding (~1e-2).
    loaded = _cuda_model(tiny_causal_dir, "bfloat16")
    _decode_mixed_batch_like_hf(loaded, monkeypatch, repeats=repeats, lp_tol=0.1, tie_tol=0.1)
