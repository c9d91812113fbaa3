"""HFProver: upstream LeanDojo-v2's constructor over the one loading path, LoRA adapters, tactics and whole
proofs, and proof search on the bundled real data through ReplayEnv.

Models are tiny random Llamas/T5s (``tests/tiny_models.py``). For the end-to-end tests a LoRA
adapter is *written by hand* so that, on top of the random base, the model emits one given text:
rank-64 deltas cancel every attention and MLP output (the last hidden state is then the current
token's embedding) and turn the LM head into a bigram table "prompt end -> tactic tokens -> end
marker". The base alone does not emit it; base + adapter (loaded by ``HFProver(adapter,
use_lora=True)``) does, greedy or sampled. The test theorem is a real one of the bundled sample
whose recorded proof is that one tactic.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from tiny_models import build_tiny_causal, build_tiny_seq2seq  # noqa: E402

from lean_dojo_v2.errors import ModelError, ModelNotFoundError  # noqa: E402

STATES = ["n : ℕ\n⊢ n + 0 = n", "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"]
THEOREM = "List.get_attach"  # recorded proof: `simp`
TACTIC = "simp"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny") / "causal")


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory) -> Path:
    return build_tiny_seq2seq(tmp_path_factory.mktemp("tiny") / "t5")


def write_emitter_adapter(base_dir: Path, dst: Path, text: str) -> Path:
    """A PEFT LoRA adapter (rank 64 on o_proj, down_proj, lm_head) that makes the tiny Llama at
    ``base_dir`` answer ``text`` then its end marker to any chat prompt (see module docstring)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.models.prompts import end_marker, render_prompt

    loaded = load_model(str(base_dir), device="cpu", dtype="float32")
    tok, model = loaded.tokenizer, loaded.model
    hidden = model.config.hidden_size
    last = tok(render_prompt(tok, "x"), add_special_tokens=False)["input_ids"][-1]
    body = tok(text, add_special_tokens=False)["input_ids"]
    end = tok(end_marker(tok), add_special_tokens=False)["input_ids"]
    chain = [last, *body, *end]
    assert len(set(chain[:-1])) == len(chain) - 1, "the bigram chain needs distinct tokens"
    emb = model.get_input_embeddings().weight.detach()
    target = torch.zeros_like(model.lm_head.weight)
    for cur, nxt in zip(chain, chain[1:], strict=False):
        unit = emb[cur] / emb[cur].norm()
        target[nxt] += 3.0 * unit
    config = LoraConfig(
        r=hidden, lora_alpha=hidden, target_modules=["o_proj", "down_proj", "lm_head"]
    )
    peft_model = get_peft_model(model, config)
    eye = torch.eye(hidden)
    with torch.no_grad():
        for name, module in peft_model.named_modules():
            if not hasattr(module, "lora_A") or "default" not in getattr(module, "lora_A", {}):
                continue
            base_w = module.base_layer.weight
            a, b = module.lora_A["default"].weight, module.lora_B["default"].weight
            if name.endswith("lm_head"):  # W + B@A = target
                a.copy_(eye)
                b.copy_(target - base_w)
            elif name.endswith("o_proj"):  # W + B@A = 0 ([hidden, hidden])
                a.copy_(eye)
                b.copy_(-base_w)
            else:  # down_proj: W is [hidden, intermediate]
                a.copy_(base_w)
                b.copy_(-eye)
    peft_model.save_pretrained(str(dst))
    return dst


@pytest.fixture(scope="module")
def emitter_adapter(tiny_dir, tmp_path_factory) -> Path:
    return write_emitter_adapter(tiny_dir, tmp_path_factory.mktemp("lora") / "adapter", TACTIC)


@pytest.fixture(scope="module")
def sample_theorem():
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems

    (thm,) = [t for t in load_theorems(sample_dataset_path()) if t.full_name == THEOREM]
    assert [t.tactic for t in thm.traced_tactics] == [TACTIC]
    return thm


@pytest.fixture()
def replay_env():
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.interaction import ReplayEnv

    env = ReplayEnv.from_dataset(sample_dataset_path())
    yield env
    env.close()


# --------------------------------------------------------------------------- construction


def test_hf_prover_wraps_hf_tactic_generator_with_same_greedy_output(tiny_dir):
    from lean_dojo_v2.models.generator import HFTacticGenerator
    from lean_dojo_v2.prover import HFProver
    from lean_dojo_v2.prover.base import BaseProver

    prover = HFProver(str(tiny_dir), device="cpu", strategy="greedy", max_new_tokens=12)
    assert isinstance(prover, BaseProver)
    assert isinstance(prover.generator, HFTacticGenerator)
    reference = HFTacticGenerator(str(tiny_dir), device="cpu", strategy="greedy", max_new_tokens=12)
    assert prover.generate(STATES, 1) == reference.generate(STATES, 1)
    assert prover.prompts(STATES) == reference.prompts(STATES)


def test_use_lora_without_adapter_config_is_a_typed_error(tiny_dir, tmp_path):
    from lean_dojo_v2.prover import HFProver

    with pytest.raises(ModelNotFoundError, match="not a PEFT adapter directory"):
        HFProver(str(tiny_dir), use_lora=True, device="cpu")
    with pytest.raises(ModelError, match="needs ckpt_path"):
        HFProver(None, use_lora=True, device="cpu")
    with pytest.raises(ModelNotFoundError):
        HFProver(str(tmp_path / "missing"), device="cpu")


