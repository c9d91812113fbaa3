"""Layer 3 (trainer): ``RetrievalModule``, the LightningModule that trains a premise retriever.

Imports torch and Lightning at module level: import it only where training happens
(:class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` does so inside ``_fit_pass``),
so that ``import lean_dojo_v2.trainer`` stays light.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING

import pytorch_lightning as pl
import torch

from ..errors import TrainerError
from ..models.premise_index import PremiseIndex
from ..models.retrieval_eval import ranking_metrics
from .ddp.in_batch import CrossRankBatch, freeze_unreached, mean_scores
from .numerics import check_finite_step
from .retrieval_loss import cached_contrastive_backward, plain_contrastive_backward

if TYPE_CHECKING:
    from ..data.corpus import Corpus
    from ..models.retrieval import PremiseEncoder
    from .ewc import EWC
    from .retrieval_config import TrainingConfig


VAL_KEYS = ("R@1", "R@10", "MRR", "FullRecall@10")


class RetrievalModule(pl.LightningModule):
    """Trains ``encoder.module`` with the masked contrastive loss (+ EWC); validates R@k on
    the val queries against a premise index rebuilt at each validation."""

    def __init__(
        self,
        encoder: PremiseEncoder,
        config: TrainingConfig,
        *,
        corpus: Corpus | None = None,
        ewc: EWC | None = None,
        total_steps: int = 1,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.net = encoder.module  # registered: what the optimizer and checkpoints hold
        self.config = config
        self.corpus = corpus
        self.ewc = ewc
        self.total_steps = max(1, int(total_steps))
        self.automatic_optimization = False  # GradCache backprops chunk by chunk
        self.net.train()
        self._index: PremiseIndex | None = None
        self._scores: dict[int, list[float]] = {}  # val query position -> VAL_KEYS scores
        self.in_batch_queries = 0  # rows of the last step's contrast (every process's)

    # -------------------------------------------------------------- optimisation

    def configure_optimizers(self):
        from transformers import get_scheduler

        cfg = self.config
        decay, no_decay = [], []
        for name, p in self.net.named_parameters():
            if not p.requires_grad:
                continue
            lname = name.lower()
            (no_decay if p.ndim < 2 or "norm" in lname or "bias" in lname else decay).append(p)
        groups = [(decay, cfg.weight_decay), (no_decay, 0.0)]
        opt = torch.optim.AdamW([{"params": g, "weight_decay": w} for g, w in groups if g], cfg.lr)
        warmup, total = cfg.warmup_steps, self.total_steps
        sched = get_scheduler(cfg.lr_scheduler_type, opt, warmup, num_training_steps=total)
        return [opt], [{"scheduler": sched, "interval": "step"}]

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        if isinstance(batch, list):  # validation: (position, query) pairs, encoded later
            return batch
        return batch.to(device)

    def setup(self, stage: str) -> None:
        if self.trainer.world_size > 1:
            freeze_unreached(self.encoder)  # DDP stops at a parameter that gets no gradient

    def on_train_start(self) -> None:
        self.net.train()  # from_pretrained gives an eval-mode model; Lightning keeps modes

    def training_step(self, batch, batch_idx):
        cfg = self.config
        opt = self.optimizers()
        sched = self.lr_schedulers()
        scale = 1.0 / cfg.accumulate_grad_batches
        extra = None
        if self.ewc is not None and self.ewc.active:
            extra = lambda: self.ewc.penalty(self.net)  # noqa: E731
        # In-batch negatives of every process under DDP.
        gather = CrossRankBatch(batch) if self.trainer.world_size > 1 else None
        self.in_batch_queries = len(gather.targets if gather is not None else batch)
        chunked = {}
        if cfg.grad_cache:
            sync = getattr(self.trainer.strategy, "block_backward_sync", nullcontext)
            chunked = {"chunk_size": cfg.grad_cache_chunk_size, "no_sync": sync}
        contrastive = cached_contrastive_backward if cfg.grad_cache else plain_contrastive_backward
        loss = contrastive(
            self.encoder.embed,
            batch.queries,
            batch.candidates,
            batch.targets,
            batch.positive_mask,
            temperature=cfg.temperature,
            scale=scale,
            backward=self.manual_backward,
            extra_loss=extra,
            gather=gather,
            **chunked,
        )
        # Kept here too: trainer.callback_metrics loses it when validate() runs afterwards.
        self.last_train_loss = float(loss.detach())
        if (batch_idx + 1) % cfg.accumulate_grad_batches == 0 or self.trainer.is_last_batch:
            self._check_finite(opt)
            if cfg.gradient_clip_val is not None:
                self.clip_gradients(opt, cfg.gradient_clip_val, gradient_clip_algorithm="norm")
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
        n = len(batch)
        self.log("train_loss", loss, prog_bar=True, batch_size=n)
        if extra is not None:
            self.log("ewc_penalty", extra().detach(), batch_size=n)
        self.log("lr", sched.get_last_lr()[0], batch_size=n)
        return loss

    def _check_finite(self, opt: torch.optim.Optimizer) -> None:
        """Before the optimizer step: a NaN/inf loss or gradient stops the run
        (:class:`~lean_dojo_v2.trainer.errors.NonFiniteLossError`) instead of being written into
        the weights. Under ``16-mixed`` the loss scaler skips overflowing steps by design, so
        only the loss is checked there."""
        scaled = str(self.trainer.precision) in ("16-mixed", "16")
        params = None if scaled else self.net.parameters()
        step, lr = self.global_step + 1, opt.param_groups[0]["lr"]
        check_finite_step(self.last_train_loss, params, step, lr=lr)

    # -------------------------------------------------------------- validation

    def on_validation_epoch_start(self) -> None:
        if self.corpus is None:
            raise TrainerError(
                "RetrievalModule validates against the premise corpus: build it with "
                "corpus=... (the corpus of the val queries)"
            )
        batch = self.config.eval_batch_size
        self._index = PremiseIndex.build(
            self.corpus, self.encoder, batch_size=batch, show_progress=False
        )

    def validation_step(self, batch, batch_idx):
        """``batch``: (position in the val queries, query) pairs; each query's scores are kept
        by its position, so a query that a distributed sampler repeats counts once."""
        cfg, index, queries = self.config, self._index, [q for _, q in batch]
        emb = self.encoder.encode([q.state for q in queries], batch_size=cfg.eval_batch_size)
        masks = [index.mask(q.file_path, q.pos) for q in queries]
        hits = index.search(emb, cfg.num_retrieved, masks=masks)
        for (key, q), row in zip(batch, hits, strict=True):
            m = ranking_metrics([[index.premises[i].full_name for i, _ in row]], [q.positives])
            self._scores[key] = [float(m[k]) for k in VAL_KEYS]

    def on_validation_epoch_end(self) -> None:
        self._index = None
        means, self._scores = mean_scores(self._scores), {}
        # Every process holds the same numbers; "max" syncs them without rounding.
        metrics = {f"{k}_val": v for k, v in zip(VAL_KEYS, means, strict=True)}
        self.log_dict(metrics, sync_dist=True, reduce_fx="max", prog_bar=False)


__all__ = ["RetrievalModule"]
