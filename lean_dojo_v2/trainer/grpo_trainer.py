"""Reinforcement learning of a tactic (or whole-proof) generator with the GRPO family, on TRL's
``GRPOTrainer``, rewarded by Lean (upstream LeanDojo-v2's calls: ``docs/training.md``, "GRPO").
What it adds to :class:`~lean_dojo_v2.trainer.causal_lm_trainer.CausalLMTrainer`: the prompt rows
(:mod:`.grpo_data`), the algorithm by its published name (:mod:`.rl.algorithms`, run by
:class:`~lean_dojo_v2.trainer.rl.trl_trainer.LeanGRPOTrainer`), the reward scorers and each
pass's reward context (:mod:`.rl.rewards`), the curves and :class:`GRPOResult`.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsFloat

from ..data.model import Theorem
from ..errors import ConfigValueError, UnknownConfigKeyError
from ..system.ranks import summed_over_processes
from .causal_lm_loading import model_context_length
from .causal_lm_trainer import CausalLMTrainer, PassRows
from .errors import TooFewRowsError
from .grpo_config import GRPOConfig
from .grpo_data import build_prompt_rows, check_prompt_theorems
from .result import DictResult
from .run_dir import world_size

if TYPE_CHECKING:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from ..database import DynamicDatabase
    from .lora import LoraArgument
    from .pass_loop import Pass
    from .rl.rewards.base import BaseRewardScorer
    from .rl.rewards.context import RewardContext

log = logging.getLogger(__name__)

RewardFunction = Callable[..., object]
"""A user's reward function: ``(completions, **kwargs)`` to a list of numbers or a 1-D tensor."""
TRLRewardFunction = Callable[..., list[float]]
"""A reward function as TRL calls it: one float per completion."""


@dataclass
class GRPOResult(DictResult):
    """What a GRPO run did (``summary.json``; the CLI prints it with ``--json``).

    ``steps`` counts optimizer steps over all passes; ``mean_reward_first``/``mean_reward_last``
    are the first and last logged mean rewards (weighted sum of the reward functions; None when
    nothing was logged); ``reward_backend`` is who checked the completions (``replay`` or
    ``lean``; None without a Lean-checked reward); ``dropped_groups``/``drop_rate`` count the
    flat groups dynamic sampling dropped; ``prompts`` the prompts over all passes; ``model_dir``
    is where the model (or adapter) is, loadable with ``lean_dojo_v2.models.load_model``."""

    algorithm: str
    mode: str
    steps: int
    mean_reward_first: float | None
    mean_reward_last: float | None
    reward_backend: str | None
    dropped_groups: int
    drop_rate: float
    seconds: float
    output_dir: str
    model_dir: str
    adapter: bool
    passes: list[dict[str, Any]]
    prompts: int
    rewards: list[str] = field(default_factory=list)
    merged_dir: str | None = None
    resumed_from: str | None = None
    run_id: int | None = None
    curves: str | None = None


