"""The CUDA / bfloat16 paths of the models layer and of SFT, on the tiny models (seconds on any GPU).

Skipped without CUDA. On a machine with a GPU, one command checks them:

    .venv/bin/python -m pytest -m gpu tests/models/test_gpu.py -q

What they check: every tensor the generator creates lives on the model's device (a CPU tensor
mixed in fails at once on CUDA); log-probs are computed in float32 from bf16 logits (finite, <= 0,
equal to a float32 forward pass of the same bf16 model within bf16 rounding); batched greedy
decoding in float32 on CUDA equals one state at a time (1e-4, as on CPU); beam search and
seq2seq run; a few LoRA SFT steps train on CUDA in bf16, save an adapter that reloads and
generates.
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
