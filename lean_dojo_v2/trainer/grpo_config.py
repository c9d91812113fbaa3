"""The config of :class:`~lean_dojo_v2.trainer.grpo_trainer.GRPOTrainer` (no torch here)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..config.loading import (
    config_field,
    require,
    require_at_least,
    require_one_of,
    require_positive,
)
from ..errors import ConfigValueError
from .causal_lm_config import CausalLMConfig
from .rl.algorithms import ResolvedAlgorithm, resolve_algorithm
from .run_dir import world_size
from .trl_args import MAX_COMPLETION_LENGTH

MODES = ("tactic", "proof")
REWARD_BACKENDS = ("auto", "replay", "lean")
REWARD_WORKERS_BACKENDS = ("local", "ray")
VLLM_MODES = ("colocate", "server")
# The Lean-checked composite of each mode when ``rewards`` is empty: the check, plus a small
# format term that separates completions of a group the check scores alike (all errors).
DEFAULT_REWARDS: dict[str, dict[str, float]] = {
    "tactic": {"lean_tactic": 1.0, "format": 0.1},
    "proof": {"lean_proof": 1.0, "format": 0.1},
}


def _reward_type(value: Any) -> dict[str, Any]:
    """rewards (one name or a list; composite and default: the mode's own)."""
    names = [value] if isinstance(value, str) else list(value or [])
    return {"rewards": [n for n in names if n not in ("composite", "default")]}


def _lora_rank(value: object) -> dict[str, object]:
    """lora = true and lora_r"""
    return {"lora": True, "lora_r": value}


@dataclass
class GRPOConfig(CausalLMConfig):
    r"""Configuration of :class:`~lean_dojo_v2.trainer.grpo_trainer.GRPOTrainer`: reinforcement
    learning of a tactic (or whole-proof) generator with the GRPO family on TRL, rewarded by Lean.
    The keys of upstream LeanDojo-v2's GRPO design load too (``config_aliases``). The fields it
    shares with ``SFTConfig`` are documented once, in ``CausalLMConfig``; here are GRPO's own and
    those whose default or meaning differs.

    Parameters:
        > Parameters that control the model

        (as in ``CausalLMConfig``)

        > Parameters that control the algorithm and the rewards

        mode (`str`, *optional*, defaults to `"tactic"`):
            `tactic`: one prompt per traced goal state, the completion is one tactic (what best-first
            search asks for); `proof`: one prompt per theorem with a tactic proof, the completion is
            the whole proof (what whole-proof search asks for).
        algorithm (`str`, *optional*, defaults to `"grpo"`):
            The GRPO variant by its published name: grpo, dr_grpo, dapo, bnpo, gspo, cispo, sapo,
            gdpo (TRL settings), dgpo, grpo_dpo (ours); `lean-dojo-v2 train grpo --help` lists them.
            An empty or unknown name is an error listing the valid ones.
        algorithm_config (`dict[str, Any]`, *optional*, defaults to `{}`):
            Overrides of the algorithm's settings: TRL's (`beta`, `epsilon`, `epsilon_high`,
            `loss_type`, ...) or our extensions' (`dynamic_sampling`, `max_refill_rounds`,
            `dgpo_temperature`, ...). An unknown key is an error listing the valid ones.
        rewards (`list[str]`, *optional*, defaults to `[]`):
            Reward functions by name (lean_tactic, lean_proof, format, efficiency, difficulty,
            overlong, algebra, number_theory, analysis, combinatorics, geometry). Empty: the
            Lean-checked composite of the mode (`lean_tactic` or `lean_proof`, weight 1.0, plus
            `format`, 0.1). Ignored when a `reward_func` is given in Python.
        reward_weights (`dict[str, float]`, *optional*, defaults to `{}`):
            Weight of each reward by name; a reward not named weighs 1.0 (the default composite's
            own weights otherwise). `trl_args` may not set TRL's own `reward_weights`.
        num_generations (`int`, *optional*, defaults to `4`):
            Completions sampled per prompt (the group whose rewards are normalised). The
            generation batch, `batch_size` × `gradient_accumulation_steps` (GSPO: × 4) ×
            processes, must be a multiple of it; checked when the config is built.
        max_completion_length (`int`, *optional*, defaults to `128`):
            Most tokens generated per completion (a tactic needs few; raise it for `proof`). At
            most 131072, and `max_prompt_len` + this must fit the model's context (checked
            before the run starts).
        temperature (`float`, *optional*, defaults to `1.0`):
            Sampling temperature of the rollouts (GRPO needs different completions in a group).
        top_p (`float`, *optional*, defaults to `1.0`):
            Nucleus sampling of the rollouts: keep the smallest set of tokens with this much mass.

        > Parameters that control the data

        max_prompts (`int` or `None`, *optional*, defaults to `None`):
            Use only the first this many prompts of each pass (smoke runs, focused sets). `None`: all.
        max_prompt_len (`int`, *optional*, defaults to `512`):
            Longest prompt in tokens. Longer ones are left out, never cut: a cut goal is not the
            goal search would send.

        > Parameters that control the reward checks

        reward_backend (`str`, *optional*, defaults to `"auto"`):
            Who checks the completions: `lean` (Pantograph; needs a Lean toolchain and the REPL),
            `replay` (the recorded transitions of the theorems: only recorded tactics make
            progress), or `auto` (Lean when a Pantograph REPL is found, else replay).
        reward_envs (`int`, *optional*, defaults to `4`):
            Proof environments checking completions in parallel.
        reward_workers_backend (`str`, *optional*, defaults to `"local"`):
            Where the `reward_envs` environments live: `local` (in the training process; a Lean
            REPL is its child process) or `ray` (each in its own Ray actor, spread over the nodes
            of the Ray cluster at `ray_address`; the same rewards). Needs the `ray` extra.
        ray_address (`str` or `None`, *optional*, defaults to `None`):
            With `reward_workers_backend: ray`, the cluster to join: the head's `host:port`,
            `ray://host:10001` or `auto`; `None` starts a local Ray instance. An address where no
            cluster answers fails before the run starts.
        tactic_timeout (`float`, *optional*, defaults to `10.0`):
            Seconds one tactic may run in Lean; a timeout scores as an error and training goes on.
        reward_timeout (`float`, *optional*, defaults to `600.0`):
            Seconds one call of a reward function (a whole batch) may take. A call still running
            then stops training with a `RewardTimeoutError` naming the function (a function that
            never returns would hang the run); raise it for slow checks of large batches.
        max_proof_steps (`int`, *optional*, defaults to `1`):
            Tactic mode: tactics of a rollout applied until proved, failed or this many steps
            (1: the completion's one tactic).

        > Parameters that control the training

        batch_size (`int`, *optional*, defaults to `8`):
            Completions per device per micro-step (TRL's `per_device_train_batch_size`): 8 with
            `num_generations` 4 is 2 prompts.

        > Parameters that control checkpoints and outputs

        output_dir (`str`, *optional*, defaults to `"outputs-grpo"`):
            Where the model (or adapter), checkpoints, logs and curves go. It must be new, empty or
            written by lean-dojo-v2 (see `overwrite_output_dir`).
        save_steps (`int`, *optional*, defaults to `50`):
            Write a checkpoint every this many optimizer steps, and at the end of each pass.

        > Parameters that control logging

        curves (`bool`, *optional*, defaults to `True`):
            Write `output_dir/grpo_curves.png`: mean reward and each reward function, loss, KL.

        > Parameters that control scale-out

        use_vllm (`bool`, *optional*, defaults to `False`):
            Generate the rollouts with vLLM (TRL's integration; needs the `vllm` package and a GPU).
        vllm_mode (`str`, *optional*, defaults to `"colocate"`):
            `colocate`: vLLM runs inside the training processes; `server`: a separate `trl
            vllm-serve` process (see `vllm_server_base_url`).
        vllm_server_base_url (`str` or `None`, *optional*, defaults to `None`):
            With `vllm_mode: server`, the server's URL (e.g. `http://localhost:8000`).
    """

    # Upstream LeanDojo-v2's GRPO keys (lean_dojo_v2.config.loading, "Aliases").
    config_aliases: ClassVar[dict[str, str | Callable[[Any], dict[str, Any]]]] = {
        "base_model": "model_name",
        "lora_rank": _lora_rank,
        "learning_rate": "lr",
        "num_train_epochs": "epochs_per_repo",
        "reward_type": _reward_type,
    }

    # GRPO's own defaults of three CausalLMConfig fields
    batch_size: int = 8
    output_dir: str = config_field("outputs-grpo", fingerprint=False)
    save_steps: int = config_field(50, fingerprint=False)
    # algorithm and rewards
    mode: Literal["tactic", "proof"] = "tactic"
    algorithm: str = "grpo"
    algorithm_config: dict[str, Any] = config_field(default_factory=dict)
    rewards: list[str] = config_field(default_factory=list)
    reward_weights: dict[str, float] = config_field(default_factory=dict)
    num_generations: int = 4
    max_completion_length: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    # data
    max_prompts: int | None = None
    max_prompt_len: int = 512
    # reward checks
    reward_backend: Literal["auto", "replay", "lean"] = "auto"
    # how many environments check, and how long a call may take: not what is trained
    reward_envs: int = config_field(4, fingerprint=False)
    # where the environments live: a run resumes on another cluster
    reward_workers_backend: Literal["local", "ray"] = config_field("local", fingerprint=False)
    ray_address: str | None = config_field(None, fingerprint=False)
    tactic_timeout: float = 10.0
    reward_timeout: float = config_field(600.0, fingerprint=False)
    max_proof_steps: int = 1
    # logging
    curves: bool = config_field(True, fingerprint=False)
    # scale-out
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_server_base_url: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        require_one_of(self, "mode", MODES)
        require(self, self.num_generations >= 2, "num_generations", "at least 2 (a group)")
        cap = f"from 1 to {MAX_COMPLETION_LENGTH} (the model's context caps it further)"
        length_ok = 1 <= self.max_completion_length <= MAX_COMPLETION_LENGTH
        require(self, length_ok, "max_completion_length", cap)
        require_positive(self, "temperature", "tactic_timeout", "reward_timeout")
        require(self, 0 < self.top_p <= 1, "top_p", "in (0, 1]")
        require_at_least(self, 1, "max_prompts", or_none=True)
        require_at_least(self, 8, "max_prompt_len")
        require_one_of(self, "reward_backend", REWARD_BACKENDS)
        require_one_of(self, "reward_workers_backend", REWARD_WORKERS_BACKENDS)
        require_at_least(self, 1, "reward_envs", "max_proof_steps")
        require_one_of(self, "vllm_mode", VLLM_MODES)
        weights_ok = all(w >= 0 for w in self.reward_weights.values())
        weights = "a mapping of reward names to weights of 0 or more"
        require(self, weights_ok, "reward_weights", weights)
        if "reward_weights" in self.trl_args:
            # TRL's list must match the reward functions the trainer builds, which TRL checks
            # only once the run has started.
            raise ConfigValueError(
                "trl_args may not set 'reward_weights': use the config's reward_weights, a "
                "mapping of reward names to weights"
            )
        # The algorithm's name and overrides (an empty or unknown name lists the valid ones),
        # then TRL's batch rules, which TRL itself checks only once the run has started.
        algorithm = resolve_algorithm(self.algorithm, self.algorithm_config)
        check_generation_batch(self, algorithm)

    def reward_names(self) -> list[str]:
        """The reward functions by name: ``rewards``, or the mode's default composite."""
        return list(self.rewards) or list(DEFAULT_REWARDS[self.mode])

    def weight_of(self, name: str) -> float:
        """The weight of reward ``name``: ``reward_weights``, else the default composite's, else 1."""
        if name in self.reward_weights:
            return float(self.reward_weights[name])
        if not self.rewards:
            return DEFAULT_REWARDS[self.mode].get(name, 1.0)
        return 1.0


def check_generation_batch(cfg: GRPOConfig, algorithm: ResolvedAlgorithm) -> None:
    """TRL's rules for the generation batch (``trl.GRPOConfig.__post_init__``), on the values the
    run will hand TRL (``trl_args`` over the config, the algorithm's ``steps_per_generation``),
    checked with the config: TRL checks them only once the run has started. Raises a one-line
    :class:`ConfigValueError` naming the fields to change.

    Each prompt's group of ``num_generations`` completions must lie whole in one generation batch
    (``per_device_train_batch_size × processes × steps_per_generation`` completions, or TRL's
    ``generation_batch_size``); dynamic sampling (DAPO) drops and refills whole groups in each
    process's share of it."""
    trl = cfg.trl_args
    batch = trl.get("per_device_train_batch_size", cfg.batch_size)
    generations = trl.get("num_generations", cfg.num_generations)
    accumulation = trl.get("gradient_accumulation_steps", cfg.gradient_accumulation_steps)
    steps = trl.get("steps_per_generation")
    if steps is None and algorithm.steps_per_generation_factor is not None:
        # As GRPOTrainer derives it (from the config's gradient_accumulation_steps).
        steps = algorithm.steps_per_generation_factor * cfg.gradient_accumulation_steps
    total = trl.get("generation_batch_size")
    processes = world_size()
    in_trl = "per_device_train_batch_size" in trl
    batch_key = "trl_args per_device_train_batch_size" if in_trl else "batch_size"
    where = f"{processes} processes" if processes > 1 else "1 process"
    if total is not None and steps is not None:
        source = "trl_args" if "steps_per_generation" in trl else f"algorithm {algorithm.name!r}"
        raise ConfigValueError(
            f"trl_args sets generation_batch_size={total} while steps_per_generation={steps} is "
            f"set too (by {source}); TRL takes one of the two: remove one"
        )
    if total is not None:
        if total % (batch * processes):
            raise ConfigValueError(
                f"trl_args generation_batch_size={total} must be a multiple of batch_size × "
                f"processes = {batch} × {processes} = {batch * processes}"
            )
        steps = total // (batch * processes)
    else:
        steps = accumulation if steps is None else steps
        total = batch * processes * steps
    if total % generations:
        good = [g for g in range(2, total + 1) if total % g == 0][:6]
        step = generations // math.gcd(generations, processes * steps)
        raise ConfigValueError(
            f"a generation batch of batch_size × steps_per_generation × processes = {batch} × "
            f"{steps} × {processes} = {total} completions does not hold whole groups of "
            f"num_generations={generations}; use a {batch_key} that is a multiple of {step}, "
            f"or num_generations dividing {total} ({', '.join(map(str, good)) or 'none'})"
        )
    per_process = total // processes
    if algorithm.extensions.dynamic_sampling and per_process % generations:
        raise ConfigValueError(
            f"dynamic sampling ({algorithm.name}) drops and refills whole groups in each "
            f"process's generation batch: {per_process} completions on each of {where} is not a "
            f"multiple of num_generations={generations}; change {batch_key} or num_generations"
        )


__all__ = ["DEFAULT_REWARDS", "GRPOConfig", "MODES", "REWARD_BACKENDS", "check_generation_batch"]
