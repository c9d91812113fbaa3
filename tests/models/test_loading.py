"""One loading path: forms, errors, devices/dtypes, adapters, and the atomic GGUF cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lean_dojo_v2.errors import LeanDojoError, ModelError, ModelNotFoundError
from lean_dojo_v2.models import load_model, resolve_model_path
from lean_dojo_v2.models.loading import (
    MANIFEST,
    conversion_dir,
    is_complete,
    materialize,
    resolve_device,
    resolve_dtype,
)

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ resolving names


def test_unknown_hub_id_offline_names_what_was_tried_and_the_valid_forms(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model_path("no-such-org/no-such-prover-model")
    text = str(info.value)
    assert "no-such-org/no-such-prover-model" in text and "local path" in text
    assert "offline" in text and "smollm2" in text and ".gguf" in text
    assert isinstance(info.value, LeanDojoError) and isinstance(info.value, FileNotFoundError)


def test_unknown_local_path_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFoundError, match="valid forms|Valid forms"):
        resolve_model_path(str(tmp_path / "missing" / "model.gguf"))


def test_directory_without_a_model_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ModelNotFoundError, match="without config.json"):
        resolve_model_path(str(tmp_path))


def test_file_that_is_not_gguf_is_refused(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"\0")
    with pytest.raises(ModelNotFoundError, match="not a .gguf"):
        resolve_model_path(str(f))


def test_load_model_with_unknown_id_offline_raises_model_not_found(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError):
        load_model("no-such-org/no-such-model", device="cpu")


def test_local_directory_resolves_to_itself(tiny_causal_dir):
    assert resolve_model_path(str(tiny_causal_dir)) == str(tiny_causal_dir.resolve())


# ------------------------------------------------------------------ devices and dtypes


def test_device_and_dtype_choices():
    import torch

    assert resolve_device("cpu") == "cpu"
    assert resolve_dtype("auto", "cpu") is torch.float32
    assert resolve_dtype("bf16", "cpu") is torch.bfloat16
    with pytest.raises(ModelError, match="valid devices"):
        resolve_device("tpu")
    with pytest.raises(ModelError, match="valid dtypes"):
        resolve_dtype("int3")
    if not torch.cuda.is_available():
        assert resolve_device("auto") == "cpu"
        with pytest.raises(ModelError, match="CUDA is not available"):
            resolve_device("cuda:0")


# ------------------------------------------------------------------ loading


def test_load_causal_for_inference(tiny_causal):
    assert tiny_causal.kind == "causal" and tiny_causal.device == "cpu"
    assert tiny_causal.tokenizer.padding_side == "left"
    assert not tiny_causal.model.training
    assert tiny_causal.tokenizer.pad_token is not None


def test_load_seq2seq(tiny_seq2seq):
    assert tiny_seq2seq.kind == "seq2seq"
    assert type(tiny_seq2seq.model).__name__ == "T5ForConditionalGeneration"


def test_load_for_training_is_in_train_mode(tiny_causal_dir):
    loaded = load_model(str(tiny_causal_dir), device="cpu", for_training=True)
    assert loaded.model.training


def _greedy(model, tok, text: str, n: int = 6):
    import torch

    enc = tok([text], return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        return model.generate(**enc, max_new_tokens=n, do_sample=False)[0].tolist()


def test_lora_adapter_saves_reloads_and_generates(tiny_causal_dir, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model

    base = load_model(str(tiny_causal_dir), device="cpu", for_training=True)
    peft_model = get_peft_model(
        base.model,
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
    )
    peft_model.eval()
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(adapter)
    assert (adapter / "adapter_config.json").is_file()
    text = "<|im_start|>user\nn : ℕ\n⊢ n + 0 = n<|im_end|>\n<|im_start|>assistant\n"
    expected = _greedy(peft_model, base.tokenizer, text)

    by_keyword = load_model(str(tiny_causal_dir), adapter=str(adapter), device="cpu")
    by_config = load_model(adapter=str(adapter), device="cpu")  # base from adapter_config.json
    as_name = load_model(str(adapter), device="cpu")  # an adapter directory as the name
    for loaded in (by_keyword, by_config, as_name):
        assert "adapter" in loaded.source
        assert _greedy(loaded.model, loaded.tokenizer, text) == expected
    plain = load_model(str(tiny_causal_dir), device="cpu")
    enc = plain.tokenizer([text], return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        assert not torch.allclose(plain.model(**enc).logits, by_config.model(**enc).logits)

    from lean_dojo_v2.models.generator import HFTacticGenerator

    out = HFTacticGenerator(by_config, strategy="greedy", max_new_tokens=8).generate(["⊢ True"], 1)
    assert len(out) == 1


def test_adapter_whose_base_is_gone_asks_for_the_base(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(tmp_path / "moved-away"), "peft_type": "LORA"})
    )
    with pytest.raises(ModelNotFoundError, match="pass the base explicitly"):
        load_model(adapter=str(adapter), device="cpu")


def test_missing_adapter_directory_is_a_clear_error(tiny_causal_dir, tmp_path):
    with pytest.raises(ModelNotFoundError, match="adapter_config.json"):
        load_model(str(tiny_causal_dir), adapter=str(tmp_path), device="cpu")


def test_import_models_does_not_import_torch():
    code = (
        "import sys, lean_dojo_v2.models, lean_dojo_v2.models.generator, "
        "lean_dojo_v2.models.cli\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# ------------------------------------------------------------------ the atomic GGUF cache


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir()}


def _good_build(stage: Path) -> None:
    (stage / "config.json").write_text("{}")
    (stage / "model.safetensors").write_bytes(b"w" * 4096)


_KILLED_BUILDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lean_dojo_v2.models.loading import materialize

    def build(stage):
        (stage / "model.safetensors").write_bytes(b"half")
        Path(sys.argv[2]).write_text("writing")
        time.sleep(120)

    materialize(Path(sys.argv[1]), build, "test")
    """
)


