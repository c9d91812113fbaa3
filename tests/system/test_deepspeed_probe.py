"""DeepSpeed's accelerator probe prints a warning on stdout where there is no accelerator; a run
on such a machine tells it the answer first, and a value the user set is kept."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lean_dojo_v2.system.deepspeed_probe import ENV, settle_deepspeed_accelerator


def test_no_accelerator_means_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    settle_deepspeed_accelerator()
    import os

    assert os.environ[ENV] == "cpu"


def test_an_accelerator_or_the_users_value_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import torch

    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    settle_deepspeed_accelerator()
    assert ENV not in os.environ
    monkeypatch.setenv(ENV, "xpu")
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    settle_deepspeed_accelerator()
    assert os.environ[ENV] == "xpu"


def test_importing_deepspeed_after_it_prints_nothing_on_stdout() -> None:
    # deepspeed is in make install's extras; without the call this prints the warning
    code = (
        "from lean_dojo_v2.system.deepspeed_probe import settle_deepspeed_accelerator\n"
        "settle_deepspeed_accelerator()\n"
        "import deepspeed\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "Setting accelerator" not in done.stdout, done.stdout


@pytest.mark.slow  # a training run in its own process (9 s); make test-slow runs it
def test_a_training_run_prints_no_deepspeed_warning(tmp_path) -> None:
    """A model chosen and saved the way the trainers do (device resolved, save_pretrained): no
    DeepSpeed line on stdout, where the commands print their results."""
    code = (
        "import os\n"
        "os.environ.pop('DS_ACCELERATOR', None)\n"
        "from transformers import LlamaConfig, LlamaForCausalLM\n"
        "from lean_dojo_v2.models.loading import resolve_device\n"
        "device = resolve_device('auto')\n"
        "cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,\n"
        "                  num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)\n"
        f"LlamaForCausalLM(cfg).to(device).save_pretrained({str(tmp_path / 'm')!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "Setting accelerator" not in done.stdout, done.stdout
