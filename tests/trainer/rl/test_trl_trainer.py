"""``LeanGRPOTrainer`` on the tiny random Llama (``tests/tiny_models.py``):

- each algorithm's advantages, through TRL's real ``_generate_and_score_completions`` with reward
  functions that return fixed numbers (read from dataset columns);
- each algorithm's loss, through TRL's real ``_compute_loss`` with the LM head zeroed, so every
  token's log-prob is exactly ``-ln V`` and the ratios are set by ``old_per_token_logps``;
- dynamic sampling dropping flat groups and refilling from new prompts, and a short real run.

Expected numbers are derived by hand in the comments, from the papers' equations.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from lean_dojo_v2.trainer.rl.algorithms import resolve_algorithm

EPS = 1e-4  # TRL's std epsilon


def r1(completions, r1, **kwargs):
    return list(r1)


def r2(completions, r2, **kwargs):
    return list(r2)


def signal(completions, live, **kwargs):
    """0 for a 'dead' prompt (a flat group); for a live one a number that differs between any
    two different completions (almost surely)."""
    return [
        float(sum(map(ord, c)) % 997) if ok else 0.0
        for c, ok in zip(completions, live, strict=True)
    ]


def make_trainer(
    model_dir: Path,
    tmp_path: Path,
    name: str,
    overrides: dict | None = None,
    *,
    reward_funcs=(r1,),
    dataset=None,
    num_generations: int = 2,
    per_device: int = 4,
    **config,
):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from lean_dojo_v2.trainer.rl.trl_trainer import LeanGRPOTrainer

    resolved = resolve_algorithm(name, overrides)
    args = GRPOConfig(
        output_dir=str(tmp_path / f"out-{name}"),
        per_device_train_batch_size=per_device,
        num_generations=num_generations,
        max_completion_length=4,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=0,
        **{**resolved.trl_settings, **config},
    )
    if dataset is None:
        dataset = Dataset.from_list([{"prompt": "n : ℕ\n⊢ n + 0 = n", "r1": 0.0, "r2": 0.0}] * 4)
    trainer = LeanGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=list(reward_funcs),
        args=args,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        extensions=resolved.extensions,
    )
    trainer.model.train()
    return trainer


def rows(r1s: list[float], r2s: list[float] | None = None) -> list[dict]:
    r2s = r2s or [0.0] * len(r1s)
    return [
        {"prompt": f"a b : ℕ\nh : a ≤ b\n⊢ a < b + {i}", "r1": x, "r2": y}
        for i, (x, y) in enumerate(zip(r1s, r2s, strict=True))
    ]


def close(actual, expected, tol=1e-4):
    actual = actual.tolist() if hasattr(actual, "tolist") else actual
    assert actual == pytest.approx(expected, abs=tol)


# ---------------------------------------------------------------------------------------------
# Advantages through TRL

# Group 1 = [0, 1, 2, 3]: mean 1.5, unbiased std sqrt(5/3) = 1.290994;
# TRL: (r - 1.5) / (1.290994 + 1e-4) = [-1.161805, -0.387268, 0.387268, 1.161805]; group 2 flat → 0.
GROUP_REWARDS = [0.0, 1, 2, 3, 1, 1, 1, 1]
STANDARDISED = [-1.161805, -0.387268, 0.387268, 1.161805, 0, 0, 0, 0]


@pytest.mark.parametrize("name", ["grpo", "bnpo", "dapo", "cispo", "sapo", "gspo", "grpo_dpo"])
def test_group_standardised_advantages(name, tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(
        tiny_model_dir, tmp_path, name, {"dynamic_sampling": False}, num_generations=4
    )
    out = trainer._generate_and_score_completions(rows(GROUP_REWARDS))
    close(out["advantages"], STANDARDISED)


def test_dr_grpo_does_not_divide_by_std(tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(tiny_model_dir, tmp_path, "dr_grpo", num_generations=4)
    out = trainer._generate_and_score_completions(rows(GROUP_REWARDS))
    close(out["advantages"], [-1.5, -0.5, 0.5, 1.5, 0, 0, 0, 0])  # r - mean only


def test_gdpo_differs_from_sum_then_normalize(tiny_model_dir, tmp_path) -> None:
    # One group of 3, two rewards: f1 = [1, 0, 0], f2 = [0, 0, 3].
    # Sum then normalise (grpo): sums [1, 0, 3], mean 4/3, std sqrt(7/3) = 1.527525
    #   → [-0.218204, -0.872814, 1.091018]: completion 1 is pushed down.
    # GDPO: f1 → (f1 - 1/3) / (sqrt(1/3) + eps) = [1.154500, -0.577250, -0.577250]
    #       f2 → (f2 - 1) / (sqrt(3) + eps)     = [-0.577317, -0.577317, 1.154634]
    #   sum [0.577183, -1.154567, 0.577317]; over the batch: mean ≈ 0, std 0.999891
    #   → [0.577193, -1.154585, 0.577393]: completion 1 is pushed *up* (best on f1).
    f1, f2 = [1.0, 0.0, 0.0], [0.0, 0.0, 3.0]
    kwargs = dict(reward_funcs=(r1, r2), num_generations=3, per_device=3)
    summed = make_trainer(tiny_model_dir, tmp_path, "grpo", **kwargs)
    close(
        summed._generate_and_score_completions(rows(f1, f2))["advantages"],
        [-0.218204, -0.872814, 1.091018],
    )
    gdpo = make_trainer(tiny_model_dir, tmp_path, "gdpo", **kwargs)
    close(
        gdpo._generate_and_score_completions(rows(f1, f2))["advantages"],
        [0.577193, -1.154585, 0.577393],
    )


def test_dgpo_advantages_replace_trls(tiny_model_dir, tmp_path) -> None:
    # Same derivation as test_advantages.test_dgpo_mad_and_question_weights.
    trainer = make_trainer(tiny_model_dir, tmp_path, "dgpo", num_generations=4, per_device=8)
    out = trainer._generate_and_score_completions(rows([1.0, 0, 0, 0, 1, 1, 0, 1]))
    expected = [2.489174, -0.829725, -0.829725, -0.829725, 0.503253, 0.503253, -1.509760, 0.503253]
    close(out["advantages"], expected)
    close(list(trainer._logs["advantages"]), expected)  # the completions table shows ours


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # [0, 1, 2, 3] winsorised at q = 0.25: quantiles 0.75 and 2.25 → [0.75, 1, 2, 2.25],
        # mean 1.5, unbiased var (0.5625 + 0.25 + 0.25 + 0.5625) / 3 = 0.541667, std 0.735980
        (
            {"advantage": "winsorized", "winsor_quantile": 0.25},
            [-0.75 / 0.736080, -0.5 / 0.736080, 0.5 / 0.736080, 0.75 / 0.736080, 0, 0, 0, 0],
        ),
        # ranks 1..4 centred by 2.5, scaled by 1.5
        ({"advantage": "rank"}, [-1, -1 / 3, 1 / 3, 1, 0, 0, 0, 0]),
    ],
)
def test_advantage_options(overrides, expected, tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(tiny_model_dir, tmp_path, "grpo", overrides, num_generations=4)
    out = trainer._generate_and_score_completions(rows(GROUP_REWARDS))
    close(out["advantages"], expected)


# ---------------------------------------------------------------------------------------------
# Losses through TRL's _compute_loss with a uniform policy (log-prob -ln V everywhere)

# Two completions of 3 and 2 tokens; A = [+1, -1]; ratios π/π_old set through old log-probs:
RATIOS = [[1.5, 1.0, 0.5], [0.5, 1.25, 1.0]]  # the last entry is padding (mask 0)


def loss_inputs(vocab: int, ref_shift=None) -> dict:
    logp = -math.log(vocab)
    inputs = {
        "prompt_ids": torch.tensor([[5, 6], [7, 8]]),
        "prompt_mask": torch.ones(2, 2, dtype=torch.long),
        "completion_ids": torch.tensor([[10, 11, 12], [13, 14, 15]]),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "advantages": torch.tensor([1.0, -1.0]),
        "old_per_token_logps": logp - torch.log(torch.tensor(RATIOS)),
        "num_items_in_batch": torch.tensor(5.0),
    }
    if ref_shift is not None:
        inputs["ref_per_token_logps"] = logp + torch.tensor(ref_shift)
    return inputs


def uniform_trainer(model_dir, tmp_path, name, overrides=None):
    trainer = make_trainer(model_dir, tmp_path, name, overrides)
    with torch.no_grad():
        trainer.model.lm_head.weight.zero_()  # logits 0 → log_softmax = -ln V for every token
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop; one micro-batch here
    return trainer, trainer.model.config.vocab_size


# Per-token clipped surrogate -min(r A, clip(r, 1-ε_lo, 1+ε_hi) A) with ε = 0.2:
#   row 0 (A=+1): r=1.5 → -1.2 (clipped), r=1 → -1, r=0.5 → -0.5 (min picks r)
#   row 1 (A=-1): r=0.5 → +0.8 (clipped), r=1.25 → +1.25 (min picks r)
# Sum over tokens: -2.7 + 2.05 = -0.65.
# KL (grpo, β = 0.04): ref = logp + ln 2 on row 0 token 0 only: k3 = e^{ln 2} - ln 2 - 1 = 0.306853,
# times that token's ratio 1.5 (TRL's use_bias_correction_kl, on by default): 0.460279
LOSS_CASES = {
    # per-sequence means: row 0 (-1.2 + 0.04 * 0.460279 - 1 - 0.5) / 3 = -0.893863,
    # row 1 (0.8 + 1.25) / 2 = 1.025; mean 0.065569
    "grpo": 0.065569,
    # sum / (B × max_completion_length) = -0.65 / (2 × 4)
    "dr_grpo": -0.08125,
    # ε_hi = 0.28: r=1.5 → -1.28; sum -0.73 over the 5 tokens of the batch (num_items_in_batch)
    "dapo": -0.146,
    # sum / tokens of the local batch: -0.65 / 5
    "bnpo": -0.13,
    # sequence ratio exp(mean log r): row 0 0.75^(1/3) = 0.908560, row 1 0.625^(1/2) = 0.790569;
    # ε 3e-4 / 4e-4: row 0 A=+1 → -min(0.908560, 0.9997) = -0.908560,
    # row 1 A=-1 → -min(-0.790569, -0.9997) = +0.9997; mean over sequences = 0.045570
    "gspo": 0.045570,
    # SAPO: -σ(τ (r - 1)) 4/τ A with τ+ = 1, τ- = 1.05:
    #   row 0: -(4σ(0.5) + 4σ(0) + 4σ(-0.5)) / 3 = -(4 + 2) / 3 = -2
    #   row 1: (4/1.05)(σ(-0.525) + σ(0.2625)) / 2 = 1.784637; mean -0.107681
    "sapo": -0.107681,
}


@pytest.mark.parametrize("name", list(LOSS_CASES))
def test_loss(name, tiny_model_dir, tmp_path) -> None:
    trainer, vocab = uniform_trainer(tiny_model_dir, tmp_path, name)
    shift = [[math.log(2), 0, 0], [0, 0, 0]] if name == "grpo" else None
    loss = trainer._compute_loss(trainer.model, loss_inputs(vocab, shift))
    assert loss.item() == pytest.approx(LOSS_CASES[name], abs=1e-5)


def test_cispo_loss(tiny_model_dir, tmp_path) -> None:
    # CISPO: -min(r, 5).detach() × A × logp per token, logp = -ln V:
    #   row 0: (1.5 + 1 + 0.5) ln V = 3 ln V; row 1: -(0.5 + 1.25) ln V; sum 1.25 ln V, / 5 tokens
    trainer, vocab = uniform_trainer(tiny_model_dir, tmp_path, "cispo")
    loss = trainer._compute_loss(trainer.model, loss_inputs(vocab))
    assert loss.item() == pytest.approx(0.25 * math.log(vocab), abs=1e-5)


def test_grpo_dpo_adds_the_dpo_term(tiny_model_dir, tmp_path) -> None:
    # grpo_dpo = grpo (0.065569 above, β = 0.04, reference model) + 0.1 × DPO on the pair
    # (w = row 0, reward 1; l = row 1, reward 0), reference = ref_per_token_logps:
    #   Δ_w = Σ (logp - ref) = -ln 2, Δ_l = 0; L = -log σ(0.1 × (-ln 2)) = 0.728405
    #   total 0.065569 + 0.0728405 = 0.138409
    trainer, vocab = uniform_trainer(tiny_model_dir, tmp_path, "grpo_dpo")
    inputs = loss_inputs(vocab, [[math.log(2), 0, 0], [0, 0, 0]])
    inputs |= {"dpo_group": torch.tensor([7, 7]), "dpo_reward": torch.tensor([1.0, 0.0])}
    loss = trainer._compute_loss(trainer.model, inputs)
    assert loss.item() == pytest.approx(0.138409, abs=1e-5)
    assert trainer._metrics["train"]["dpo/pairs"][-1] == 1.0
    # Equal rewards: no pair, the loss is plain GRPO.
    inputs["dpo_reward"] = torch.tensor([1.0, 1.0])
    assert trainer._compute_loss(trainer.model, inputs).item() == pytest.approx(0.065569, abs=1e-5)


def test_grpo_dpo_without_kl_uses_the_sampling_policy(tiny_model_dir, tmp_path) -> None:
    # β = 0: no reference model; the DPO reference is old_per_token_logps:
    #   Δ_w = Σ log r = ln(1.5 × 1 × 0.5) = ln 0.75, Δ_l = ln(0.5 × 1.25) = ln 0.625
    #   L = -log σ(0.1 ln(0.75 / 0.625)) = -log σ(0.1 ln 1.2) = 0.684073
    #   GRPO without KL: ((-2.7 / 3) + 1.025) / 2 = 0.0625; total 0.0625 + 0.0684073
    trainer, vocab = uniform_trainer(tiny_model_dir, tmp_path, "grpo_dpo", {"beta": 0.0})
    inputs = loss_inputs(vocab)
    inputs |= {"dpo_group": torch.tensor([3, 3]), "dpo_reward": torch.tensor([1.0, 0.0])}
    loss = trainer._compute_loss(trainer.model, inputs)
    assert loss.item() == pytest.approx(0.130907, abs=1e-5)
    loss.backward()  # the DPO term is differentiable through TRL's own log-probs
    assert trainer.model.lm_head.weight.grad.abs().sum() > 0


def test_dpo_pair_loss_picks_best_and_worst() -> None:
    from lean_dojo_v2.trainer.rl.trl_trainer import dpo_pair_loss

    # Group 0: rewards [0, 2, 1] → w = row 1, l = row 0; group 1 flat → no pair; group 2 has a
    # NaN and one scorable row → no pair.  Δ = per-row sums of (logp - ref) = [0.5, 2.5, ...]:
    #   L = -log σ(1 × (2.5 - 0.5)) = log(1 + e^-2) = 0.126928
    logps = torch.tensor([[0.5], [2.5], [9.0], [1.0], [1.0], [3.0], [4.0]])
    ref = torch.zeros_like(logps)
    mask = torch.ones_like(logps)
    groups = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    rewards = torch.tensor([0.0, 2.0, 1.0, 5.0, 5.0, float("nan"), 1.0])
    loss, pairs = dpo_pair_loss(logps, ref, mask, groups, rewards, beta=1.0)
    assert pairs == 1 and loss.item() == pytest.approx(math.log(1 + math.exp(-2)), abs=1e-6)
    assert dpo_pair_loss(logps, ref, mask, groups[3:5].repeat(4)[:7], torch.ones(7), 1.0) == (
        None,
        0,
    )


def test_dpo_tags_in_generation_output(tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(tiny_model_dir, tmp_path, "grpo_dpo", num_generations=2)
    out = trainer._generate_and_score_completions(rows([0.0, 1.0, 2.0, 2.0]))
    assert out["dpo_group"].tolist() == [0, 0, 1, 1]
    assert out["dpo_reward"].tolist() == [0.0, 1.0, 2.0, 2.0]
    out = trainer._generate_and_score_completions(rows([0.0, 1.0, 2.0, 2.0]))
    assert out["dpo_group"].tolist() == [2, 2, 3, 3]  # unique across rounds


# ---------------------------------------------------------------------------------------------
# Dynamic sampling


def live_dataset(live: bool, n: int = 6):
    from datasets import Dataset

    return Dataset.from_list(
        [{"prompt": f"x : ℝ\nhx : 0 < x\n⊢ 0 < x ^ {i}", "live": live} for i in range(n)]
    )


def dead_rows(n_prompts: int, G: int) -> list[dict]:
    return [
        {"prompt": f"p q : Prop\nhp : p\n⊢ p ∧ q{i}", "live": False}
        for i in range(n_prompts)
        for _ in range(G)
    ]


def test_flat_groups_are_dropped_and_refilled(tiny_model_dir, tmp_path) -> None:
    # The batch's 2 prompts are dead (flat groups); the train dataset's are all live, so one
    # refill round replaces both groups.
    trainer = make_trainer(
        tiny_model_dir, tmp_path, "dapo", reward_funcs=(signal,), dataset=live_dataset(True)
    )
    out = trainer._generate_and_score_completions(dead_rows(2, 2))
    assert out["completion_ids"].size(0) == 4 and out["prompt_ids"].size(0) == 4
    # A group of 2 with rewards a ≠ b: deviations ±|a-b|/2, unbiased std |a-b|/sqrt(2), so TRL's
    # advantage is ±(1/2)·sqrt(2) = ±0.707107 (eps is negligible against |a-b| ≥ 1).
    assert [abs(a) for a in out["advantages"].tolist()] == pytest.approx([0.707107] * 4, abs=1e-4)
    assert out["num_items_in_batch"].item() == out["completion_mask"].sum().item()
    stats = trainer.sampling_stats()
    assert stats == {"groups": 4, "dropped_groups": 2, "refill_rounds": 1, "drop_rate": 0.5}
    assert trainer._metrics["train"]["dynamic_sampling/drop_rate"] == [0.5]


def test_batch_is_filled_with_flat_groups_when_refills_fail(tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(
        tiny_model_dir,
        tmp_path,
        "dapo",
        {"max_refill_rounds": 2},
        reward_funcs=(signal,),
        dataset=live_dataset(False),
    )
    out = trainer._generate_and_score_completions(dead_rows(2, 2))
    assert out["completion_ids"].size(0) == 4
    assert out["advantages"].tolist() == [0.0] * 4
    assert trainer.sampling_stats() == {
        "groups": 6,
        "dropped_groups": 6,
        "refill_rounds": 2,
        "drop_rate": 1.0,
    }


def test_refill_prompts_come_from_a_seeded_stream(tiny_model_dir, tmp_path) -> None:
    trainer = make_trainer(tiny_model_dir, tmp_path, "dapo", dataset=live_dataset(True, n=5))
    drawn = trainer._refill_inputs(4)
    assert [r["prompt"] for r in drawn[::2]] == [r["prompt"] for r in drawn[1::2]]  # × G
    again = make_trainer(tiny_model_dir, tmp_path, "dapo", dataset=live_dataset(True, n=5))
    assert [r["prompt"] for r in again._refill_inputs(4)] == [r["prompt"] for r in drawn]
    # Ten more draws go through every prompt of the dataset twice (one permutation per epoch).
    more = [r["prompt"] for r in trainer._refill_inputs(16)[::2]]
    first_two = [r["prompt"] for r in drawn[::2]]
    assert sorted(first_two + more[:3]) == sorted(live_dataset(True, n=5)["prompt"])


def test_short_dapo_run_logs_the_drop_rate(tiny_model_dir, tmp_path) -> None:
    from datasets import Dataset

    data = Dataset.from_list(
        [{"prompt": f"n : ℕ\n⊢ n + {i} = n", "live": i % 2 == 0} for i in range(8)]
    )
    trainer = make_trainer(
        tiny_model_dir,
        tmp_path,
        "dapo",
        {"max_refill_rounds": 1},
        reward_funcs=(signal,),
        dataset=data,
        max_steps=2,
        # Nothing is truncated-masked at 4 tokens of a random model otherwise (all truncated).
        mask_truncated_completions=False,
    )
    trainer.train()
    logged = [h for h in trainer.state.log_history if "dynamic_sampling/drop_rate" in h]
    assert len(logged) == 2
    stats = trainer.sampling_stats()
    assert stats["groups"] >= 4 and 0.0 <= stats["drop_rate"] <= 1.0
    assert all(math.isfinite(h["loss"]) for h in logged)


def test_dynamic_sampling_needs_a_map_style_dataset(tiny_model_dir, tmp_path) -> None:
    from lean_dojo_v2.trainer.errors import TrainerError

    stream = live_dataset(True).to_iterable_dataset()
    with pytest.raises(TrainerError, match="map-style"):
        make_trainer(tiny_model_dir, tmp_path, "dapo", dataset=stream, max_steps=1)


# ---------------------------------------------------------------------------------------------
# Prompt tokens and prompt order


def test_chat_prompts_are_tokenised_as_search_tokenises_them(tiny_model_dir, tmp_path) -> None:
    """TRL tokenises text prompts with special tokens; a tokenizer that adds BOS would then put a
    second BOS before a chat template's own. With ``prompt_add_special_tokens=False`` the ids are
    the ones the generators send (``add_special_tokens=False`` for chat text)."""
    from tokenizers import processors

    trainer = make_trainer(tiny_model_dir, tmp_path, "grpo")
    tok = trainer.processing_class
    bos = tok.convert_tokens_to_ids(tok.bos_token)
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{tok.bos_token} $A", special_tokens=[(tok.bos_token, bos)]
    )
    prompt = f"{tok.bos_token}user\nn : ℕ\n⊢ n + 0 = n"
    plain = tok(prompt, add_special_tokens=False)["input_ids"]
    assert tok(prompt)["input_ids"] == [bos, *plain]  # what TRL's own tokenisation gives

    trainer.prompt_add_special_tokens = False
    ids, images, fields = trainer._tokenize_prompts([prompt])
    assert ids == [plain] and images is None and fields == {}
    trainer.prompt_add_special_tokens = None
    assert trainer._tokenize_prompts([prompt])[0] == [[bos, *plain]]


def test_the_train_sampler_shuffles_each_epoch_from_the_seed_and_the_epoch_alone() -> None:
    """A run resumed at an epoch boundary starts a fresh sampler at epoch e: its order must be the
    uninterrupted run's order of epoch e (TRL's sampler would repeat epoch 0's)."""
    from trl.trainer.utils import RepeatSampler

    from lean_dojo_v2.trainer.rl.trl_trainer import EpochSeededRepeatSampler

    def sampler():
        base = RepeatSampler(
            list(range(16)), mini_repeat_count=2, batch_size=4, shuffle=True, seed=7
        )
        return EpochSeededRepeatSampler.from_sampler(base)

    straight = sampler()
    orders = []
    for epoch in range(3):
        straight.set_epoch(epoch)
        orders.append(list(straight))
    assert orders[0] != orders[1] != orders[2]
    for epoch in range(3):
        resumed = sampler()
        resumed.set_epoch(epoch)
        assert list(resumed) == orders[epoch]
    # Epoch 0 is TRL's own order: runs that never cross an epoch are unchanged.
    plain = RepeatSampler(list(range(16)), mini_repeat_count=2, batch_size=4, shuffle=True, seed=7)
    assert list(plain) == orders[0]
