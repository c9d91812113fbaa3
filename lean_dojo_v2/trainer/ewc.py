"""Elastic weight consolidation (Kirkpatrick et al., 2017) for lifelong retriever training.

:func:`compute_fisher` estimates the diagonal Fisher information of every trainable parameter as
the mean squared gradient of the training loss over a repository's batches (LeanAgent computed it
in a separate run; v2 never did, so its penalty was always 0). Over several repositories it
accumulates (``F ← F + F_new``) with θ* the latest snapshot: "online EWC" (Schwarz et al., 2018)
with γ = 1, one penalty term ``λ · Σ F (θ − θ*)²`` whatever the number of repositories.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from torch import Tensor, nn

log = logging.getLogger(__name__)

B = TypeVar("B")


def compute_fisher(
    module: nn.Module,
    batches: Iterable[B],
    loss_fn: Callable[[B], Tensor],
    *,
    max_batches: int | None = None,
    reduce: Callable[[list[Tensor]], None] | None = None,
) -> dict[str, Tensor]:
    """Diagonal Fisher of ``module``'s trainable parameters: the mean over ``batches`` of the
    squared gradient of ``loss_fn(batch)``. ``module`` is put in eval mode (no dropout) for the
    estimate and its mode is restored; its ``.grad`` fields are left cleared. ``reduce`` (DDP:
    the average over the processes) turns each batch's gradients into the whole batch's first."""
    import torch

    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    fisher = {n: torch.zeros_like(p, dtype=torch.float32) for n, p in params.items()}
    was_training = module.training
    module.eval()
    count = 0
    try:
        for batch in batches:
            if max_batches is not None and count >= max_batches:
                break
            module.zero_grad(set_to_none=True)
            with torch.enable_grad():
                loss = loss_fn(batch)
                loss.backward()
            if reduce is not None:
                reduce([p.grad for p in params.values() if p.grad is not None])
            for n, p in params.items():
                if p.grad is not None:
                    fisher[n] += p.grad.detach().float() ** 2
            count += 1
    finally:
        module.zero_grad(set_to_none=True)
        module.train(was_training)
    if count == 0:
        return {}
    return {n: f / count for n, f in fisher.items()}


class EWC:
    """The EWC state: accumulated diagonal Fisher ``fisher`` and weights ``params`` (θ*) by
    parameter name; ``lambda_value`` is λ. Empty (no penalty) until the first :meth:`consolidate`.
    """

    def __init__(self, lambda_value: float = 0.1) -> None:
        self.lambda_value = float(lambda_value)
        self.fisher: dict[str, Tensor] = {}
        self.params: dict[str, Tensor] = {}
        self.tasks = 0
        self._on_device: dict[str, tuple[Tensor, Tensor]] = {}

    @property
    def active(self) -> bool:
        return bool(self.fisher) and self.lambda_value > 0

    def consolidate(self, module: nn.Module, fisher: dict[str, Tensor]) -> None:
        """Add ``fisher`` (from :func:`compute_fisher` on the task just learnt) and snapshot
        ``module``'s current weights as θ*."""
        for name, f in fisher.items():
            f = f.detach().float().cpu()
            self.fisher[name] = self.fisher[name] + f if name in self.fisher else f.clone()
        self.params = {
            n: p.detach().float().cpu().clone()
            for n, p in module.named_parameters()
            if n in self.fisher
        }
        self.tasks += 1
        self._on_device = {}

    def penalty(self, module: nn.Module) -> Tensor:
        """``λ · Σ F · (θ − θ*)²`` over ``module``'s parameters (differentiable); a zero tensor
        before the first :meth:`consolidate` or with λ = 0."""
        import torch

        params = [(n, p) for n, p in module.named_parameters() if n in self.fisher]
        device = next(module.parameters()).device
        if not self.active or not params:
            return torch.zeros((), device=device)
        cache = self._on_device
        total = torch.zeros((), device=device, dtype=torch.float32)
        for name, p in params:
            moved = cache.get(name)
            if moved is None or moved[0].device != p.device:
                moved = (self.fisher[name].to(p.device), self.params[name].to(p.device))
                cache[name] = moved
            f, star = moved
            total = total + (f * (p.float() - star) ** 2).sum()
        self._on_device = cache
        return self.lambda_value * total

    def state_dict(self) -> dict[str, Any]:
        return {
            "lambda_value": self.lambda_value,
            "tasks": self.tasks,
            "fisher": dict(self.fisher),
            "params": dict(self.params),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fisher, self.params = dict(state.get("fisher", {})), dict(state.get("params", {}))
        self.tasks = int(state.get("tasks", 0))
        self._on_device = {}

    def save(self, path: str | Path) -> Path:
        import torch

        torch.save(self.state_dict(), Path(path))
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, lambda_value: float | None = None) -> EWC:
        import torch

        state = torch.load(Path(path), map_location="cpu", weights_only=True)
        ewc = cls(state.get("lambda_value", 0.1) if lambda_value is None else lambda_value)
        ewc.load_state_dict(state)
        return ewc

    def fisher_stats(self) -> dict[str, float]:
        """Summary numbers of the Fisher (for logs and the run record)."""
        if not self.fisher:
            return {"fisher_sum": 0.0, "fisher_max": 0.0, "fisher_params": 0}
        return {
            "fisher_sum": float(sum(f.sum() for f in self.fisher.values())),
            "fisher_max": float(max(f.max() for f in self.fisher.values())),
            "fisher_params": int(sum(f.numel() for f in self.fisher.values())),
        }


__all__ = ["EWC", "compute_fisher"]
