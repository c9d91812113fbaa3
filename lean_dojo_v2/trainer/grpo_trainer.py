"""Reinforcement learning of a tactic (or whole-proof) generator with the GRPO family, on TRL's
``GRPOTrainer``, rewarded by Lean.

The seed's API works as written::

    trainer = GRPOTrainer(model_name="deepseek-ai/DeepSeek-Prover-V2-7B", reward_func=reward_func,
                          output_dir="outputs-grpo", epochs_per_repo=1, batch_size=8, lr=2e-5,
                          lora_config=None)
    trainer.train(database=db)          # the curriculum, one pass per repository
    trainer.train(data_path="path/to/leandojo_dataset")

``reward_func=None`` is the Lean-checked composite of the mode (``lean_tactic`` or ``lean_proof``
plus ``format``): each completion is run in a proof environment on its prompt's goal state
(Pantograph where Lean is found, else the recorded transitions of the theorems, ``ReplayEnv``).
A user's ``reward_func(completions, **kwargs)`` may return a list of floats or a tensor.

What this module adds to TRL: prompts from traced states, exactly what search sends
(:mod:`.grpo_data`); the algorithm by its published name (:mod:`.rl.algorithms`, run by
:class:`~lean_dojo_v2.trainer.rl.trl_trainer.LeanGRPOTrainer`); the reward context of each pass
(:mod:`.rl.rewards`, opened over the pass's theorems and closed after it); the curriculum walk,
resume, the run record and the output directory's rules (:mod:`.pass_loop`, shared with SFT);
curves of reward, loss and KL. Generation, the loss, mixed precision, vLLM and DeepSpeed are
TRL's and transformers'.

Layout of ``output_dir`` (as :mod:`.sft_trainer`'s)::

    adapter_config.json, adapter_model.safetensors   (LoRA)  ─┐ the model after the last
    config.json, model.safetensors                    (full)  ─┘ finished pass, + tokenizer
    merged/                  base + adapter merged (``merge_lora``)
    checkpoints/pass-NNN/    TRL checkpoints of the pass under way
    logs/pass-NNN/           TensorBoard event files
    data/                    the merged dataset of each curriculum pass (database runs)
    grpo_config.yaml         the config of the run
    training_state.json      passes done, fingerprint, reward/loss/KL history
    summary.json             the result (also the CLI's ``--json``)
    grpo_curves.png          reward (mean and per function), loss, KL
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .causal_lm import (
    CausalLMTrainerAttributes,
    LoadedCausalLM,
    apply_trl_args,
    build_trl_config,
    callbacks_argument,
    config_argument,
    load_causal_lm,
    lora_config_values,
    lora_fields,
    model_context_length,
    model_name_argument,
    output_dir_argument,
    pass_callbacks,
    pass_checkpoint,
    peft_config_dict,
    quiet_unless_progress,
    save_trained,
    training_arguments,
)
from .config import config_to_dict, load_config
from .errors import ConfigValueError, UnknownConfigKeyError
from .grpo_config import GRPOConfig
from .pass_loop import CurriculumTrainer, Pass, PassDataset, PassRun
from .result import DictResult
from .run_dir import is_main_process

log = logging.getLogger(__name__)

CONFIG_FILE = "grpo_config.yaml"
CURVES_FILE = "grpo_curves.png"
MERGED = "merged"

# Fields that do not change what is trained: a run may resume with other values of these.
_NOT_FINGERPRINTED = frozenset(
    {
        "output_dir",
        "overwrite_output_dir",
        "resume",
        "save_steps",
        "save_total_limit",
        "logging_steps",
        "report_to",
        "run_name",
        "progress_bar",
        "curves",
        "merge_lora",
        "reward_envs",
        "reward_timeout",
    }
)


@dataclass
class GRPOResult(DictResult):
    """What a GRPO run did (``summary.json``; the CLI prints it with ``--json``).

    ``steps`` counts optimizer steps over all passes; ``mean_reward_first``/``mean_reward_last``
    are the first and last logged mean rewards (weighted sum of the reward functions; None when
    nothing was logged); ``reward_backend`` is who checked the completions (``replay`` or
    ``lean``; None without a Lean-checked reward); ``dropped_groups``/``drop_rate`` count the
    flat groups dynamic sampling dropped; ``prompts`` the prompts over all passes; ``model_dir``
    is where the model (or adapter) is, loadable with ``lean_dojo_v2.models.load_model``.
    """

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


class GRPOTrainer(CausalLMTrainerAttributes, CurriculumTrainer[GRPOResult]):
    """Train a causal LM with a GRPO-family algorithm on rewards Lean checks.

    The positional/keyword arguments are the seed's; any other field of :class:`GRPOConfig` may be
    passed as a keyword (``GRPOTrainer("smollm2", algorithm="dapo", max_steps=10)``), or build one
    from a config with :meth:`from_config`. ``reward_func``: None (the Lean-checked composite, or
    the config's ``rewards``) or a function ``(completions, **kwargs) -> list[float] | Tensor``
    (its signature is checked here). ``lora_config``: a ``peft.LoraConfig``, a mapping of its
    arguments, ``True`` or ``None`` (full training). ``callbacks``: extra
    ``transformers.TrainerCallback`` objects. An unknown algorithm or reward name fails here,
    before anything loads.

    ``train(repos=None, database=None, data_path=None) -> GRPOResult``: the loop of
    :class:`~lean_dojo_v2.trainer.pass_loop.CurriculumTrainer`, as for ``SFTTrainer``.
    """

    run_kind = "grpo"
    default_model = "smollm2"
    config_file = CONFIG_FILE
    run_what = "GRPO training"
    not_fingerprinted = _NOT_FINGERPRINTED

    def __init__(
        self,
        model_name: str | None = None,
        reward_func: Callable[..., Any] | None = None,
        output_dir: str | os.PathLike[str] = "outputs-grpo",
        epochs_per_repo: float = 1,
        batch_size: int = 8,
        lr: float = 2e-5,
        lora_config: Any = None,
        *,
        callbacks: Sequence[Any] = (),
        **config_values: Any,
    ) -> None:
        values: dict[str, Any] = dict(
            model_name=model_name_argument(model_name, "GRPOTrainer"),
            output_dir=output_dir_argument(output_dir, "GRPOTrainer"),
            epochs_per_repo=epochs_per_repo,
            batch_size=batch_size,
            lr=lr,
        )
        lora_values, peft_object = lora_config_values(lora_config)
        values.update(lora_values)
        values.update(config_values)
        config = load_config(GRPOConfig, None, {}, **values)
        self._setup(config, reward_func, peft_object, callbacks)

    @classmethod
    def from_config(
        cls,
        config: GRPOConfig,
        reward_func: Callable[..., Any] | None = None,
        *,
        callbacks: Sequence[Any] = (),
        lora_config: Any = None,
    ) -> GRPOTrainer:
        """A trainer for ``config`` (e.g. from :func:`~lean_dojo_v2.trainer.config.load_config`);
        ``lora_config`` may give a ready ``peft.LoraConfig`` (it sets ``lora``)."""
        config_argument(config, GRPOConfig, "GRPOTrainer")
        self = cls.__new__(cls)
        peft_object = None
        if lora_config is not None and lora_config is not False and lora_config is not True:
            values = {**config_to_dict(config), **lora_fields(peft_config_dict(lora_config))}
            config = load_config(GRPOConfig, None, {}, **values)
            peft_object = lora_config
        self._setup(config, reward_func, peft_object, callbacks)
        return self

    def _setup(
        self,
        config: GRPOConfig,
        reward_func: Callable[..., Any] | None,
        peft_object: Any,
        callbacks: Sequence[Any],
    ) -> None:
        from .rl.algorithms import resolve_algorithm

        self.config = config
        self._peft_object = peft_object
        self.callbacks = callbacks_argument(callbacks, "GRPOTrainer")
        self.reward_func = reward_func
        self.algorithm = resolve_algorithm(config.algorithm, config.algorithm_config)
        self._user_reward = None
        if reward_func is not None:
            from .rl.rewards import wrap_user_reward

            self._user_reward = wrap_user_reward(reward_func)
        # TRL names each reward function's log by its __name__.
        self._user_name = getattr(self._user_reward, "__name__", None) or "reward_func"
        self.scorers = self._make_scorers()
        self.model: Any = None
        self.tokenizer: Any = None
        self.result: GRPOResult | None = None

    def _make_scorers(self) -> list[Any]:
        """The reward scorers by name (unknown names fail here): the config's rewards (none with
        a user function) and the algorithm's own (DAPO's ``overlong``)."""
        from .rl.rewards import get_scorer

        cfg = self.config
        names = [] if self._user_reward is not None else cfg.reward_names()
        names += [n for n in self.algorithm.extra_rewards if n not in names]
        user = [self._user_name] if self._user_reward is not None else []
        for key in cfg.reward_weights:
            if key not in names + user:
                valid = user + names
                raise UnknownConfigKeyError(key, valid, source="reward_weights", config="rewards")
        return [get_scorer(n, **self._scorer_kwargs(n)) for n in names]

    def _scorer_kwargs(self, name: str) -> dict[str, Any]:
        """What a scorer needs from the config (the overlong punishment: the length cap)."""
        if name == "overlong":
            # DAPO's soft zone is the last fifth of the cap (4k of 20k in the paper); a quarter
            # here, as tactic caps are short.
            cap = self.config.max_completion_length
            return {"max_len": cap, "cache": max(1, cap // 4)}
        return {}

    def __repr__(self) -> str:
        return (
            f"GRPOTrainer(model_name={self.config.model_name!r}, "
            f"algorithm={self.config.algorithm!r}, mode={self.config.mode!r}, "
            f"output_dir={self.config.output_dir!r}, lora={self.config.lora})"
        )

    # ------------------------------------------------------------------ the pass loop's hooks

    def _fingerprint_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self._peft_object is not None:
            extra["peft"] = peft_config_dict(self._peft_object)
        if self.reward_func is not None:
            f = self.reward_func
            extra["reward_func"] = f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', f)}"
        return extra

    def _run_pass(self, k: int, p: Pass, dataset: PassDataset, out: Path) -> dict[str, Any]:
        from .grpo_data import build_prompt_rows, check_prompt_theorems

        assert dataset.path is not None
        cfg = self.config
        theorems = self._read_theorems(dataset.path)
        if not self._loaded:  # bad data fails before a (possibly large) model is loaded
            check_prompt_theorems(theorems, cfg.mode, source=dataset.source)
            self._load(self._resume_dir)
            self._loaded = True
        built = build_prompt_rows(
            theorems,
            self.tokenizer,
            mode=cfg.mode,
            max_prompts=cfg.max_prompts,
            max_prompt_len=cfg.max_prompt_len,
            source=dataset.source,
        )
        st = built.stats
        log.info(
            "pass %d/%d (%s): %d %s prompts from %d theorems (%d sorry and %d longer than %d "
            "tokens left out)",
            k + 1,
            self._plan_length,
            p.label,
            st.prompts,
            cfg.mode,
            len(built.theorems),
            st.sorry_dropped,
            st.too_long_dropped,
            cfg.max_prompt_len,
        )
        context = self._open_context(built.theorems)
        try:
            funcs, weights = self._reward_functions(context)
            history, steps, sampling = self._train_pass(k, built.rows, funcs, weights, out)
            backend = None
            checks: dict[str, Any] = {}
            if context is not None:
                backend = getattr(context, "last_backend", None) or context.backend
                checks = dict(context.stats())
        finally:
            if context is not None:
                context.close()
        log.info("pass %d: rewards checked by %s: %s", k + 1, backend or "no Lean check", checks)
        return {
            "label": p.label,
            "prompts": st.prompts,
            "steps": steps,
            "stats": st.to_dict(),
            "reward_backend": backend,
            "reward_checks": checks,
            "sampling": sampling,
            "history": history,
        }

    def _save_pass(self, out: Path) -> None:
        save_trained(self.model, self.tokenizer, out, self.config)

    def _summarise(self, run: PassRun) -> GRPOResult:
        out, passes = run.out, run.state["passes"]
        cfg = self.config
        if not self._loaded and cfg.lora and cfg.merge_lora:  # resumed after every pass was done
            self._load(out)
        merged_dir = None
        if cfg.lora and cfg.merge_lora and is_main_process():
            merged_dir = str(self._save_merged(out / MERGED))
        rewards = [e["reward"] for p in passes for e in p["history"] if e.get("reward") is not None]
        curve = None
        if cfg.curves and is_main_process() and any(p["history"] for p in passes):
            from .curves import plot_grpo_curves

            curve = plot_grpo_curves(
                passes, out / CURVES_FILE, title=f"{cfg.algorithm} ({cfg.mode})"
            )
        groups = sum(p["sampling"].get("groups", 0) for p in passes)
        dropped = sum(p["sampling"].get("dropped_groups", 0) for p in passes)
        backends = [p["reward_backend"] for p in passes if p.get("reward_backend")]
        return GRPOResult(
            algorithm=self.algorithm.name,
            mode=cfg.mode,
            steps=sum(p["steps"] for p in passes),
            mean_reward_first=rewards[0] if rewards else None,
            mean_reward_last=rewards[-1] if rewards else None,
            reward_backend=backends[-1] if backends else None,
            dropped_groups=dropped,
            drop_rate=round(dropped / groups, 6) if groups else 0.0,
            seconds=run.seconds(),
            output_dir=str(out),
            model_dir=str(out),
            adapter=cfg.lora,
            passes=[{k: v for k, v in p.items() if k != "history"} for p in passes],
            prompts=sum(p.get("prompts", 0) for p in passes),
            rewards=self._reward_names(),
            merged_dir=merged_dir,
            resumed_from=run.resumed_from,
            curves=str(curve) if curve else None,
        )

    def _record_metrics(self, result: GRPOResult) -> dict[str, Any]:
        # The per-pass list stays in summary.json; the record keeps the totals.
        return {k: v for k, v in result.to_dict().items() if k != "passes"}

    # ------------------------------------------------------------------ one pass

    def _reward_names(self) -> list[str]:
        names = [s.name for s in self.scorers]
        return ([self._user_name] if self._user_reward is not None else []) + names

    def _open_context(self, theorems: Any) -> Any:
        """The reward context of a pass (its environments), or None without a scorer."""
        if not self.scorers:
            return None
        from .rl.rewards import open_reward_context

        cfg = self.config
        return open_reward_context(
            theorems,
            backend=cfg.reward_backend,
            num_envs=cfg.reward_envs,
            tactic_timeout=cfg.tactic_timeout,
            max_proof_steps=cfg.max_proof_steps,
        )

    def _reward_functions(self, context: Any) -> tuple[list[Callable[..., Any]], list[float]]:
        """TRL's reward functions of a pass and their weights (one per function: TRL logs each,
        and GDPO normalises each on its own), each within ``reward_timeout`` and finite."""
        from .rl.rewards.trl_adapter import guard_reward

        funcs: list[Callable[..., Any]] = []
        if self._user_reward is not None:
            funcs.append(self._user_reward)
        if self.scorers:
            from .rl.rewards import reward_functions

            funcs.extend(reward_functions(self.scorers, context))
        weights = [self.config.weight_of(name) for name in self._reward_names()]
        timeout = self.config.reward_timeout
        return [guard_reward(f, timeout=timeout) for f in funcs], weights

    def _check_theorems(self, theorems: list[Any], source: str) -> None:
        from .grpo_data import check_prompt_theorems

        check_prompt_theorems(theorems, self.config.mode, source=source)

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

    def _load(self, from_dir: Path | None) -> None:
        """Load the model and tokenizer (once): the start, or what the last finished pass saved in
        ``from_dir`` (resume)."""
        loaded = load_causal_lm(
            self.config,
            from_dir,
            lora_config=self.lora_config,
            who="GRPOTrainer",
            planned=getattr(self, "_planned", None),
        )
        self._loaded_lm = loaded
        self.model, self.tokenizer = loaded.model, loaded.tokenizer

    def _trl_args(
        self,
        k: int,
        out: Path,
        weights: list[float] | None = None,
        loaded: LoadedCausalLM | None = None,
    ) -> Any:
        from trl import GRPOConfig as TRLConfig

        cfg = self.config
        alg = self.algorithm
        if weights is None:
            weights = [cfg.weight_of(name) for name in self._reward_names()]
        args = training_arguments(cfg, k, out, loaded or self._loaded_lm)
        args.update(alg.trl_settings)
        if alg.steps_per_generation_factor is not None:
            factor = alg.steps_per_generation_factor
            args["steps_per_generation"] = factor * cfg.gradient_accumulation_steps
        args.update(
            num_generations=cfg.num_generations,
            max_completion_length=cfg.max_completion_length,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            reward_weights=weights,
            use_vllm=cfg.use_vllm,
            vllm_mode=cfg.vllm_mode,
            # The reward functions read every column of a row (theorem_key, state, ...).
            remove_unused_columns=False,
        )
        if cfg.vllm_server_base_url is not None:
            args["vllm_server_base_url"] = cfg.vllm_server_base_url
        args = apply_trl_args(args, TRLConfig, cfg.trl_args, "trl.GRPOConfig")
        return build_trl_config(TRLConfig, args, "trl.GRPOConfig")

    def _train_pass(
        self,
        k: int,
        rows: list[dict[str, Any]],
        funcs: list[Callable[..., Any]],
        weights: list[float],
        out: Path,
    ) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        from datasets import Dataset

        from ..models.prompts import add_special_tokens_for, prompt_style
        from .rl.trl_trainer import LeanGRPOTrainer

        cfg = self.config
        args = self._trl_args(k, out, weights)
        # TRL's sampler drops an incomplete generation batch: fewer prompts would train 0 steps.
        needed = args.generation_batch_size // args.num_generations
        if len(rows) < needed:
            from .errors import EmptyDatasetError

            raise EmptyDatasetError(
                f"pass {k + 1} has {len(rows)} prompts, fewer than the {needed} one generation "
                f"batch takes (batch_size × steps_per_generation × processes / num_generations); "
                "lower batch_size, or raise max_prompts or max_prompt_len"
            )
        trainer = LeanGRPOTrainer(
            model=self.model,
            reward_funcs=funcs,
            args=args,
            train_dataset=Dataset.from_list(rows),
            processing_class=self.tokenizer,
            callbacks=pass_callbacks(cfg, out, k, self.callbacks),
            extensions=self.algorithm.extensions,
            # The prompts are rendered text (models.prompts): tokenised as search tokenises them.
            prompt_add_special_tokens=add_special_tokens_for(prompt_style(self.tokenizer)),
        )
        quiet_unless_progress(trainer, cfg)
        self._trl_trainer = trainer
        checkpoint = pass_checkpoint(out, k)
        if checkpoint is not None:
            log.info("resuming pass %d from %s", k + 1, checkpoint)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        self.model = trainer.model
        names = self._reward_names()
        history = [_history_entry(e, names) for e in trainer.state.log_history if _is_step_log(e)]
        return history, int(trainer.state.global_step), dict(trainer.sampling_stats())


# ---------------------------------------------------------------------- helpers


def _is_step_log(entry: dict[str, Any]) -> bool:
    """A training log of a step (not the end-of-training summary TRL logs last)."""
    return "step" in entry and ("loss" in entry or "reward" in entry) and "train_loss" not in entry


def _finite(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _history_entry(entry: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """What the history keeps of one TRL log: step, loss, mean reward, KL, each reward's mean."""
    return {
        "step": int(entry["step"]),
        "loss": _finite(entry.get("loss")),
        "reward": _finite(entry.get("reward")),
        "reward_std": _finite(entry.get("reward_std")),
        "kl": _finite(entry.get("kl")),
        "rewards": {n: _finite(entry.get(f"rewards/{n}/mean")) for n in names},
    }


def train_grpo(
    data_path: str | os.PathLike[str] | None = None,
    *,
    config: GRPOConfig | None = None,
    database: Any = None,
    repos: Iterable[Any] | None = None,
    reward_func: Callable[..., Any] | None = None,
    callbacks: Sequence[Any] = (),
) -> GRPOResult:
    """``GRPOTrainer.from_config(config).train(repos, database, data_path)`` (the CLI's call)."""
    trainer = GRPOTrainer.from_config(
        config or GRPOConfig(), reward_func=reward_func, callbacks=callbacks
    )
    return trainer.train(repos=repos, database=database, data_path=data_path)


__all__ = ["GRPOConfig", "GRPOResult", "GRPOTrainer", "train_grpo"]
