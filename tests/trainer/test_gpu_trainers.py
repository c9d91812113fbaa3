"""The trainers on CUDA, where mixed precision and the CUDA random state change what runs: full SFT
in bf16 keeps its updates, RetrievalTrainer under ``bf16-mixed`` (plain and GradCache), GradCache's
replay of the CUDA random state, EWC across a curriculum, ProgressTrainer. Tiny models, seconds
each on any GPU; skipped without CUDA. On a machine with a GPU:

    .venv/bin/python -m pytest -m gpu tests/trainer/test_gpu_trainers.py -q

Each test here runs on CUDA; the rest of the suite runs on the CPU even there (tests/conftest.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from lean_progress.tiny_bert import build_tiny_bert, sample_rows_file

from .test_retrieval_fixtures import build_tiny_encoder, quick, sample_dir  # noqa: F401

pytestmark = pytest.mark.gpu

# Upstream LeanDojo-v2's learning rate for full fine-tuning: at 2e-5 most Adam steps are smaller
# than half a bf16 rounding step of the weights, so weights held in bf16 lose them.
UPSTREAM_LR = 2e-5


@pytest.fixture(scope="module", autouse=True)
def _needs_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


@pytest.fixture()
def fp32_matmuls():
    """float32 matmuls in float32 (TF32 rounds their inputs to 10 bits) for a test that compares
    two float32 computations at 1e-4: off by default in torch, but a library may turn it on."""
    import torch

    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


def _snapshot(module) -> dict:
    """The trainable weights of ``module`` (all of them, except under LoRA)."""
    return {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad}


def _changed_fraction(before: dict, module) -> float:
    """The fraction of the weights (elements) of ``module`` that differ from ``before``."""
    changed = total = 0
    for name, p in module.named_parameters():
        if name in before:
            changed += int((p.detach() != before[name].to(p.device)).sum())
            total += p.numel()
    return changed / total


# ---------------------------------------------------------------------------------- SFT


def sft_changed_fraction(
    model_dir, data, out, *, device: str, dtype: str, bf16: bool | None, lora: bool = False
):
    """A few steps of fine-tuning (full, or ``lora``) at upstream LeanDojo-v2's learning rate: the fraction of
    the trainable weights that changed between the start and the end of training, the trainer
    and its result."""
    from transformers import TrainerCallback

    from lean_dojo_v2.trainer.sft_trainer import SFTTrainer

    seen: dict = {}

    class Watch(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            seen["before"] = _snapshot(model)

        def on_train_end(self, args, state, control, model=None, **kwargs):
            seen["fraction"] = _changed_fraction(seen["before"], model)

    trainer = SFTTrainer(
        str(model_dir),
        output_dir=out,
        device=device,
        dtype=dtype,
        bf16=bf16,
        lora_config=lora or None,
        batch_size=2,
        lr=UPSTREAM_LR,
        max_steps=5,
        max_examples=16,
        seed=0,
        progress_bar=False,
        loss_curve=False,
        report_to=["none"],
        callbacks=[Watch()],
    )
    result = trainer.train(data_path=data)
    return seen["fraction"], trainer, result


def test_cuda_full_sft_in_bf16_keeps_its_updates_as_fp32_does(
    tiny_model_dir, sample_path, tmp_path
):
    # dtype="auto" is what a user gets on a GPU: bf16 weights or autocast, as the trainer decides;
    # either way the steps must land in the weights as they do in float32 (measured before the
    # fix: 25% of the weights changed in bf16, 86% in float32).
    bf16, trainer, result = sft_changed_fraction(
        tiny_model_dir, sample_path, tmp_path / "bf16", device="cuda", dtype="auto", bf16=None
    )
    fp32, _, _ = sft_changed_fraction(
        tiny_model_dir, sample_path, tmp_path / "fp32", device="cuda", dtype="float32", bf16=False
    )
    assert result.steps == 5 and math.isfinite(result.last_loss)
    assert next(trainer.model.parameters()).device.type == "cuda"
    assert fp32 > 0.5, fp32
    assert bf16 >= 0.9 * fp32, (bf16, fp32)


def test_cuda_lora_sft_in_bf16_trains_float32_adapters(tiny_model_dir, sample_path, tmp_path):
    import torch

    moved, trainer, result = sft_changed_fraction(
        tiny_model_dir, sample_path, tmp_path, device="cuda", dtype="auto", bf16=None, lora=True
    )
    assert result.adapter and result.steps == 5
    trainable = [p for p in trainer.model.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for p in trainable)
    assert moved > 0.5, moved


# ---------------------------------------------------------------------------- retrieval


def _retrieval_config(encoder_dir, out, **extra):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    values = quick(model_name=str(encoder_dir), output_dir=str(out))
    values.update(accelerator="gpu", devices="1", device="cuda", precision="auto")
    values.update(extra)
    return load_config(TrainingConfig, None, {}, **values)


@pytest.fixture(scope="module")
def tiny_encoder_dir(tmp_path_factory) -> Path:  # with dropout: the CUDA random state matters
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny_bert_gpu"), dropout=0.1)


@pytest.mark.parametrize("grad_cache", [False, True])
def test_cuda_retrieval_training_in_bf16_mixed_keeps_fp32_weights_and_learns(
    tiny_encoder_dir,
    sample_dir,  # noqa: F811
    tmp_path,
    grad_cache,
):
    import torch

    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer, resolve_precision

    assert resolve_precision("auto", "gpu") == "bf16-mixed"  # what a GPU user gets
    extra = {"grad_cache": True, "grad_cache_chunk_size": 3} if grad_cache else {}
    fractions = {}
    for precision in ("auto", "32-true"):
        trainer = RetrievalTrainer(
            _retrieval_config(
                tiny_encoder_dir, tmp_path / precision, precision=precision, max_steps=4, **extra
            )
        )
        before = _snapshot(trainer.encoder.module)
        summary = trainer.train(data_path=sample_dir)
        module = trainer.encoder.module
        assert summary["steps"] == 4
        assert math.isfinite(summary["passes"][0]["train_loss"])
        # Lightning's bf16-mixed keeps float32 master weights: the updates are not rounded away.
        assert next(module.parameters()).dtype == torch.float32
        fractions[precision] = _changed_fraction(before, module)
        metrics = trainer.evaluate()  # encodes on CUDA
        assert 0.0 <= metrics["R@10"] <= 1.0 and metrics["n"] > 0
    assert fractions["32-true"] > 0.5, fractions
    assert fractions["auto"] >= 0.9 * fractions["32-true"], fractions


def test_cuda_grad_cache_replays_the_cuda_random_state(tmp_path, fp32_matmuls):
    # Dropout on CUDA draws from the CUDA generator: each chunk's re-encoding must replay the
    # CUDA state its cached pass started from, or the gradients belong to other dropout masks.
    import torch

    from lean_dojo_v2.models.retrieval import load_encoder
    from lean_dojo_v2.trainer.retrieval_loss import (
        cached_contrastive_backward,
        masked_contrastive_loss,
    )

    enc = load_encoder(
        str(build_tiny_encoder(tmp_path / "enc", seed=4, dropout=0.3)), device="cuda"
    )
    enc.module.train()
    queries = enc.tokenize(["⊢ a ∧ b", "⊢ a ∨ b", "⊢ ¬ a", "n : ℕ\n⊢ n + 0 = n", "⊢ 0 < 2"])
    cands = enc.tokenize(["And.intro", "Or.inl", "Not.intro", "Nat.add_zero", "two_pos", "absurd"])
    targets = torch.tensor([0, 1, 2, 3, 4], device="cuda")

    def chunks(batch):
        n = len(next(iter(batch.values())))
        return [{k: v[i : i + 2] for k, v in batch.items()} for i in range(0, n, 2)]

    def grads():
        return {
            n: p.grad.detach().clone()
            for n, p in enc.module.named_parameters()
            if p.grad is not None
        }

    # The reference: a with-grad pass over the same chunks, in the same order, from one seed.
    torch.manual_seed(0)
    enc.module.zero_grad(set_to_none=True)
    q = torch.cat([enc.embed(b) for b in chunks(queries)])
    c = torch.cat([enc.embed(b) for b in chunks(cands)])
    ref = masked_contrastive_loss(q, c, targets)
    ref.backward()
    g_ref = grads()
    after_ref = torch.cuda.get_rng_state()

    torch.manual_seed(0)
    enc.module.zero_grad(set_to_none=True)
    loss = cached_contrastive_backward(enc.embed, queries, cands, targets, None, chunk_size=2)
    g_cached = grads()
    assert loss.device.type == "cuda"
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    for name in g_ref:
        torch.testing.assert_close(g_cached[name], g_ref[name], rtol=1e-4, atol=1e-6, msg=name)
    # The random state afterwards is where the plain pass leaves it: training goes on unchanged.
    assert torch.equal(torch.cuda.get_rng_state(), after_ref)
    # Dropout really draws from the CUDA generator: another CUDA seed, another loss.
    torch.manual_seed(0)
    torch.cuda.manual_seed(1)
    with torch.no_grad():
        other = masked_contrastive_loss(enc.embed(queries), enc.embed(cands), targets)
    assert other.item() != pytest.approx(ref.item(), rel=1e-6)


def _two_repo_db(path: Path, sample: Path):
    from lean_dojo_v2.database import DynamicDatabase

    db = DynamicDatabase(path)
    db.add_repository(sample)
    db.add_repository(sample, url="https://github.com/example/other", commit="b" * 40)
    return db


def test_cuda_ewc_curriculum_penalises_on_the_gpu_in_bf16_mixed(
    tiny_encoder_dir,
    sample_dir,  # noqa: F811
    tmp_path,
):
    import pytorch_lightning as pl

    from lean_dojo_v2.trainer.ewc import EWC
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    seen: list[dict] = []

    class Watch(pl.Callback):
        def on_fit_start(self, trainer, pl_module):
            seen.append({"precision": trainer.precision})

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            penalty = pl_module.ewc.penalty(pl_module.net)
            seen[-1].update(ewc=penalty.item(), device=penalty.device.type)
            seen[-1]["ewc_active"] = pl_module.ewc.active

    db = _two_repo_db(tmp_path / "db.sqlite", sample_dir)
    out = tmp_path / "out"
    cfg = _retrieval_config(tiny_encoder_dir, out, max_steps=3, lambda_value=10.0)
    summary = RetrievalTrainer(cfg, callbacks=[Watch()]).train(database=db)
    assert len(summary["passes"]) == 2 and summary["ewc_tasks"] == 2
    assert [s["precision"] for s in seen] == ["bf16-mixed", "bf16-mixed"]
    # The Fisher is estimated on the GPU after pass 1; the penalty is computed there in pass 2.
    assert summary["passes"][0]["fisher"]["fisher_sum"] > 0
    assert seen[0]["ewc_active"] is False and seen[0]["ewc"] == 0.0
    assert seen[1]["ewc_active"] is True and seen[1]["device"] == "cuda"
    assert math.isfinite(seen[1]["ewc"]) and seen[1]["ewc"] > 0.0
    saved = EWC.load(out / "ewc.pt")  # saved on the CPU, loadable without a GPU
    assert saved.tasks == 2 and all(f.device.type == "cpu" for f in saved.fisher.values())


# ---------------------------------------------------------------------------- progress


def test_cuda_progress_trainer_in_bf16_trains_fp32_weights_on_the_gpu(tmp_path, monkeypatch):
    import torch
    import transformers

    from lean_dojo_v2.models.progress import ProgressModel
    from lean_dojo_v2.trainer.progress_trainer import ProgressTrainer

    base = build_tiny_bert(tmp_path / "bert")
    rows = sample_rows_file(tmp_path / "rows.jsonl", 24)
    seen: dict = {}
    train = transformers.Trainer.train

    def watched(self, *args, **kwargs):
        before = _snapshot(self.model)
        output = train(self, *args, **kwargs)
        seen[self.args.bf16] = _changed_fraction(before, self.model)
        seen["device"] = next(self.model.parameters()).device.type
        seen["dtype"] = next(self.model.parameters()).dtype
        return output

    monkeypatch.setattr(transformers.Trainer, "train", watched)
    results = {}
    for bf16 in (True, False):
        out = tmp_path / f"model-{bf16}"
        trainer = ProgressTrainer(
            rows,
            model_name=str(base),
            output_dir=str(out),
            max_steps=3,
            batch_size=4,
            max_length=128,
            progress_bar=False,
            logging_steps=1,
            device="cuda",
            trainer_args={"bf16": bf16},
        )
        results[bf16] = trainer.train()
        assert seen["device"] == "cuda" and seen["dtype"] == torch.float32
    result = results[True]
    assert result.steps == 3 and math.isfinite(result.first_loss) and math.isfinite(result.mae)
    assert seen[False] > 0.5 and seen[True] >= 0.9 * seen[False], seen
    model = ProgressModel.load(str(tmp_path / "model-True"), device="cuda")
    predicted = model.predict(["n : ℕ\n⊢ n + 0 = n", "⊢ True"])
    assert len(predicted) == 2 and all(math.isfinite(p) and p >= 0 for p in predicted)


def test_cuda_grpo_lora_in_bf16_trains_a_float32_adapter_with_finite_rewards(
    tiny_model_dir, sample_path, tmp_path
):
    import torch
    from safetensors.torch import load_file

    from lean_dojo_v2.trainer.grpo_trainer import GRPOTrainer

    trainer = GRPOTrainer(
        str(tiny_model_dir),
        output_dir=tmp_path / "grpo",
        lora_config=True,
        device="cuda",
        dtype="bfloat16",
        bf16=None,
        batch_size=4,
        num_generations=2,
        max_completion_length=8,
        max_prompts=4,
        max_steps=3,
        lr=1e-2,
        progress_bar=False,
        curves=False,
        report_to=["none"],
        reward_backend="replay",
        reward_envs=2,
    )
    result = trainer.train(data_path=sample_path)
    model = trainer.model
    assert next(model.parameters()).device.type == "cuda"
    assert trainer._trl_trainer.args.bf16 is True
    assert result.steps == 3 and result.reward_backend == "replay"
    assert math.isfinite(result.mean_reward_first) and math.isfinite(result.mean_reward_last)
    adapter = load_file(str(tmp_path / "grpo" / "adapter_model.safetensors"))
    assert adapter and all(t.dtype == torch.float32 for t in adapter.values())
    assert any(k.endswith("lora_B.weight") and v.abs().sum() > 0 for k, v in adapter.items())


def test_cuda_sft_loads_the_model_straight_onto_the_gpu(tiny_model_dir, tmp_path, monkeypatch):
    # The model was loaded on the host and copied over; a 7B model then needs
    # its whole size in host memory first. from_pretrained must place it on the GPU itself.
    from transformers import AutoModelForCausalLM

    from lean_dojo_v2.trainer.causal_lm_loading import load_causal_lm
    from lean_dojo_v2.trainer.sft_config import SFTConfig

    calls: list[dict] = []
    original = AutoModelForCausalLM.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        calls.append(kwargs)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", classmethod(spy))
    cfg = SFTConfig(model_name=str(tiny_model_dir), output_dir=str(tmp_path / "o"), device="cuda")
    loaded = load_causal_lm(cfg, None, lora_config=None, who="SFTTrainer")
    assert calls and calls[0].get("device_map") == {"": "cuda"}, calls
    assert {p.device.type for p in loaded.model.parameters()} == {"cuda"}