def test_lora_adapter_saved_and_reloaded_by_use_lora_loads_base_from_adapter_config(
    tiny_dir, emitter_adapter
):
    import json

    from lean_dojo_v2.prover import HFProver

    recorded = json.loads((emitter_adapter / "adapter_config.json").read_text())
    assert Path(recorded["base_model_name_or_path"]).resolve() == Path(tiny_dir).resolve()
    base = HFProver(str(tiny_dir), device="cpu", strategy="greedy", max_new_tokens=8)
    tuned = HFProver(str(emitter_adapter), use_lora=True, device="cpu", strategy="greedy")
    assert "adapter" in tuned.loaded.source
    assert [c.tactic for c in tuned.generate(STATES, 1)[0]] == [TACTIC]
    assert [c.tactic for c in base.generate(STATES, 1)[0]] != [TACTIC]
    # sampling: the adapter's model puts nearly all the mass on the tactic
    sampled = HFProver(str(emitter_adapter), use_lora=True, device="cpu", seed=0)
    (cands,) = sampled.generate(STATES[:1], 4)
    assert cands[0].tactic == TACTIC and cands[0].logprob > -0.5


# --------------------------------------------------------------------------- whole proofs


def test_whole_proof_text_ends_at_end_marker_not_at_line_break(tiny_dir):
    from lean_dojo_v2.models import load_model
    from lean_dojo_v2.prover.hf_prover import proof_from_ids

    tok = load_model(str(tiny_dir), device="cpu").tokenizer
    proof = "intro n\ninduction n with\n  | zero => rfl\n  | succ n ih => simp [ih]"
    ids = tok(proof + "<|im_end|>omega", add_special_tokens=False)["input_ids"]
    end = ids.index(tok.convert_tokens_to_ids("<|im_end|>"))
    lps = [-0.5] * len(ids)
    text, score = proof_from_ids(tok, ids, lps, [tok.eos_token_id])
    assert text == proof
    assert score == pytest.approx(-0.5 * (end + 1))  # the proof's tokens and the end marker
    sorry_ids = tok("intro n\nsorry<|im_end|>", add_special_tokens=False)["input_ids"]
    assert proof_from_ids(tok, sorry_ids, [0.0] * len(sorry_ids), [tok.eos_token_id])[0] is None


def test_generate_proofs_uses_whole_proof_prompt_and_is_not_cut_at_newline(tiny_dir):
    from lean_dojo_v2.models.prompts import PROOF_SYSTEM_PROMPT, SYSTEM_PROMPT
    from lean_dojo_v2.prover import HFProver

    prover = HFProver(str(tiny_dir), device="cpu", seed=1, max_proof_tokens=40)
    (proof_prompt,) = prover.prompts(STATES[:1], whole_proof=True)
    (tactic_prompt,) = prover.prompts(STATES[:1])
    assert PROOF_SYSTEM_PROMPT in proof_prompt and SYSTEM_PROMPT in tactic_prompt
    out = prover.generate_proofs(STATES, 6)
    assert len(out) == 2 and all(out)
    for cands in out:
        assert len({c.tactic for c in cands}) == len(cands) <= 6
        assert all(math.isfinite(c.logprob) and c.logprob <= 0 for c in cands)
        assert [c.logprob for c in cands] == sorted((c.logprob for c in cands), reverse=True)
    # random text of 40 tokens: a tactic generator would stop at its first line break
    assert any("\n" in c.tactic for cands in out for c in cands)


@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_generate_proofs_seq2seq_strategies(tiny_t5_dir, strategy):
    from lean_dojo_v2.prover import HFProver

    prover = HFProver(
        str(tiny_t5_dir), device="cpu", strategy=strategy, seed=0, max_proof_tokens=12
    )
    out = prover.generate_proofs(STATES, 2)
    assert len(out) == 2
    for cands in out:
        assert len(cands) <= (1 if strategy == "greedy" else 2)
        assert all(math.isfinite(c.logprob) for c in cands)


# --------------------------------------------------------------------------- end to end


def test_hf_prover_proves_real_theorem_on_replay_env(emitter_adapter, sample_theorem, replay_env):
    from lean_dojo_v2.prover import HFProver, SearchConfig

    prover = HFProver(str(emitter_adapter), use_lora=True, device="cpu", seed=0)
    result = prover.prove(sample_theorem, replay_env, SearchConfig(num_samples=4, max_expansions=5))
    assert result.status == "proved", result
    assert result.proof == [TACTIC] and result.checked_by == "replay"


def test_hf_prover_whole_proof_mode_proves_real_theorem(
    emitter_adapter, sample_theorem, replay_env
):
    from lean_dojo_v2.prover import HFProver, SearchConfig

    prover = HFProver(str(emitter_adapter), use_lora=True, device="cpu", seed=0)
    result = prover.prove(
        sample_theorem, replay_env, SearchConfig(num_samples=2, whole_proof=True, max_expansions=2)
    )
    assert result.status == "proved", result
    assert result.proof == [TACTIC]


def test_base_model_without_adapter_does_not_prove(tiny_dir, sample_theorem, replay_env):
    from lean_dojo_v2.prover import HFProver, SearchConfig

    prover = HFProver(str(tiny_dir), device="cpu", strategy="greedy", max_new_tokens=8)
    result = prover.prove(sample_theorem, replay_env, SearchConfig(num_samples=1, max_expansions=2))
    assert result.status in ("failed", "timeout")


@pytest.mark.slow
def test_hf_prover_none_loads_the_default_model():
    from lean_dojo_v2.prover import HFProver

    prover = HFProver(None, device="cpu", strategy="greedy", max_new_tokens=16)
    assert "smollm2" in prover.loaded.source.lower() or "SmolLM2" in prover.loaded.source
    (cands,) = prover.generate(STATES[:1], 1)
    assert len(cands) == 1
