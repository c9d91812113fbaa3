"""Layer 3 (trainer): ``lean-dojo-v2 train premise-selector``, LeanHammer's premise selector on
ntp-toolkit data (registered from ``trainer/cli.py``). The flags are those of LeanHammer's
``train.py -h`` that apply here, under our names and LeanHammer's. Nothing heavy is imported
until it runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config.cli import ParserT, add_config_options, print_config_help
from .cli_options import add_run_options, print_summary, training_config_from_args
from .premise_selector_config import POOLING_MODES, PREMISE_SOURCES, RETRIEVAL_MASK_MODES


def _ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected k values like 8,16,32, got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"k values must be integers >= 1, got {text!r}")
    return ks


def _bool(text: str) -> bool:
    """``True``/``False`` as HfArgumentParser takes them (``true``, ``yes``, ``1``, ...)."""
    low = text.strip().lower()
    if low in ("true", "yes", "y", "1", "t"):
        return True
    if low in ("false", "no", "n", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


_BOOL = {"type": _bool, "nargs": "?", "const": True, "metavar": "BOOL"}

# (flag names, config key, argparse keywords)
_FLAGS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (
        ("--data-dir", "--data_dir"),
        "data_dir",
        {
            "metavar": "DIR",
            "help": "ntp-toolkit output directory (Declarations/, Imports/, "
            "TrainingDataWithPremises/, HammerBlacklist.jsonl, revision)",
        },
    ),
    (
        ("--model", "--model_name_or_path"),
        "model_name",
        {
            "metavar": "NAME_OR_DIR",
            "help": "encoder to start from (default: bundled all-MiniLM-L6-v2)",
        },
    ),
    (
        ("--batch-size", "--per_device_train_batch_size"),
        "batch_size",
        {"type": int, "metavar": "N", "help": "training examples per batch (default 16)"},
    ),
    (
        ("--lr", "--learning_rate"),
        "lr",
        {"type": float, "metavar": "LR", "help": "peak learning rate (default 2e-5)"},
    ),
    (
        ("--epochs", "--num_train_epochs"),
        "max_epochs",
        {"type": int, "metavar": "N", "help": "training epochs (default 1)"},
    ),
    (
        ("--max-steps", "--max_steps"),
        "max_steps",
        {
            "type": int,
            "metavar": "N",
            "help": "stop after N optimizer steps (default -1: all epochs)",
        },
    ),
    (
        ("--k",),
        "ks",
        {
            "type": _ks,
            "metavar": "K,K,...",
            "help": "k of recall@k and FullRecall@k (default 8,16,32)",
        },
    ),
    (
        ("-o", "--output", "--output_dir"),
        "output_dir",
        {"metavar": "DIR", "help": "output directory (default outputs-premise-selector)"},
    ),
    (
        ("--run-name", "--run_name"),
        "run_name",
        {"metavar": "NAME", "help": "MODEL in retrieved_premises/dot_{valid,test}-MODEL.json"},
    ),
    (
        ("--num-negatives", "--num_negatives_per_state"),
        "num_negatives",
        {"type": int, "metavar": "N", "help": "hard negatives per example (default 3)"},
    ),
    (
        ("--mini-batch-size", "--mini_batch_size"),
        "mini_batch_size",
        {
            "type": int,
            "metavar": "N",
            "help": "use the cached (GradCache) loss, encoding N texts at a time",
        },
    ),
    (
        ("--premises",),
        "premise_source",
        {
            "choices": PREMISE_SOURCES,
            "help": "premises of a state: its declaration's "
            "whole proof (default, LeanHammer) or its next tactic",
        },
    ),
    (
        ("--valid-fraction",),
        "valid_fraction",
        {"type": float, "metavar": "F", "help": "fraction of modules for valid (default 0.1)"},
    ),
    (
        ("--test-fraction",),
        "test_fraction",
        {"type": float, "metavar": "F", "help": "fraction of modules for test (default 0.1)"},
    ),
    (
        ("--seed",),
        "seed",
        {"type": int, "metavar": "N", "help": "split and training seed (default 0)"},
    ),
    (("--device",), "device", {"metavar": "DEV", "help": "auto, cpu, cuda or cuda:N"}),
    (
        ("--filter",),
        "filter",
        {
            **_BOOL,
            "help": "LeanHammer's filters: HammerBlacklist.jsonl plus its module (Aesop, Lean, "
            "Tactic, Util, ...), name (Lean, Lake, Qq) and type (Lean.*) blacklists (default "
            "true; --filter false or --no-filter keeps everything)",
        },
    ),
    (
        ("--mathlib-only", "--mathlib_only"),
        "mathlib_only",
        {**_BOOL, "help": "read only modules named Mathlib.* (premises and states)"},
    ),
    (
        ("--nameless",),
        "nameless",
        {
            **_BOOL,
            "help": "premise text without the premise's own name (needs type or signature "
            "in Declarations)",
        },
    ),
    (
        ("--is-sentence-transformer", "--is_sentence_transformer"),
        "is_sentence_transformer",
        {
            **_BOOL,
            "help": "true: the model is a sentence-transformers folder, pooled as its config "
            "says; false: a plain Hugging Face encoder + --pooling-mode (default: true when the "
            "model has a sentence-transformers config)",
        },
    ),
    (
        ("--pooling-mode", "--pooling_mode"),
        "pooling_mode",
        {
            "choices": POOLING_MODES,
            "help": "pooling of a plain Hugging Face encoder (default mean; LeanHammer's default "
            "lasttoken suits decoder-only models)",
        },
    ),
    (
        ("--retrieval-mask-mode", "--retrieval_mask_mode"),
        "retrieval_mask_mode",
        {
            "choices": RETRIEVAL_MASK_MODES,
            "help": "in-batch candidates left out of a state's contrastive loss: none; "
            "no_positive (default: its other positives and its own declaration); only_negative "
            "(everything but premises accessible to it or in unrelated modules)",
        },
    ),
    (
        ("--use-qlora", "--use_qlora"),
        "use_qlora",
        {
            **_BOOL,
            "help": "4-bit QLoRA: not available (needs CUDA + bitsandbytes, and LeanHammer's "
            "train.py does not implement it either); true is an error saying why",
        },
    ),
]


def add_premise_selector_parser(train_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``premise-selector`` to the ``train`` subcommands."""
    p = train_sub.add_parser(
        "premise-selector",
        help="train LeanHammer's premise selector on ntp-toolkit output",
        description="Train a bi-encoder premise selector (LeanHammer) on an ntp-toolkit output "
        "directory: modules split into train/valid/test, masked in-batch contrastive training "
        "(RetrievalTrainer), recall@k and FullRecall@k over the premises accessible to each "
        "theorem, static retrievals in OUTPUT/retrieved_premises/dot_{valid,test}-MODEL.json and "
        "the exported retriever (model + corpus + embeddings) in OUTPUT/retriever. "
        "See docs/premise_selector.md.",
    )
    for names, key, kw in _FLAGS:
        p.add_argument(*names, dest=key, default=None, **kw)
    p.add_argument(
        "--no-filter",
        action="store_true",
        help="turn off all of LeanHammer's filters (= --filter false): keep blacklisted "
        "premises and Aesop/Lean/Tactic/... declarations",
    )
    add_config_options(
        p,
        config_help="YAML file of PremiseSelectorConfig keys",
        set_help="override one config key (repeatable): --set eval_batch_size=32",
        output_dir=False,  # -o is one of _FLAGS (LeanHammer's --output_dir)
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_run_options(
        p,
        force_help="replace the output directory even if it holds files lean-dojo-v2 did not write",
        help_config="list every config key with its default",
    )
    p.set_defaults(func=cmd_train_premise_selector)
    return p


def cmd_train_premise_selector(args: argparse.Namespace) -> int:
    from .premise_selector import PremiseSelectorTrainer
    from .premise_selector_config import PremiseSelectorConfig

    if print_config_help(args, PremiseSelectorConfig):
        return 0
    values: dict[str, Any] = {
        key: getattr(args, key) for _, key, _ in _FLAGS if getattr(args, key) is not None
    }
    if args.no_filter:
        if values.get("filter") is True:
            from ..errors import ConfigValueError

            raise ConfigValueError("--no-filter contradicts --filter true; give one of them")
        values["filter"] = False
    if args.quiet:
        values["progress_bar"] = False
    config = training_config_from_args(args, PremiseSelectorConfig, **values)
    result = PremiseSelectorTrainer(config).train()

    def text() -> list[str]:
        lines = []
        for split, m in result.metrics.items():
            shown = ", ".join(
                f"{k} {v:.3f}" for k, v in m.items() if k != "n" and isinstance(v, float)
            )
            lines.append(f"{split}: {m.get('n', 0)} queries; {shown}")
        lines.append(f"retrievals: {', '.join(str(p) for p in result.retrieval_files.values())}")
        lines.append(f"retriever: {result.retriever_dir}")
        return lines

    print_summary(result.to_dict(), args.json, text)
    return 0
