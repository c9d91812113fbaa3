"""The real default model (SmolLM2-135M-Instruct from the bundled GGUF): slow tests."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lean_dojo_v2.models import load_model, render_prompt, training_pair
from lean_dojo_v2.models.generator import HFTacticGenerator
from lean_dojo_v2.models.loading import (
    MANIFEST,
    conversion_dir,
    default_gguf_path,
    is_complete,
    resolve_model_path,
)

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
STATES = ["n : ℕ\n⊢ n + 0 = n", "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"]


@pytest.fixture(scope="module")
def smol():
    return load_model(None, device="cpu")


def test_default_model_is_the_converted_gguf(smol):
    assert smol.kind == "causal" and "SmolLM2" in smol.source
    assert is_complete(resolve_model_path(None))
    assert getattr(smol.model, "hf_quantizer", None) is None  # trainable, savable


@pytest.mark.parametrize(
    "tactic", ["simp", "induction n with\n  | zero => rfl\n  | succ n ih => simp"]
)
def test_smollm2_training_pair_is_the_inference_prompt_token_for_token(smol, tactic):
    tok = smol.tokenizer
    prompt, completion = training_pair(tok, STATES[0], tactic)
    assert prompt == render_prompt(tok, STATES[0]) and completion == tactic + "<|im_end|>"
    a = tok(prompt, add_special_tokens=False).input_ids
    b = tok(prompt + completion, add_special_tokens=False).input_ids
    assert b[: len(a)] == a and b[-1] == tok.eos_token_id


def test_default_model_generates_candidates(smol):
    out = HFTacticGenerator(smol, max_new_tokens=24, seed=0).generate(STATES, 4)
    assert len(out) == 2 and all(1 <= len(cs) <= 4 for cs in out)


def test_default_model_batched_greedy_equals_one_by_one(smol):
    gen = HFTacticGenerator(smol, strategy="greedy", max_new_tokens=16)
    batched = gen.generate(STATES, 1)
    gen.batch_size = 1
    single = [gen.generate([s], 1)[0] for s in STATES]
    assert [[c.tactic for c in cs] for cs in batched] == [[c.tactic for c in cs] for cs in single]
    for b, s in zip(batched, single, strict=True):
        assert all(abs(x.logprob - y.logprob) < 1e-4 for x, y in zip(b, s, strict=True))


_CONVERT = textwrap.dedent(
    """
    import sys
    from lean_dojo_v2.models.loading import convert_gguf
    convert_gguf(sys.argv[1], sys.argv[2])
    """
)


def test_real_gguf_conversion_survives_a_kill_mid_write(tmp_path):
    gguf = default_gguf_path()
    dst = conversion_dir(gguf, tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", _CONVERT, str(gguf), str(tmp_path)], cwd=REPO)
    try:
        deadline = time.monotonic() + 300
        while True:  # kill once the staging folder has the weights file started
            staged = [p for p in tmp_path.glob(f".{dst.name}.*") if (p / "config.json").exists()]
            if staged or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not is_complete(dst)
    subprocess.run([sys.executable, "-c", _CONVERT, str(gguf), str(tmp_path)], cwd=REPO, check=True)
    assert is_complete(dst) and (dst / MANIFEST).is_file()
    assert not list(tmp_path.glob(f".{dst.name}.*"))
    loaded = load_model(str(dst), device="cpu")
    assert HFTacticGenerator(loaded, max_new_tokens=8, seed=0).generate(STATES[:1], 2)


def test_default_model_logprobs_equal_a_direct_forward_pass(smol):
    import torch

    gen = HFTacticGenerator(smol, strategy="sample", max_new_tokens=16, seed=0)
    seen = []
    original = gen._decode_rows
    gen._decode_rows = lambda *a, **k: seen.append(original(*a, **k)) or seen[-1]
    gen.generate(STATES, 3)
    ((rows, logprobs),) = seen
    tok = smol.tokenizer
    worst = 0.0
    for r, ids in enumerate(rows):
        _, kept = gen._cut(ids)
        prompt = tok(gen.prompts([STATES[r // 3]])[0], add_special_tokens=False).input_ids
        with torch.inference_mode():
            logits = smol.model(input_ids=torch.tensor([prompt + ids[:kept]])).logits[0].double()
        lp = torch.log_softmax(logits, -1)
        ref = sum(float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(ids[:kept]))
        worst = max(worst, abs(ref - sum(logprobs[r][:kept])))
    assert worst < 1e-4, worst  # float32 summation order only (see tests/models/test_generator.py)