class GRPOTrainer(CausalLMTrainer[GRPOConfig, GRPOResult]):
    """Train a causal LM with a GRPO-family algorithm on rewards Lean checks; built as every
    :class:`~lean_dojo_v2.trainer.causal_lm_trainer.CausalLMTrainer` is. ``reward_func``: None
    (the Lean-checked composite, or the config's ``rewards``) or a function ``(completions,
    **kwargs) -> list[float] | Tensor`` (its signature is checked here). An unknown algorithm or
    reward name fails here, before anything loads."""

    config_class = GRPOConfig
    run_kind = "grpo"
    run_what = "GRPO training"
    repr_fields = ("model_name", "algorithm", "mode", "output_dir", "lora")

    def __init__(
        self,
        model_name: str | os.PathLike[str] | GRPOConfig | None = None,
        reward_func: RewardFunction | None = None,
        output_dir: str | os.PathLike[str] = "outputs-grpo",
        epochs_per_repo: float = 1,
        batch_size: int = 8,
        lr: float = 2e-5,
        lora_config: LoraArgument = None,
        *,
        callbacks: Sequence[TrainerCallback | type[TrainerCallback]] = (),
        **config_values: object,
    ) -> None:
        arguments: dict[str, object] = dict(
            output_dir=output_dir, epochs_per_repo=epochs_per_repo, batch_size=batch_size, lr=lr
        )
        super().__init__(
            model_name,
            lora_config=lora_config,
            callbacks=callbacks,
            arguments=arguments,
            **config_values,
        )
        from .rl.algorithms import resolve_algorithm

        self.reward_func = reward_func
        self.algorithm = resolve_algorithm(self.config.algorithm, self.config.algorithm_config)
        self._user_reward: TRLRewardFunction | None = None
        if reward_func is not None:
            from .rl.rewards.trl_adapter import wrap_user_reward

            self._user_reward = wrap_user_reward(reward_func)
        # TRL names each reward function's log by its __name__.
        self._user_name = getattr(self._user_reward, "__name__", None) or "reward_func"
        self.scorers = self._make_scorers()

    def _make_scorers(self) -> list[BaseRewardScorer]:
        """The reward scorers by name (unknown names fail here): the config's rewards (none with
        a user function) and the algorithm's own (DAPO's ``overlong``)."""
        from .rl.rewards.registry import get_scorer

        cfg = self.config
        names = [] if self._user_reward is not None else cfg.reward_names()
        names += [n for n in self.algorithm.extra_rewards if n not in names]
        user = [self._user_name] if self._user_reward is not None else []
        for key in cfg.reward_weights:
            if key not in names + user:
                raise UnknownConfigKeyError(
                    key, user + names, source="reward_weights", config="rewards"
                )
        # Bound to each pass's context when the pass opens it (reward_functions).
        return [get_scorer(n, context=None, **self._scorer_kwargs(n)) for n in names]

    def _scorer_kwargs(self, name: str) -> dict[str, int]:
        """What a scorer needs from the config (the overlong punishment: the length cap)."""
        if name == "overlong":
            # DAPO's soft zone is the last fifth of the cap (4k of 20k in the paper); a quarter
            # here, as tactic caps are short.
            cap = self.config.max_completion_length
            return {"max_len": cap, "cache": max(1, cap // 4)}
        return {}

    def _reward_names(self) -> list[str]:
        names = [s.name for s in self.scorers]
        return ([self._user_name] if self._user_reward is not None else []) + names

    def _fingerprint_extra(self) -> dict[str, object]:
        extra = super()._fingerprint_extra()
        if self.reward_func is not None:
            f = self.reward_func
            extra["reward_func"] = f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', f)}"
        return extra

    # ------------------------------------------------------------------ the rows

    def _check_theorems(self, theorems: list[Theorem], source: str) -> int:
        st = check_prompt_theorems(theorems, self.config.mode, source=source)
        return min(st.prompts, self.config.max_prompts or st.prompts)

    def _check_lengths(self, model: str) -> None:
        cfg = self.config
        context = model_context_length(model)
        completion = cfg.trl_args.get("max_completion_length", cfg.max_completion_length)
        if context is not None and cfg.max_prompt_len + completion > context:
            raise ConfigValueError(
                f"max_prompt_len + max_completion_length = {cfg.max_prompt_len} + {completion} "
                f"tokens exceed the context of {cfg.model_name or self.default_model} "
                f"({context} tokens); lower max_completion_length (or max_prompt_len)"
            )

    def _build_rows(self, theorems: list[Theorem], source: str) -> PassRows:
        cfg = self.config
        built = build_prompt_rows(
            theorems,
            self._loaded_model()[1],
            mode=cfg.mode,
            max_prompts=cfg.max_prompts,
            max_prompt_len=cfg.max_prompt_len,
            source=source,
        )
        st = built.stats
        note = (
            f"{st.prompts} {cfg.mode} prompts from {len(built.theorems)} theorems "
            f"({st.sorry_dropped} sorry and {st.too_long_dropped} longer than "
            f"{cfg.max_prompt_len} tokens left out)"
        )
        return PassRows(built.rows, "prompts", st.prompts, st, note, built.theorems)

    def _check_rows(self, rows: int, args: TrainingArguments, where: str) -> None:
        from trl import GRPOConfig as TRLConfig

        assert isinstance(args, TRLConfig)  # built by _trl_classes
        # TRL's config fills both in when it is built.
        assert args.generation_batch_size is not None and args.num_generations is not None
        # TRL's sampler drops an incomplete generation batch: fewer prompts would train 0 steps.
        needed = args.generation_batch_size // args.num_generations
        if rows < needed:
            raise TooFewRowsError(
                f"{where} {rows} prompts, fewer than the {needed} one generation batch takes "
                f"(batch_size × steps_per_generation × processes / num_generations, on "
                f"{world_size()} processes); lower batch_size or --num_processes, or raise "
                "max_prompts or max_prompt_len"
            )

    # ------------------------------------------------------------------ TRL and the rewards

    def _trl_classes(self) -> tuple[type[TrainingArguments], Callable[..., Trainer]]:
        from trl import GRPOConfig as TRLConfig

        from .rl.trl_trainer import LeanGRPOTrainer

        return TRLConfig, LeanGRPOTrainer

    def _trl_settings(self) -> dict[str, Any]:
        cfg, alg = self.config, self.algorithm
        args = dict(alg.trl_settings)
        if alg.steps_per_generation_factor is not None:
            factor = alg.steps_per_generation_factor
            args["steps_per_generation"] = factor * cfg.gradient_accumulation_steps
        args.update(
            num_generations=cfg.num_generations,
            max_completion_length=cfg.max_completion_length,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            # One weight per function: TRL logs each, and GDPO normalises each on its own.
            reward_weights=[cfg.weight_of(name) for name in self._reward_names()],
            use_vllm=cfg.use_vllm,
            vllm_mode=cfg.vllm_mode,
            vllm_server_base_url=cfg.vllm_server_base_url,  # None: TRL's own default
            # The reward functions read every column of a row (theorem_key, state, ...).
            remove_unused_columns=False,
        )
        # TRL takes use_vllm without vLLM and fails once the model is loaded, with a traceback.
        if cfg.trl_args.get("use_vllm", cfg.use_vllm) and not importlib.util.find_spec("vllm"):
            msg = "use_vllm is true but vllm is not installed: `pip install 'trl[vllm]'` on a"
            raise ConfigValueError(msg + " CUDA machine, or set use_vllm: false")
        return args

    def _train_rows(self, k: int, built: PassRows, out: Path, **kwargs: object) -> dict[str, Any]:
        """The pass within its reward context (its environments, closed after the pass)."""
        from ..models.prompts import add_special_tokens_for, prompt_style
        from .rl.trl_trainer import LeanGRPOTrainer

        context = self._open_context(built.theorems)
        try:
            info = super()._train_rows(
                k,
                built,
                out,
                reward_funcs=self._reward_functions(context),
                extensions=self.algorithm.extensions,
                # The prompts are rendered text (models.prompts): tokenised as search does.
                prompt_add_special_tokens=add_special_tokens_for(
                    prompt_style(self._loaded_model()[1])
                ),
            )
            backend = None
            checks: dict[str, object] = {}
            if context is not None:
                backend = getattr(context, "last_backend", None) or context.backend
                checks = summed_over_processes(dict(context.stats()))  # every share
        finally:
            if context is not None:
                context.close()
        log.info("pass %d: rewards checked by %s: %s", k + 1, backend or "no Lean check", checks)
        trainer = self._trl_trainer
        assert isinstance(trainer, LeanGRPOTrainer)  # built by _trl_classes
        sampling = dict(trainer.sampling_stats())
        return {**info, "reward_backend": backend, "reward_checks": checks, "sampling": sampling}

    def _check_inputs(
        self, plan: Sequence[Pass], sources: Sequence[Path], db: DynamicDatabase | None
    ) -> None:
        if self.scorers and self.config.reward_workers_backend == "ray":
            from ..prover.ray_cluster import check_ray

            # In seconds, before the model loads: a Ray address that answers nothing.
            check_ray(self.config.ray_address)
        super()._check_inputs(plan, sources, db)

    def _open_context(self, theorems: Mapping[str, Theorem]) -> RewardContext | None:
        """The reward context of a pass (its environments), or None without a scorer."""
        if not self.scorers:
            return None
        from .rl.rewards.context import open_reward_context

        cfg = self.config
        return open_reward_context(
            theorems,
            backend=cfg.reward_backend,
            num_envs=cfg.reward_envs,
            tactic_timeout=cfg.tactic_timeout,
            max_proof_steps=cfg.max_proof_steps,
            workers=cfg.reward_workers_backend,
            ray_address=cfg.ray_address,
        )

    def _reward_functions(self, context: RewardContext | None) -> list[TRLRewardFunction]:
        """TRL's reward functions of a pass, each within ``reward_timeout`` and finite."""
        from .rl.rewards.trl_adapter import guard_reward, reward_functions

        funcs: list[TRLRewardFunction] = []
        if self._user_reward is not None:
            funcs.append(self._user_reward)
        if self.scorers:
            funcs.extend(reward_functions(self.scorers, context))
        return [guard_reward(f, timeout=self.config.reward_timeout) for f in funcs]

    # ------------------------------------------------------------------ history and result

    def _history_entry(self, entry: Mapping[str, Any]) -> dict[str, Any] | None:
        # A step's log, not the end-of-training summary TRL logs last.
        if "step" not in entry or "train_loss" in entry or not {"loss", "reward"} & entry.keys():
            return None
        return {
            "step": int(entry["step"]),
            "loss": _finite(entry.get("loss")),
            "reward": _finite(entry.get("reward")),
            "reward_std": _finite(entry.get("reward_std")),
            "kl": _finite(entry.get("kl")),
            "rewards": {n: _finite(entry.get(f"rewards/{n}/mean")) for n in self._reward_names()},
        }

    def _draw_curves(self, passes: list[dict[str, Any]], out: Path) -> Path | None:
        if not self.config.curves:
            return None
        from .curves import plot_grpo_curves

        title = f"{self.config.algorithm} ({self.config.mode})"
        return plot_grpo_curves(passes, out / "grpo_curves.png", title=title)

    def _result(
        self, passes: list[dict[str, Any]], common: dict[str, Any], curve: str | None
    ) -> GRPOResult:
        rewards = [e["reward"] for p in passes for e in p["history"] if e.get("reward") is not None]
        groups = sum(p["sampling"].get("groups", 0) for p in passes)
        dropped = sum(p["sampling"].get("dropped_groups", 0) for p in passes)
        backends = [p["reward_backend"] for p in passes if p.get("reward_backend")]
        return GRPOResult(
            **common,
            algorithm=self.algorithm.name,
            mode=self.config.mode,
            mean_reward_first=rewards[0] if rewards else None,
            mean_reward_last=rewards[-1] if rewards else None,
            reward_backend=backends[-1] if backends else None,
            dropped_groups=dropped,
            drop_rate=round(dropped / groups, 6) if groups else 0.0,
            prompts=sum(p.get("prompts", 0) for p in passes),
            rewards=self._reward_names(),
            curves=curve,
        )


def _finite(value: object) -> float | None:
    """A logged value as a finite float; None for anything else (absent, NaN, infinite)."""
    if not isinstance(value, (SupportsFloat, str)):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


__all__ = ["GRPOResult", "GRPOTrainer"]
