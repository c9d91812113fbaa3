"""``LeanGRPOTrainer``: TRL's ``GRPOTrainer`` plus the pieces of the GRPO family TRL lacks.

Importing this module imports TRL: import it lazily (inside the function that builds a trainer).

Three seams, each as narrow as TRL allows:

- ``_calculate_rewards`` keeps the last gathered ``rewards_per_func`` (all processes' rows).
- ``_generate_and_score_completions`` (a) replaces TRL's advantages by DGPO / winsorised / rank
  advantages computed from those rewards (over all processes, then this process's slice, as TRL
  does), (b) runs DAPO's dynamic sampling: flat groups are dropped and the batch is refilled from
  new prompts of the train dataset, and (c) for the DPO term tags each sample with its group id and
  reward.
- ``_compute_loss`` adds ``dpo_weight × DPO loss`` on each group's (best, worst) pair; the policy
  log-probs are the ones TRL's loss just computed (captured from
  ``_get_per_token_logps_and_entropies``), so no second forward pass.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from ...errors import TrainerError
from .advantages import (
    dgpo_advantages,
    flat_group_mask,
    rank_advantages,
    winsorized_advantages,
)
from .algorithms import GRPOExtensions
from .dynamic_sampling import concat_outputs, local_num_items, select_groups, take_rows

if TYPE_CHECKING:
    from transformers import BatchEncoding

logger = logging.getLogger(__name__)


class _PromptRows(Protocol):
    """The train dataset as dynamic sampling reads it: rows by index (a ``datasets.Dataset``)."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Mapping[str, object]: ...


# Output keys we add for the DPO term; TRL's loss ignores keys it does not know.
DPO_GROUP_KEY = "dpo_group"
DPO_REWARD_KEY = "dpo_reward"


def dpo_pair_loss(
    per_token_logps: torch.Tensor,
    ref_per_token_logps: torch.Tensor,
    mask: torch.Tensor,
    group_ids: torch.Tensor,
    rewards: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor | None, int]:
    """Mean DPO loss over the groups present in a micro-batch, and the number of pairs.

    In each group whose (finite) rewards differ, ``w`` is its best completion and ``l`` its worst
    (the first on ties); with ``Δ_i = Σ_t mask_it (logp_it − ref_it)``::

        L_DPO = mean over pairs of −log σ(β (Δ_w − Δ_l))

    Returns ``(None, 0)`` when no group of the micro-batch has two different rewards."""
    seq = ((per_token_logps - ref_per_token_logps) * mask).sum(dim=-1)
    losses = []
    for group in torch.unique(group_ids).tolist():
        idx = torch.nonzero((group_ids == group) & torch.isfinite(rewards), as_tuple=True)[0]
        if idx.numel() < 2:
            continue
        r = rewards[idx]
        if r.max() <= r.min():
            continue
        best, worst = idx[torch.argmax(r)], idx[torch.argmin(r)]
        losses.append(-torch.nn.functional.logsigmoid(beta * (seq[best] - seq[worst])))
    if not losses:
        return None, 0
    return torch.stack(losses).mean(), len(losses)


class EpochSeededRepeatSampler(RepeatSampler):
    """TRL's ``RepeatSampler`` whose shuffle of epoch ``e`` is seeded with ``seed + e``.

    TRL's sampler seeds its generator once, so epoch ``e`` of a run depends on how many epochs this
    process iterated before: a run resumed at an epoch boundary would shuffle its next epoch like
    the first one. transformers calls ``set_epoch`` at the start of every epoch (through
    accelerate's data loader), so with this one a resumed run sees the uninterrupted run's order."""

    @classmethod
    def from_sampler(cls, sampler: RepeatSampler) -> EpochSeededRepeatSampler:
        new = cls.__new__(cls)
        new.__dict__.update(sampler.__dict__)
        return new

    def set_epoch(self, epoch: int) -> None:
        if self.shuffle and self.seed is not None:
            self.generator = torch.Generator()
            self.generator.manual_seed(self.seed + epoch)


class LeanGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` with :class:`GRPOExtensions`: DGPO / winsorised / rank advantages, DAPO
    dynamic sampling and the ``grpo_dpo`` DPO term. Every other argument is TRL's, but for
    ``prompt_add_special_tokens``: how text prompts are tokenised — ``False`` for prompts rendered
    with a chat template, which writes BOS itself (``models.prompts.add_special_tokens_for``), so
    training sees exactly the token ids search sends; ``None`` keeps TRL's (special tokens added).
    """

    # Any: the arguments are TRL's GRPOTrainer's, passed on as they are.
    def __init__(
        self,
        *args: Any,
        extensions: GRPOExtensions | None = None,
        prompt_add_special_tokens: bool | None = None,
        **kwargs: Any,
    ) -> None:
        self.extensions = extensions if extensions is not None else GRPOExtensions()
        self.prompt_add_special_tokens = prompt_add_special_tokens
        self._last_rewards_per_func: torch.Tensor | None = None
        self._refill_stream: Iterator[int] | None = None
        self._next_group_id = 0
        self._capture_logps = False
        self._captured_logps: torch.Tensor | None = None
        self._sampling_counts = {"groups": 0, "dropped_groups": 0, "refill_rounds": 0}
        super().__init__(*args, **kwargs)
        dataset = self.train_dataset
        if self.extensions.dynamic_sampling and (
            isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__")
        ):
            raise TrainerError(
                "dynamic sampling refills batches from the train dataset by index, so it needs a "
                "map-style dataset (datasets.Dataset), not an IterableDataset; set "
                "dynamic_sampling: false or pass a Dataset"
            )

    # -- prompts and their order -----------------------------------------------------------------

    def _get_train_sampler(self, dataset=None):
        sampler = super()._get_train_sampler(dataset)
        if isinstance(sampler, RepeatSampler):
            return EpochSeededRepeatSampler.from_sampler(sampler)
        return sampler

    def _tokenize_prompts(self, prompts: list):
        if self.prompt_add_special_tokens is None or not prompts or not isinstance(prompts[0], str):
            return super()._tokenize_prompts(prompts)
        # TRL tokenises text prompts with special tokens: a chat-rendered prompt of a tokenizer
        # that adds BOS (Llama-style, DeepSeek-Prover) would start with two.
        # A tokenizer or a processor: both take text=.
        tokenize = cast("Callable[..., BatchEncoding]", self.processing_class)
        ids = tokenize(text=prompts, add_special_tokens=self.prompt_add_special_tokens)["input_ids"]
        return ids, None, {}

    # -- statistics ----------------------------------------------------------------------------

    def sampling_stats(self) -> dict[str, float]:
        """Dynamic sampling so far, over all processes: groups generated (every round), flat
        groups dropped among them, refill rounds run, and ``drop_rate = dropped / groups``."""
        counts: dict[str, float] = dict(self._sampling_counts)
        counts["drop_rate"] = (
            counts["dropped_groups"] / counts["groups"] if counts["groups"] else 0.0
        )
        return counts

    # -- rewards and advantages ----------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        self._last_rewards_per_func = rewards_per_func  # gathered: every process's rows
        return rewards_per_func

    def _combined_rewards(self, rewards_per_func: torch.Tensor) -> torch.Tensor:
        """The weighted sum of the reward functions, NaN where none could score (as TRL)."""
        weights = self.reward_weights.to(rewards_per_func.device)
        rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        return rewards

    def _training(self) -> bool:
        """Whether the model is in training mode (a train step, not an evaluation)."""
        assert self.model is not None  # TRL's trainer holds its model from __init__ on
        return self.model.training

    def _group_size(self, mode: str = "train") -> int:
        """The completions per prompt of ``mode`` (``num_generations`` or its eval twin)."""
        n = self.num_generations if mode == "train" else self.num_generations_eval
        assert n is not None  # TRL's __init__ sets both
        return n

    def _prompt_rows(self) -> _PromptRows:
        """The train dataset by index (map-style: __init__ refuses dynamic sampling otherwise)."""
        return cast(_PromptRows, self.train_dataset)

    def _our_advantages(self, rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
        ext = self.extensions
        if ext.advantage == "dgpo":
            return dgpo_advantages(rewards, num_generations, ext.dgpo_temperature)
        if ext.advantage == "winsorized":
            return winsorized_advantages(rewards, num_generations, ext.winsor_quantile)
        return rank_advantages(rewards, num_generations)

    def _score_round(self, inputs: list[dict[str, Any]]) -> tuple[dict[str, Any], torch.Tensor]:
        """One TRL generation round with our advantages and DPO tags; returns the output and this
        process's rows of ``rewards_per_func``."""
        output = super()._generate_and_score_completions(inputs)
        num_generations = self._group_size("train" if self._training() else "eval")
        all_rewards_per_func = self._last_rewards_per_func
        assert all_rewards_per_func is not None  # _calculate_rewards ran in this round
        n_local = len(inputs)
        start = self.accelerator.process_index * n_local
        local = slice(start, start + n_local)
        device = output["advantages"].device

        if self.extensions.advantage != "trl":
            all_advantages = self._our_advantages(
                self._combined_rewards(all_rewards_per_func), num_generations
            )
            output["advantages"] = all_advantages[local].to(device)
            # TRL logged its own advantages for the completions table: show ours instead.
            logged = self._logs["advantages"]
            assert isinstance(logged, deque)  # TRL's log of the completions table
            for _ in range(min(len(logged), all_advantages.numel())):
                logged.pop()
            logged.extend(all_advantages.tolist())

        if self.extensions.dpo_weight > 0:
            n_all = all_rewards_per_func.size(0)
            group_ids = self._next_group_id + torch.arange(n_all) // num_generations
            self._next_group_id += n_all // num_generations
            output[DPO_GROUP_KEY] = group_ids[local].to(device)
            output[DPO_REWARD_KEY] = self._combined_rewards(all_rewards_per_func)[local].to(device)
        return output, all_rewards_per_func[local]

    def _generate_and_score_completions(self, inputs):
        output, local_rewards = self._score_round(inputs)
        if self._training() and self.extensions.dynamic_sampling:
            output = self._dynamic_sampling(inputs, output, local_rewards)
        return output

    # -- dynamic sampling ----------------------------------------------------------------------

    def _dynamic_sampling(
        self, inputs: list[dict[str, Any]], output: dict[str, Any], rewards: torch.Tensor
    ) -> dict[str, Any]:
        G = self._group_size()
        target = len(inputs)
        if target % G != 0:
            raise TrainerError(
                f"dynamic sampling drops whole groups, so each process's generation batch "
                f"({target} completions) must hold whole groups of num_generations={G}; choose "
                "per_device_train_batch_size × steps_per_generation divisible by num_generations"
            )
        kept: list[dict[str, Any]] = []
        flat_pool: list[dict[str, Any]] = []
        n_kept = groups = dropped = rounds = 0

        def take(out: dict[str, Any], rew: torch.Tensor) -> None:
            nonlocal n_kept, groups, dropped
            flat = flat_group_mask(rew, G).to(out["advantages"].device)
            kept.append(select_groups(out, ~flat, G))
            filler = select_groups(out, flat, G)
            # A flat group has no signal; zero its advantage (GDPO's batch normalisation, for one,
            # would give it a non-zero one) in case it must fill the batch.
            filler["advantages"] = torch.zeros_like(filler["advantages"])
            flat_pool.append(filler)
            n_kept += int((~flat).sum()) * G
            groups += flat.numel()
            dropped += int(flat.sum())

        take(output, rewards)
        # Every process generates in every round (TRL's reward gather is collective), so the
        # decision to refill is global: go on while any process is short.
        while rounds < self.extensions.max_refill_rounds and self._any_process(n_kept < target):
            rounds += 1
            round_output, round_rewards = self._score_round(self._refill_inputs(target))
            take(round_output, round_rewards)
        if n_kept < target:
            logger.info(
                "dynamic sampling: %d of %d completions carry signal after %d refill rounds; "
                "filling the batch with flat groups (zero advantage)",
                n_kept,
                target,
                rounds,
            )
        merged = concat_outputs(kept + flat_pool, self._tokenizer.pad_token_id)
        merged = take_rows(merged, target)
        merged["num_items_in_batch"] = self.accelerator.gather(local_num_items(merged)).sum()

        device = merged["advantages"].device
        totals = self.accelerator.gather(torch.tensor([[groups, dropped]], device=device))
        all_groups, all_dropped = totals.view(-1, 2).sum(dim=0).tolist()
        self._sampling_counts["groups"] += int(all_groups)
        self._sampling_counts["dropped_groups"] += int(all_dropped)
        self._sampling_counts["refill_rounds"] += rounds
        metrics = self._metrics["train"]
        metrics["dynamic_sampling/drop_rate"].append(all_dropped / max(all_groups, 1))
        metrics["dynamic_sampling/refill_rounds"].append(float(rounds))
        return merged

    def _any_process(self, flag: bool) -> bool:
        device = self.accelerator.device
        return bool(self.accelerator.gather(torch.tensor([int(flag)], device=device)).sum() > 0)

    def _refill_inputs(self, n_rows: int) -> list[dict[str, Any]]:
        """``n_rows`` new rows for this process: prompts of the train dataset drawn from our own
        seeded stream (all processes draw the same global batch and take their slice), each
        repeated ``num_generations`` times as TRL's ``RepeatSampler`` lays them out."""
        G = self._group_size()
        n_local = n_rows // G
        if self._refill_stream is None:
            self._refill_stream = self._index_stream()
        n_global = n_local * self.accelerator.num_processes
        indices = [next(self._refill_stream) for _ in range(n_global)]
        start = self.accelerator.process_index * n_local
        mine = indices[start : start + n_local]
        rows = self._prompt_rows()
        return [dict(rows[i]) for i in mine for _ in range(G)]

    def _index_stream(self) -> Iterator[int]:
        # Our own generator, not TRL's sampler: refills must not change which prompts the
        # dataloader serves next, so a run with and without refills sees the same base batches.
        generator = torch.Generator().manual_seed(self.args.seed + 1)
        size = len(self._prompt_rows())
        while True:
            yield from torch.randperm(size, generator=generator).tolist()

    # -- loss ----------------------------------------------------------------------------------

    # Any: TRL's private method, its arguments passed on as they are.
    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any):
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if self._capture_logps:
            self._captured_logps = result[0]
        return result

    def _compute_loss(self, model, inputs):
        if self.extensions.dpo_weight <= 0 or DPO_GROUP_KEY not in inputs:
            return super()._compute_loss(model, inputs)
        self._capture_logps, self._captured_logps = True, None
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._capture_logps = False
        per_token_logps, self._captured_logps = self._captured_logps, None
        return loss + self._dpo_term(per_token_logps, inputs)

    def _dpo_term(self, per_token_logps: torch.Tensor, inputs: dict[str, Any]) -> torch.Tensor:
        """``dpo_weight × L_DPO`` for this micro-batch, scaled for gradient accumulation as TRL
        scales its ``grpo`` loss. The reference is the reference model when ``beta > 0`` (it is
        loaded then), else the sampling policy's log-probs (``old_per_token_logps``, or the
        current ones detached when TRL skipped them because they are equal)."""
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        if self.beta != 0.0:
            ref = inputs["ref_per_token_logps"]
        else:
            ref = inputs.get("old_per_token_logps")
            ref = per_token_logps.detach() if ref is None else ref
        dpo, pairs = dpo_pair_loss(
            per_token_logps,
            ref,
            mask,
            inputs[DPO_GROUP_KEY],
            inputs[DPO_REWARD_KEY],
            self.extensions.dpo_beta,
        )
        mode = "train" if self._training() else "eval"
        self._metrics[mode]["dpo/pairs"].append(float(pairs))
        if dpo is None:
            return per_token_logps.new_zeros(())
        self._metrics[mode]["dpo/loss"].append(dpo.item())
        normalizer = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        return self.extensions.dpo_weight * dpo / normalizer
