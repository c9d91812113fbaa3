"""Layer 3 (trainer): ``RetrievalModule``, the LightningModule that trains a premise retriever.

Imports torch and Lightning at module level: import it only where training happens
(:class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` does so inside ``_fit_pass``),
so that ``import lean_dojo_v2.trainer`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytorch_lightning as pl
import torch

from ..errors import TrainerError
from ..models.premise_index import PremiseIndex
from ..models.retrieval_eval import ranking_metrics
from .numerics import check_finite_step
from .retrieval_loss import cached_contrastive_backward, plain_contrastive_backward

if TYPE_CHECKING:
    from ..data.corpus import Corpus
    from ..models.retrieval import PremiseEncoder
    from .ewc import EWC
    from .retrieval_config import TrainingConfig


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
        groups = [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.lr)
        sched = get_scheduler(
            cfg.lr_scheduler_type,
            opt,
            num_warmup_steps=cfg.warmup_steps,
            num_training_steps=self.total_steps,
        )
        return [opt], [{"scheduler": sched, "interval": "step"}]

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        if isinstance(batch, list):  # validation: RetrievalQuery objects, encoded later
            return batch
        return batch.to(device)

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
        chunked = {"chunk_size": cfg.grad_cache_chunk_size} if cfg.grad_cache else {}
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
            **chunked,
        )
        # Kept here too: trainer.callback_metrics loses it when validate() runs afterwards.
        self.last_train_loss = float(loss.detach())
        if (batch_idx + 1) % cfg.accumulate_grad_batches == 0 or self.trainer.is_last_batch:
            self._check_finite(opt)
            if cfg.gradient_clip_val is not None:
                self.clip_gradients(
                    opt,
                    gradient_clip_val=cfg.gradient_clip_val,
                    gradient_clip_algorithm="norm",
                )
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
        check_finite_step(
            self.last_train_loss,
            None if scaled else self.net.parameters(),
            self.global_step + 1,
            lr=opt.param_groups[0]["lr"],
        )

    # -------------------------------------------------------------- validation

    def on_validation_epoch_start(self) -> None:
        if self.corpus is None:
            raise TrainerError(
                "RetrievalModule validates against the premise corpus: build it with "
                "corpus=... (the corpus of the val queries)"
            )
        self._index = PremiseIndex.build(
            self.corpus,
            self.encoder,
            batch_size=self.config.eval_batch_size,
            show_progress=False,
        )

    def validation_step(self, batch, batch_idx):
        queries = list(batch)
        emb = self.encoder.encode(
            [q.state for q in queries], batch_size=self.config.eval_batch_size
        )
        masks = [self._index.mask(q.file_path, q.pos) for q in queries]
        hits = self._index.search(emb, self.config.num_retrieved, masks=masks)
        rankings = [[self._index.premises[i].full_name for i, _ in row] for row in hits]
        m = ranking_metrics(rankings, [q.positives for q in queries], ks=(1, 10))
        self.log_dict(
            {f"{k}_val": float(m[k]) for k in ("R@1", "R@10", "MRR", "FullRecall@10")},
            batch_size=len(queries),
            on_epoch=True,
            sync_dist=True,
            prog_bar=False,
        )

    def on_validation_epoch_end(self) -> None:
        self._index = None


__all__ = ["RetrievalModule"]
