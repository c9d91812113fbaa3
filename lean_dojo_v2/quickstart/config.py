"""The settings of ``lean-dojo-v2 quickstart`` (no torch here)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

SEARCH_DTYPES = ("auto", "float32", "bfloat16")

DEFAULT_DIR_NAME = "quickstart"
"""The default output folder's name under ``RAID_DIR``."""


def default_output_dir() -> Path:
    """``RAID_DIR/quickstart`` (``RAID_DIR`` defaults to ``./raid``; see :mod:`lean_dojo_v2.config`)."""
    from ..config import get_settings

    return get_settings().raid_dir / DEFAULT_DIR_NAME


@dataclass
class QuickstartConfig:
    r"""Settings of :func:`~lean_dojo_v2.quickstart.run.run_quickstart`. The defaults are the
    measured design of ``docs/quickstart.md``: change them to experiment, not to make it work.

    Parameters:
        > Parameters that control the model and outputs

        model_name (`str` or `None`, *optional*, defaults to `None`):
            The model trained and searched with (any form `load_model` takes). `None`: the bundled
            SmolLM2-135M-Instruct.
        output_dir (`str` or `None`, *optional*, defaults to `None`):
            Where the database, training data, adapter, report and plot go; it must be new,
            empty or a quickstart output. `None`: `RAID_DIR/quickstart`.
        retrain (`bool`, *optional*, defaults to `False`):
            Train again even when `output_dir` holds an adapter trained with these settings.

        > Parameters that control the training (LoRA SFT on the focused set)

        train_steps (`int`, *optional*, defaults to `8`):
            Optimizer steps (64 pairs at `batch_size` 8: 1.4 epochs of the 46 training pairs;
            12 steps proved the same theorems in 76 s more).
        batch_size (`int`, *optional*, defaults to `8`):
            Pairs per optimizer step.
        lr (`float`, *optional*, defaults to `2e-3`):
            Peak learning rate (linear decay). High for LoRA, on purpose: a few steps must fit.
        lora_r (`int`, *optional*, defaults to `16`):
            LoRA rank (alpha is twice the rank).
        lora_dropout (`float`, *optional*, defaults to `0.0`):
            Dropout on the LoRA layers' inputs: none, since 8 steps cannot overfit and on a CPU
            the dropout masks cost about a tenth of a step.
        max_seq_len (`int`, *optional*, defaults to `256`):
            Longest training pair in tokens (the focused pairs are 70-155).

        > Parameters that control the search (the same for both models)

        num_samples (`int`, *optional*, defaults to `8`):
            Tactics sampled per expanded state.
        temperature (`float`, *optional*, defaults to `1.0`):
            Sampling temperature.
        max_new_tokens (`int`, *optional*, defaults to `16`):
            Longest tactic in tokens (the focused tactics are at most 24 characters).
        search_dtype (`str`, *optional*, defaults to `"auto"`):
            Precision of the model while it searches (both models alike): `auto` is `bfloat16`
            where the device computes it natively (a CUDA GPU with bf16; a CPU with AVX512-BF16
            or AMX: decoding 40 % faster than float32 there), else `float32`; or name one.
            Training is float32 either way.
        searches_at_once (`int`, *optional*, defaults to `8`):
            Theorems searched at the same time, their model calls answered together, one
            batched call per round (deterministic: the same theorems, the same tactics): on a
            CPU a batch of 8 states decodes in 3 times the time of one.
        max_expansions (`int`, *optional*, defaults to `8`):
            States expanded per theorem before giving up.
        timeout (`float`, *optional*, defaults to `120.0`):
            Wall-clock seconds per theorem.
        max_theorems (`int` or `None`, *optional*, defaults to `None`):
            Search only the first this many theorems of each split (smoke runs). `None`: all.
        seed (`int`, *optional*, defaults to `0`):
            Seed of training and sampling.
        threads (`int` or `None`, *optional*, defaults to `None`):
            torch CPU threads. `None`: the cores not busy when the run starts (measured over half
            a second; at least 1): on a 2-core machine that other jobs keep busy, 2 threads made
            a matrix product 10 times slower than 1.
        progress (`bool`, *optional*, defaults to `True`):
            Progress bars on stderr.
    """

    model_name: str | None = None
    output_dir: str | None = None
    retrain: bool = False
    train_steps: int = 8
    batch_size: int = 8
    lr: float = 2e-3
    lora_r: int = 16
    lora_dropout: float = 0.0
    max_seq_len: int = 256
    num_samples: int = 8
    temperature: float = 1.0
    max_new_tokens: int = 16
    search_dtype: str = "auto"
    searches_at_once: int = 8
    max_expansions: int = 8
    timeout: float = 120.0
    max_theorems: int | None = None
    seed: int = 0
    threads: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        for name in (
            "train_steps",
            "batch_size",
            "lora_r",
            "max_seq_len",
            "num_samples",
            "max_new_tokens",
            "max_expansions",
            "searches_at_once",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"quickstart {name} must be a whole number >= 1, got {value!r}")
        for name in ("lr", "temperature", "timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(f"quickstart {name} must be a finite number > 0, got {value!r}")
        if (
            isinstance(self.lora_dropout, bool)
            or not isinstance(self.lora_dropout, (int, float))
            or not 0 <= self.lora_dropout < 1
        ):
            raise ConfigError(
                f"quickstart lora_dropout must be in [0, 1), got {self.lora_dropout!r}"
            )
        if self.search_dtype not in SEARCH_DTYPES:
            raise ConfigError(
                f"quickstart search_dtype must be one of {', '.join(SEARCH_DTYPES)}, "
                f"got {self.search_dtype!r}"
            )
        if self.max_theorems is not None and (
            isinstance(self.max_theorems, bool)
            or not isinstance(self.max_theorems, int)
            or self.max_theorems < 1
        ):
            raise ConfigError(
                f"quickstart max_theorems must be >= 1 or None, got {self.max_theorems!r}"
            )
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ConfigError(f"quickstart threads must be >= 1 or None, got {self.threads!r}")

    def out(self) -> Path:
        """The output directory, resolved."""
        return (
            Path(self.output_dir).expanduser().resolve()
            if self.output_dir
            else default_output_dir()
        )

    def training_settings(self) -> dict[str, object]:
        """What decides the trained adapter: a stored adapter is reused only when these match."""
        return {
            "model_name": self.model_name,
            "train_steps": self.train_steps,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "lora_r": self.lora_r,
            "lora_dropout": self.lora_dropout,
            "max_seq_len": self.max_seq_len,
            "seed": self.seed,
        }


def search_dtype(config: QuickstartConfig) -> str:
    """The precision the search runs in (``auto`` resolved for this machine's device)."""
    if config.search_dtype != "auto":
        return config.search_dtype
    from ..models.loading import native_bf16, resolve_device

    return "bfloat16" if native_bf16(resolve_device("auto")) else "float32"


def auto_threads(sample_seconds: float = 0.5) -> int:
    """CPU threads for torch: the cores not busy now, measured over ``sample_seconds``.

    Not the load average: it trails by minutes, so right after ``pip install`` (what ``make
    quickstart`` runs first) a 1-minute average near 1 read as a busy core on an idle 2-core
    machine, and the whole run trained and searched on one thread."""
    from ..system.processes import busy_cores

    cores = os.cpu_count() or 1
    return max(1, min(cores, int(cores - busy_cores(sample_seconds) + 0.5)))