def test_conversion_survives_a_kill_mid_write(tmp_path):
    dst = tmp_path / "models" / "m-1"
    flag = tmp_path / "flag"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_BUILDER, str(dst), str(flag)], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not dst.exists()  # nothing half-written at the final path
    assert [p for p in dst.parent.iterdir() if p.name.startswith(".m-1.")]  # the staging dir

    calls = []
    out = materialize(dst, lambda s: (calls.append(s), _good_build(s)), "test")
    assert out == dst and is_complete(dst) and len(calls) == 1
    assert not [p for p in dst.parent.iterdir() if p.name.startswith(".m-1.")]
    manifest = json.loads((dst / MANIFEST).read_text())
    assert manifest["files"]["model.safetensors"] == 4096

    materialize(dst, lambda s: calls.append(s), "test")  # reused: no second build
    assert len(calls) == 1


def test_incomplete_conversion_is_rebuilt(tmp_path):
    dst = tmp_path / "m"
    materialize(dst, _good_build, "test")
    (dst / "model.safetensors").write_bytes(b"truncated")
    assert not is_complete(dst)
    materialize(dst, _good_build, "test")
    assert is_complete(dst) and _files(dst)["model.safetensors"] == 4096


_COUNTING_BUILDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lean_dojo_v2.models.loading import materialize

    def build(stage):
        with open(sys.argv[2], "a") as f:
            f.write("build\\n")
        time.sleep(0.5)
        (stage / "model.safetensors").write_bytes(b"w" * 10)

    materialize(Path(sys.argv[1]), build, "test")
    """
)


def test_concurrent_callers_convert_once(tmp_path):
    dst, log = tmp_path / "m", tmp_path / "builds.log"
    procs = [
        subprocess.Popen([sys.executable, "-c", _COUNTING_BUILDER, str(dst), str(log)], cwd=REPO)
        for _ in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert log.read_text().count("build") == 1 and is_complete(dst)


def test_conversion_dir_is_keyed_by_content(tmp_path):
    a, b = tmp_path / "a.gguf", tmp_path / "b" / "a.gguf"
    b.parent.mkdir()
    a.write_bytes(b"GGUF" + b"1" * 100)
    b.write_bytes(b"GGUF" + b"1" * 100)
    assert conversion_dir(a, tmp_path) == conversion_dir(b, tmp_path)
    b.write_bytes(b"GGUF" + b"2" * 100)
    assert conversion_dir(a, tmp_path) != conversion_dir(b, tmp_path)


def test_env_cache_dir_is_used(tmp_path, monkeypatch):
    from lean_dojo_v2.config import reset_settings
    from lean_dojo_v2.models.loading import models_cache_dir

    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path))
    reset_settings()
    try:
        assert models_cache_dir() == tmp_path / "models"
    finally:
        monkeypatch.delenv("LEAN_DOJO_V2_CACHE_DIR")
        reset_settings()
    assert os.environ.get("LEAN_DOJO_V2_CACHE_DIR") is None


def test_an_adapter_loaded_for_inference_is_merged_into_its_weights(tiny_causal_dir, tmp_path):
    """No adapter layers at every decoding step: the loaded model is the base with the adapter
    merged, giving the adapter's logits; an adapter on a weight tied to the embeddings is kept
    apart (merging it into the LM head would change the embeddings too)."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    from lean_dojo_v2.models.loading import merged_for_inference

    base = load_model(str(tiny_causal_dir), device="cpu", for_training=True)
    peft_model = get_peft_model(
        base.model,
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
    )
    peft_model.eval()
    peft_model.save_pretrained(tmp_path / "adapter")
    enc = base.tokenizer(["n : ℕ\n⊢ n + 0 = n"], return_tensors="pt")
    with torch.inference_mode():
        expected = peft_model(**enc).logits
    loaded = load_model(adapter=str(tmp_path / "adapter"), device="cpu")
    assert not isinstance(loaded.model, PeftModel)
    assert not any(hasattr(m, "lora_A") for m in loaded.model.modules())
    with torch.inference_mode():
        torch.testing.assert_close(loaded.model(**enc).logits, expected, atol=1e-5, rtol=1e-4)

    tied = load_model(str(tiny_causal_dir), device="cpu", for_training=True).model
    tied.lm_head.weight = tied.get_input_embeddings().weight
    kept = get_peft_model(tied, LoraConfig(r=4, target_modules=["lm_head", "o_proj"]))
    assert merged_for_inference(kept) is kept
