"""Layer 3 (trainer): ``lean-dojo-v2 train retrieval``, train a premise retriever; then evaluate it on
the test split and, with ``--export DIR``, write the retriever (model + corpus + embeddings).
"""

from __future__ import annotations

import argparse

from ..config.cli import ParserT, add_config_options, print_config_help
from ..data.sample import sample_dataset_path
from ..errors import LeanDojoError
from .cli_options import (
    add_data_options,
    add_repo_option,
    add_run_options,
    print_summary,
    repos_from_args,
    training_config_from_args,
)
from .run_dir import check_export_dir, is_main_process, local_model_path


def add_retrieval_parser(train_sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Add ``retrieval`` to the ``train`` subcommands."""
    p = train_sub.add_parser(
        "retrieval",
        help="train a premise retriever (bi-encoder, masked contrastive loss, EWC curriculum)",
        description="Train a bi-encoder premise retriever (default: the bundled all-MiniLM-L6-v2) "
        "on PyTorch Lightning with a masked in-batch contrastive loss and hard negatives, on a "
        "LeanDojo-layout dataset (--data; default: the bundled sample) or on the database's "
        "curriculum (--db: one pass per repository, easiest first, each continuing from the "
        "previous weights, EWC between them; the run is recorded in the database). Settings come "
        "from TrainingConfig: a YAML --config file (configs/retrieval_*.yaml), then --set "
        "overrides (see --help-config). Output (encoder/, Lightning checkpoints, TensorBoard "
        "logs, summary.json) goes to output_dir; an unfinished run there is resumed from its "
        "last checkpoint. Afterwards the test split is evaluated (R@1, R@10, MRR, FullRecall@10).",
    )
    add_data_options(p, "LeanDojo dataset directory (with corpus.jsonl)")
    add_config_options(
        p,
        config_help="YAML file of TrainingConfig keys",
        set_help="override one config key (repeatable), typed by the key: --set lr=1e-5 "
        "--set grad_cache=true --set devices=4 --set strategy=ddp",
    )
    add_repo_option(p)
    p.add_argument(
        "--export",
        metavar="DIR",
        help="also write the trained retriever (model + corpus + embeddings) to DIR",
    )
    p.add_argument(
        "--no-eval", action="store_true", help="skip the test-split evaluation after training"
    )
    add_run_options(
        p,
        force_help="replace output_dir (and --export DIR) even if it holds files lean-dojo-v2 "
        "did not write or another unfinished run (its contents are deleted); never the data, "
        "the model it loads, or each other",
    )
    p.set_defaults(func=cmd_train_retrieval)
    return p


def cmd_train_retrieval(args: argparse.Namespace) -> int:
    from .retrieval_config import TrainingConfig

    if print_config_help(args, TrainingConfig):
        return 0
    repos = repos_from_args(args)
    config = training_config_from_args(args, TrainingConfig)
    data = args.data
    if data is None and args.db is None:
        data = str(sample_dataset_path())

    if args.export:
        # Checked before training: a refused export must not cost a training run.
        inputs = [p for p in (data, args.db, local_model_path(config.model_name)) if p]
        check_export_dir(args.export, out=config.output_dir, inputs=inputs, force=args.force)

    from .retrieval_trainer import RetrievalTrainer

    trainer = RetrievalTrainer.from_config(config)
    result = trainer.train(repos=repos, database=args.db, data_path=data)
    if not is_main_process():  # another DDP process: rank 0 evaluates, exports and reports
        return 0
    test: dict | None = None
    test_error = None
    if not args.no_eval:
        try:
            test = trainer.evaluate(split="test")
        except LeanDojoError as exc:  # a missing/empty test split must not lose the trained model
            test_error = str(exc)
    exported = str(trainer.export(args.export, force=args.force)) if args.export else None
    keys = "output_dir encoder_dir steps examples passes seconds val metrics ewc_tasks run_id"
    keys += " resumed_from resume_exact resume_note export"
    out = {k: result.get(k) for k in keys.split()}
    out.update(passes=len(result.passes), metrics=test, export=exported)
    if test_error:
        out["metrics_error"] = test_error

    def text() -> list[str]:
        lines = [
            f"trained {result.steps} steps on {result.examples} examples in "
            f"{len(result.passes)} pass(es), {result.seconds:.1f} s; encoder in "
            f"{result.encoder_dir}"
        ]
        if test:
            lines.append(
                "test: "
                + ", ".join(f"{k} {v:.4f}" if k != "n" else f"n {int(v)}" for k, v in test.items())
            )
        elif test_error:
            lines.append(f"test: not evaluated ({test_error})")
        if exported:
            lines.append(f"retriever exported to {exported}")
        return lines

    print_summary(out, args.json, text)
    return 0
