"""The one training loop for premise retrievers: :class:`RetrievalTrainer` on PyTorch Lightning
(upstream LeanDojo-v2's calls, ``output_dir``'s layout and resume: ``docs/training.md``,
"Retrieval"). It trains a :class:`~lean_dojo_v2.models.retrieval.PremiseEncoder` (one encoder
for goal states and premises) with the masked in-batch contrastive loss of :mod:`.retrieval_loss`,
hard negatives from :mod:`.retrieval_data` and :class:`.retrieval_module.RetrievalModule`; each
pass continues from the weights the previous one ended with (v2 restarted every pass from the
first checkpoint), with EWC (:mod:`.ewc`) between the repositories of a curriculum.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import warnings
from collections.abc import Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import DatasetNotFoundError, EmptyDatasetError, TrainerError
from .configured import ConfiguredTrainer
from .pass_loop import CurriculumTrainer, Pass, PassDataset, PassRun
from .result import DictResult
from .retrieval_config import TrainingConfig
from .run_dir import CHECKPOINTS, LOGS, is_main_process, pass_name, world_size

if TYPE_CHECKING:
    import pytorch_lightning as pl
    import torch
    from lightning_fabric.plugins.precision.precision import _PRECISION_INPUT
    from pytorch_lightning.loggers import Logger
    from torch import Tensor
    from torch.utils.data import DataLoader, Dataset

    from ..data.corpus import Corpus
    from ..data.model import Premise
    from ..database.records import RepositoryInfo
    from ..models.premise_index import PremiseIndex
    from ..models.retrieval import PremiseEncoder
    from ..models.retrieval_eval import RetrievalQuery
    from .ewc import EWC
    from .retrieval_data import RetrievalBatch, RetrievalExample
    from .retrieval_module import RetrievalModule

log = logging.getLogger(__name__)

ENCODER_DIR = "encoder"
EWC_FILE = "ewc.pt"
VAL_METRIC = "R@10_val"


@dataclass
class RetrievalResult(DictResult):
    """What a retrieval training run did (``summary.json``; ``train retrieval --json`` prints a
    selection). ``passes``: each pass's entry of ``training_state.json`` (label, examples, queries,
    val_queries, steps, epochs, seconds, val metrics, best_R@10_val, train_loss; ``fisher`` in a
    lifelong run); ``steps``/``examples``: summed over the passes; ``seconds``: the wall time of
    this call; ``encoder_dir``: the trained encoder (``load_encoder`` loads it); ``val``: the last
    pass's validation metrics (``R@10_val``, ...; empty without validation); ``ewc_tasks``: passes
    consolidated into the EWC penalty; ``resumed_from``: the checkpoint or encoder a resumed run
    started from; ``resume_exact``: for a resumed run, whether it reproduces the uninterrupted
    run's weights (single-process runs do; see ``trainer/exact_resume.py``), with
    ``resume_note`` saying why not; ``run_id``: the database's training-run id (database runs).
    """

    passes: list[dict[str, Any]]
    steps: int
    examples: int
    seconds: float
    output_dir: str
    encoder_dir: str
    val: dict[str, float] = field(default_factory=dict)
    ewc_tasks: int = 0
    resumed_from: str | None = None
    run_id: int | None = None
    # After run_id: the keys of summary.json keep the order they had before these were added.
    resume_exact: bool | None = None
    resume_note: str | None = None


@dataclass
class PassData:
    """What one pass trains and validates on: read from ``dataset_dir``, or handed in memory
    (:meth:`RetrievalTrainer.fit_examples`; no ``dataset_dir``)."""

    train: list[RetrievalQuery]
    corpus: Corpus
    val: list[RetrievalQuery]
    dataset_dir: Path | None = None


def resolve_precision(precision: str, accelerator: str = "auto") -> str:
    """``auto`` → ``bf16-mixed`` on a CUDA GPU that supports it, else ``32-true``."""
    if precision != "auto":
        return precision
    import torch

    bf16 = accelerator != "cpu" and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return "bf16-mixed" if bf16 else "32-true"


def _devices_arg(devices: str) -> int | list[int] | str:
    text = str(devices).strip()
    try:
        if "," in text:
            return [int(x) for x in text.split(",") if x.strip()]
        return text if text == "auto" else int(text)
    except ValueError:
        raise TrainerError(
            f"devices must be auto, a count, -1 or a list of indices like 0,2; got {devices!r}"
        ) from None


def retrieval_module_class() -> type[RetrievalModule]:
    """The ``RetrievalModule`` LightningModule class (for custom Lightning loops), imported on
    call: it loads torch and Lightning."""
    from .retrieval_module import RetrievalModule

    return RetrievalModule


class RetrievalTrainer(ConfiguredTrainer[TrainingConfig], CurriculumTrainer[RetrievalResult]):
    """Train a premise retriever (see the module docstring; ``train`` is
    :meth:`CurriculumTrainer.train`, each pass on a repository's own export, or with
    ``cumulative`` on the merged export of all so far). ``callbacks`` are extra Lightning
    callbacks added to every fit."""

    config_class = TrainingConfig
    run_kind = "retrieval"
    default_model = "all-MiniLM-L6-v2"
    run_what = "retrieval training"
    config: TrainingConfig
    # Lightning starts the other ranks itself, inside fit(): there is nobody to wait for before.
    sync_processes = False
    export_per_pass = True

    def __init__(
        self, config: TrainingConfig | None = None, *, callbacks: Sequence[pl.Callback] = ()
    ) -> None:
        if config is not None and not isinstance(config, TrainingConfig):
            raise TrainerError(
                f"RetrievalTrainer takes a TrainingConfig, got {type(config).__name__}; build one "
                "with lean_dojo_v2.trainer.load_config(TrainingConfig, path, overrides)"
            )
        self.config = config or TrainingConfig()
        self.callbacks = list(callbacks)
        self._encoder: PremiseEncoder | None = None
        self.ewc: EWC | None = None
        self.last_data_path: Path | None = None
        self.resume_inexact_reason: str | None = None  # set by each pass (exact_resume.py)
        self.last_corpus: Corpus | None = None
        self.result: RetrievalResult | None = None

    # ------------------------------------------------------------------ encoder

    @property
    def encoder(self) -> PremiseEncoder:
        """The encoder being trained (the configured base until :meth:`train` has run; loaded on
        first use)."""
        if self._encoder is None:
            self._encoder = self._load_encoder(None)
        return self._encoder

    def _load_encoder(self, from_dir: Path | None) -> PremiseEncoder:
        from ..models.retrieval import load_encoder

        source = str(from_dir) if from_dir is not None else self.config.model_name
        return load_encoder(source, device="cpu", max_length=self.config.max_seq_len)

    @property
    def output_dir(self) -> Path:
        return Path(self.config.output_dir)

    # ------------------------------------------------------------------ public API

    def fit_examples(
        self,
        train: Sequence[RetrievalQuery],
        corpus: Corpus,
        val: Sequence[RetrievalQuery] | None = None,
    ) -> RetrievalResult:
        """One pass on queries from any source (e.g. ntp-toolkit data) over ``corpus``; the same
        outputs, checkpoints and resume as :meth:`train`."""
        if not train:
            raise EmptyDatasetError("fit_examples got no training queries")
        digest = hashlib.sha256()
        for q in list(train) + list(val or []):
            digest.update(repr((q.state, tuple(q.positives), q.file_path, q.pos)).encode())
        digest.update(str(len(corpus)).encode())
        plan = [Pass(label="examples", data=PassData(list(train), corpus, list(val or [])))]
        return self._run_plan(plan, [], {"examples": digest.hexdigest()}, None, None)

    def evaluate(
        self, data_path: str | os.PathLike[str] | None = None, split: str = "test"
    ) -> dict[str, float]:
        """R@1, R@10, MRR, FullRecall@10 and n (queries: tactics with at least one corpus
        premise) of the current encoder on ``split`` of ``data_path`` (default: the dataset of the
        last pass), ranking only premises accessible at each theorem."""
        from ..data.dataset import DatasetDir
        from ..models.premise_index import DenseRetriever
        from ..models.retrieval_eval import evaluate_retriever, retrieval_queries

        path = Path(data_path) if data_path is not None else self.last_data_path
        if path is None:
            raise TrainerError(
                "evaluate() needs data_path= (a LeanDojo dataset directory) before train() has run"
            )
        d = DatasetDir(path, partial=True)
        split_file = d.split_path(self.config.split_strategy, split)
        if not split_file.is_file():
            raise DatasetNotFoundError(
                f"dataset {path} has no {split_file.relative_to(path)}; pass another split "
                "(train, val, test) or dataset"
            )
        corpus = d.corpus()
        if len(corpus) == 0:
            raise DatasetNotFoundError(
                f"dataset {path} has no corpus.jsonl (or it lists no premises): retrieval needs "
                "the premise corpus"
            )
        queries = retrieval_queries(d.theorems(self.config.split_strategy, split), corpus)
        if not queries:
            raise EmptyDatasetError(
                f"{split_file} has no tactic that uses a premise of the corpus: nothing to evaluate"
            )
        retriever, batch = DenseRetriever(*self._encoded(corpus)), self.config.eval_batch_size
        metrics = evaluate_retriever(retriever, queries, ks=(1, 10), batch_size=batch)
        return {k: metrics[k] for k in ("R@1", "R@10", "MRR", "FullRecall@10", "n")}

    def export(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write the trained encoder with the corpus of the last pass and its embeddings
        (:func:`~lean_dojo_v2.models.premise_index.export_retriever`), what the API's
        ``/retrieve`` and ``load_retriever`` load."""
        from ..models.premise_index import export_retriever
        from .run_dir import check_export_dir, local_model_path

        if self.last_corpus is None:
            raise TrainerError("export() needs a trained retriever: call train() first")
        inputs = [p for p in (self.last_data_path, local_model_path(self.config.model_name)) if p]
        check_export_dir(path, out=self.config.output_dir, inputs=inputs, force=force)
        return export_retriever(path, *self._encoded(self.last_corpus), force=force)

    def _encoded(self, corpus: Corpus) -> tuple[PremiseEncoder, PremiseIndex]:
        """The encoder on the configured device, and ``corpus`` indexed with it."""
        from ..models.premise_index import PremiseIndex

        encoder = self.encoder.to(self.config.device)
        batch = self.config.eval_batch_size
        return encoder, PremiseIndex.build(corpus, encoder, batch_size=batch, show_progress=False)

    # ------------------------------------------------------------------ the pass loop's hooks

    def _pass_repositories(self, order: list[RepositoryInfo], k: int) -> list[RepositoryInfo]:
        return order[: k + 1] if self.config.cumulative else [order[k]]

    def _dataset_files(self, path: Path) -> list[Path]:
        from ..data.dataset import DatasetDir

        strategy = self.config.split_strategy
        d = DatasetDir(path, partial=True)  # DatasetNotFoundError when it is not one
        train_file = d.split_path(strategy, "train")
        if not train_file.is_file():
            raise DatasetNotFoundError(
                f"dataset {path} has no {train_file.relative_to(path)} (set split_strategy)"
            )
        if not (path / "corpus.jsonl").is_file():
            raise DatasetNotFoundError(
                f"dataset {path} has no corpus.jsonl: the retriever trains on premises of the "
                "corpus (trace the repository with its corpus, or export it from the database)"
            )
        return [train_file, d.split_path(strategy, "val"), path / "corpus.jsonl"]

    def _pass_checkpoint(self, out: Path, k: int) -> Path | None:
        """The newest ``last*.ckpt`` of pass ``k`` (what ``fit(ckpt_path="last")`` resumes from)."""
        folder = out / CHECKPOINTS / pass_name(k)
        found = sorted(folder.rglob("last*.ckpt"), key=lambda p: p.stat().st_mtime)
        return found[-1] if found else None

    def _model_dir(self, out: Path) -> Path:
        return out / ENCODER_DIR

    def _begin(self, run: PassRun) -> None:
        from .ewc import EWC

        lam, out, resumed = self.config.lambda_value, run.out, run.first > 0
        self._encoder = self._load_encoder(out / ENCODER_DIR if resumed else None)
        resume_ewc = resumed and (out / EWC_FILE).is_file()
        self.ewc = EWC.load(out / EWC_FILE, lam) if resume_ewc else EWC(lam)

    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        data = self._read_pass(p, dataset)
        info = self._fit_pass(k, p.label, data, out)
        # Lifelong learning (EWC) is for a curriculum of repositories: a database run.
        if p.repositories and self.config.lambda_value > 0 and self.ewc is not None:
            self.ewc.consolidate(self.encoder.module, self._fisher(data))
            if is_main_process():
                self.ewc.save(out / EWC_FILE)
            info["fisher"] = self.ewc.fisher_stats()
        self.last_data_path, self.last_corpus = data.dataset_dir, data.corpus
        return info

    def _save_pass(self, out: Path) -> None:
        from .numerics import check_finite_weights

        check_finite_weights(self.encoder.module, str(out / ENCODER_DIR))
        self.encoder.save(out / ENCODER_DIR, force=True)

    def _summarise(self, run: PassRun) -> RetrievalResult:
        if self.last_corpus is None and run.plan:  # resumed after every pass was done
            k = len(run.plan) - 1
            data = self._read_pass(run.plan[k], self._pass_dataset(run, k))
            self.last_corpus, self.last_data_path = data.corpus, data.dataset_dir
        passes = run.state["passes"]
        return RetrievalResult(
            passes=passes,
            steps=sum(p["steps"] for p in passes),
            examples=sum(p["examples"] for p in passes),
            seconds=run.seconds(),
            output_dir=str(run.out),
            encoder_dir=str(run.out / ENCODER_DIR),
            val=next((p["val"] for p in reversed(passes) if p.get("val")), {}),
            ewc_tasks=self.ewc.tasks if self.ewc is not None else 0,
            resumed_from=run.resumed_from,
            resume_exact=None if run.resumed_from is None else self.resume_inexact_reason is None,
            resume_note=None if run.resumed_from is None else self.resume_inexact_reason,
        )

    # ------------------------------------------------------------------ one pass

    def _read_pass(self, p: Pass, dataset: PassDataset) -> PassData:
        """The train and val queries and the corpus of pass ``p``."""
        if p.data is not None:
            assert isinstance(p.data, PassData)  # what fit_examples hands the loop
            return p.data
        from ..data.dataset import DatasetDir
        from ..models.retrieval_eval import retrieval_queries

        assert dataset.path is not None
        d, strategy = DatasetDir(dataset.path, partial=True), self.config.split_strategy
        corpus = d.corpus()
        train = retrieval_queries(d.theorems(strategy, "train"), corpus)
        val_file = d.split_path(strategy, "val")
        val = retrieval_queries(d.theorems(strategy, "val"), corpus) if val_file.is_file() else []
        if not train:
            raise EmptyDatasetError(
                f"no training examples in {dataset.source}: no traced tactic of its train split "
                "uses a premise of its corpus (term-mode proofs, or a corpus without those "
                "premises)"
            )
        return PassData(train, corpus, val, dataset.path)

    def _loader(
        self, train: Sequence[RetrievalQuery], corpus: Corpus, *, shuffle: bool = True
    ) -> DataLoader[tuple[RetrievalExample, list[Premise]]]:
        from torch.utils.data import DataLoader

        from .retrieval_data import (
            Collator,
            EpochSampler,
            NegativeSampler,
            RetrievalDataset,
            build_examples,
        )

        cfg, world = self.config, self._world_size()
        examples = build_examples(train, corpus, max_examples=cfg.max_examples)
        if not examples:
            raise EmptyDatasetError("no (goal, premise) example: no positive is in the corpus")
        if len(examples) < world:
            from .errors import TooFewRowsError

            raise TooFewRowsError(
                f"{len(examples)} (goal, premise) example(s) for {world} processes: each needs "
                f"one; train on at most {len(examples)} devices, or give more data"
            )
        negatives = NegativeSampler(
            corpus, cfg.num_negatives, cfg.num_in_file_negatives, seed=cfg.seed
        )
        from .ddp.shards import ShardSampler
        from .exact_resume import SkippingSampler

        dataset = RetrievalDataset(examples, negatives)
        # A map-style dataset (len and items by key) is what DataLoader reads; ours keeps torch
        # out of its module, so it is no torch Dataset subclass.
        items = cast("Dataset[tuple[RetrievalExample, list[Premise]]]", dataset)
        return DataLoader(
            items,
            batch_size=cfg.batch_size,
            # Skips the batches a mid-epoch checkpoint had trained on (exact resume); a step's
            # batches of every process are one batch of the order, grouped by length together.
            sampler=ShardSampler(
                SkippingSampler(
                    EpochSampler(
                        len(dataset),
                        seed=cfg.seed,
                        shuffle=shuffle,
                        lengths=[len(e.query) for e in examples] if cfg.group_by_length else None,
                        batch_size=cfg.batch_size * world,
                    )
                )
            ),
            collate_fn=Collator(self.encoder.tokenize),
            num_workers=0,
        )

    def _fit_pass(self, k: int, label: str, data: PassData, out: Path) -> dict[str, Any]:
        import math

        import pytorch_lightning as pl
        from pytorch_lightning.callbacks import ModelCheckpoint
        from torch.utils.data import DataLoader

        from .ddp.shards import ShardData, ShardSampler
        from .retrieval_module import RetrievalModule

        cfg, train, corpus, val = self.config, data.train, data.corpus, data.val
        _master_weights(self.encoder.module, self._precision())
        pl.seed_everything(cfg.seed + k, workers=True, verbose=False)
        loader = self._loader(train, corpus)
        if cfg.val_max_queries is not None:
            val = val[: cfg.val_max_queries]
        do_val = cfg.validate and bool(val)
        # A list is a map-style dataset to DataLoader; the validation step takes (position,
        # query) pairs, the position for counting each query once under a distributed sampler.
        queries = cast("Dataset[tuple[int, RetrievalQuery]]", list(enumerate(val)))
        val_keys = ShardSampler(range(len(val)))
        val_loader = DataLoader(queries, cfg.eval_batch_size, sampler=val_keys, collate_fn=list)
        world, n_examples = self._world_size(), len(cast("Sized", loader.dataset))
        batches = math.ceil(math.ceil(n_examples / world) / cfg.batch_size)
        total = math.ceil(batches / cfg.accumulate_grad_batches) * cfg.max_epochs
        total = min(total, cfg.max_steps) if cfg.max_steps > 0 else total
        module = RetrievalModule(self.encoder, cfg, corpus=corpus, ewc=self.ewc, total_steps=total)
        from .exact_resume import ExactResume, SkippingSampler, exact_possible

        exact, self.resume_inexact_reason = exact_possible(world)
        sampler = loader.sampler
        assert isinstance(sampler, ShardSampler) and isinstance(sampler.inner, SkippingSampler)
        extra: list[pl.Callback] = [ShardData(sampler, val_keys)]
        if exact:
            extra.append(ExactResume(sampler.inner, cfg.batch_size))
        trainer = self._lightning_trainer(k, out, do_val, extra)
        last = self._pass_checkpoint(out, k)
        ckpt = "last" if last is not None else None
        if ckpt:
            log.info("pass %d (%s): resuming from %s", k + 1, label, last)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # A pass cut by max_steps before an epoch end has no R@10_val yet; it is validated
            # just below, so Lightning's "could not find the monitored key" is noise here.
            warnings.filterwarnings("ignore", message=r".*could not find the monitored key")
            if exact:  # ExactResume makes it resumable, in a way Lightning cannot see
                warnings.filterwarnings("ignore", message=r".*dataloader is\s+not resumable")
            checked = val_loader if do_val else None
            trainer.fit(module, train_dataloaders=loader, val_dataloaders=checked, ckpt_path=ckpt)
        if trainer.interrupted:
            raise KeyboardInterrupt(f"training pass {k + 1} ({label}) was interrupted")
        metrics = {
            k_: float(v) for k_, v in trainer.callback_metrics.items() if k_.endswith("_val")
        }
        if do_val and VAL_METRIC not in metrics:  # stopped by max_steps before an epoch end
            results = trainer.validate(module, dataloaders=val_loader, verbose=False)
            metrics = {k_: float(v) for k_, v in (results[0] if results else {}).items()}
        best = metrics.get(VAL_METRIC)
        for cb in trainer.checkpoint_callbacks:
            if isinstance(cb, ModelCheckpoint) and cb.monitor == VAL_METRIC:
                score = cb.best_model_score
                best = float(score) if score is not None else best
        shown = ", ".join(f"{a} {b:.4f}" for a, b in sorted(metrics.items())) or "no validation"
        log.info(
            "pass %d (%s): %d examples, %d steps, %s",
            k + 1,
            label,
            n_examples,
            trainer.global_step,
            shown,
        )
        return {
            "label": label,
            "examples": n_examples,
            "queries": len(train),
            "val_queries": len(val) if do_val else 0,
            "steps": int(trainer.global_step),
            "epochs": int(trainer.current_epoch),
            "seconds": round(time.perf_counter() - t0, 3),
            "val": metrics,
            "best_R@10_val": best,
            "train_loss": getattr(module, "last_train_loss", None),
            "in_batch_queries": module.in_batch_queries,
        }

    def _barrier(self) -> None:
        # Lightning starts the other processes in the first fit(); from then on its process
        # group is the barrier (rank 0 exports a database pass's data before the others read it).
        from .ddp.in_batch import process_group

        if process_group()[1] > 1:
            import torch.distributed

            torch.distributed.barrier()

    def _accelerator(self) -> tuple[str, int | list[int] | str]:
        cfg = self.config
        if cfg.num_gpus is not None:
            return "gpu", cfg.num_gpus
        return cfg.accelerator, _devices_arg(cfg.devices)

    def _precision(self) -> str:
        return resolve_precision(self.config.precision, self._accelerator()[0])

    def _world_size(self) -> int:
        """The fit's processes, the same in each of them (the data order depends on it): devices
        × nodes; ``auto``/``-1``: a launcher's count, else every GPU, or one CPU process."""
        accelerator, devices = self._accelerator()
        if isinstance(devices, list) or (isinstance(devices, int) and devices > 0):
            return (len(devices) if isinstance(devices, list) else devices) * self.config.num_nodes
        import torch

        gpus = torch.cuda.device_count() if accelerator != "cpu" else 1
        return world_size() if world_size() > 1 else max(1, gpus) * self.config.num_nodes

    def _lightning_trainer(
        self, k: int, out: Path, do_val: bool, extra: Sequence[pl.Callback] = ()
    ) -> pl.Trainer:
        from functools import partial

        import pytorch_lightning as pl
        from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint

        cfg, ckpt_dir = self.config, out / CHECKPOINTS / pass_name(k)
        keep = partial(ModelCheckpoint, dirpath=ckpt_dir, save_last=True)  # and the top 1
        callbacks: list[pl.Callback] = []
        if do_val:  # the best epoch by R@10_val
            name = "best-{epoch}-{R@10_val:.4f}"
            callbacks.append(
                keep(filename=name, monitor=VAL_METRIC, mode="max", auto_insert_metric_name=False)
            )
            if (patience := cfg.early_stopping_patience) is not None:
                callbacks.append(EarlyStopping(monitor=VAL_METRIC, mode="max", patience=patience))
        else:
            callbacks.append(keep(filename="epoch-{epoch}"))
        if (every := cfg.save_every_n_steps) is not None:
            steps = ckpt_dir / "steps"
            callbacks.append(keep(dirpath=steps, filename="step-{step}", every_n_train_steps=every))
        callbacks += [*extra, *self.callbacks]
        logger: Logger | bool = False
        if "tensorboard" in cfg.report_to:
            from pytorch_lightning.loggers import TensorBoardLogger

            logger = TensorBoardLogger(
                save_dir=str(out / LOGS), name=pass_name(k), version="", default_hp_metric=False
            )
        accelerator, devices = self._accelerator()
        return pl.Trainer(
            accelerator=accelerator,
            devices=devices,
            num_nodes=cfg.num_nodes,
            strategy=cfg.strategy,
            # TrainingConfig checks precision against Lightning's names (PRECISIONS).
            precision=cast("_PRECISION_INPUT", self._precision()),
            max_epochs=cfg.max_epochs,
            max_steps=cfg.max_steps,
            callbacks=callbacks,
            logger=logger,
            enable_progress_bar=cfg.progress_bar,
            enable_model_summary=False,
            log_every_n_steps=cfg.log_every_n_steps,
            num_sanity_val_steps=0,
            default_root_dir=str(out),
            use_distributed_sampler=False,  # ours shard the data (ShardSampler)
        )

    def _fisher(self, data: PassData) -> dict[str, Tensor]:
        """Diagonal Fisher of the training loss on a pass's data (its batches once, eval mode).
        Under DDP each process takes its share of each batch, as in training, and the gradients
        are averaged before they are squared: the Fisher of one process with whole batches."""
        from .ddp.in_batch import CrossRankBatch, average_gradients, process_group
        from .ddp.shards import ShardSampler
        from .ewc import compute_fisher
        from .retrieval_loss import contrast_loss

        cfg = self.config
        encoder = self.encoder.to(cfg.device)
        loader = self._loader(data.train, data.corpus, shuffle=False)
        assert isinstance(loader.sampler, ShardSampler)  # what _loader gives it
        rank, world = process_group()
        loader.sampler.shard(rank, world)

        def loss(batch: RetrievalBatch) -> Tensor:
            b = batch.to(encoder.device)
            gather = CrossRankBatch(b) if world > 1 else None
            q, c = encoder.embed(b.queries), encoder.embed(b.candidates)
            value, factor = contrast_loss(q, c, b.targets, b.positive_mask, cfg.temperature, gather)
            return value * factor

        reduce = average_gradients if world > 1 else None
        batches = cfg.fisher_max_batches
        return compute_fisher(encoder.module, loader, loss, max_batches=batches, reduce=reduce)


def _master_weights(module: torch.nn.Module, precision: str) -> None:
    """Float32 weights for the optimizer under every precision but the ``-true`` half ones and
    float64: ``bf16-mixed`` is autocast over float32 weights, never a bf16 model with a bf16
    optimizer (an encoder saved in bf16 loads in bf16; see :mod:`.numerics` for what that
    costs at small learning rates)."""
    import torch

    if precision in ("bf16-true", "16-true"):
        log.warning(
            "precision %s trains the weights themselves in half precision: updates smaller than "
            "half a rounding step are lost (most of them at lr 2e-5); bf16-mixed keeps float32 "
            "weights",
            precision,
        )
        return
    if precision in ("64-true", "64"):
        return  # Lightning converts the module to float64 itself
    if any(p.dtype in (torch.bfloat16, torch.float16) for p in module.parameters()):
        module.float()


__all__ = [
    "RetrievalResult",
    "RetrievalTrainer",
    "resolve_precision",
    "retrieval_module_class",
]
