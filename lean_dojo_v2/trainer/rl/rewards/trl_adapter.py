"""Reward scorers and user reward functions as TRL reward functions.

TRL's ``GRPOTrainer`` calls each reward function as ``f(prompts=..., completions=...,
completion_ids=..., **columns, trainer_state=..., log_extra=..., log_metric=...)``, every dataset
column a list with one entry per completion, and expects one float per completion.

- :func:`reward_functions`: one such function per scorer, named after it (TRL logs
  ``rewards/<name>/mean``); it builds a :class:`Trajectory` per completion from the columns
  (``state``, ``theorem_key``, ``step``, ``recorded_tactic``, ``difficulty``, ``mode``) and calls
  the scorer's ``score_batch`` once for the whole batch.
- :func:`wrap_user_reward`: upstream LeanDojo-v2's ``reward_func(completions, **kwargs)``, checked up front
  (its signature) and at each call (a list of numbers or a 1-D tensor, one per completion).
- :func:`guard_reward`: what every reward function of a training step is wrapped in: a time
  limit (a function that never returns would hang training) and finite rewards only.
"""

from __future__ import annotations

import inspect
import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Real
from typing import Any, TypeVar

from ...errors import RewardFunctionError, RewardTimeoutError
from .base import BaseRewardScorer, RewardContext, Trajectory

# The dataset columns of our prompt rows, and what TRL adds to every call.
COLUMNS: tuple[str, ...] = ("state", "theorem_key", "step", "recorded_tactic", "difficulty", "mode")
TRL_ARGUMENTS: tuple[str, ...] = (
    "prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
    "environments",
)  # fmt: skip
_TRL_EXTRAS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})

T = TypeVar("T")


def _text(completion: object) -> str:
    """A completion's text: a string, or (conversational) the last message's content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return "" if completion is None else str(completion)


def _column(kwargs: Mapping[str, object], name: str, n: int) -> list[Any]:
    """Dataset column ``name``, one value per completion (None where the dataset lacks it); its
    values are whatever the dataset holds (read by :class:`Trajectory`'s field types)."""
    given = kwargs.get(name)
    if given is None:
        return [None] * n
    if not isinstance(given, Iterable):
        raise RewardFunctionError(
            f"column {name!r} is a {type(given).__name__}; TRL passes a list, one value per "
            "completion"
        )
    values = list(given)
    if len(values) != n:
        raise RewardFunctionError(
            f"column {name!r} has {len(values)} values for {n} completions; TRL passes one per "
            "completion"
        )
    return values


def build_trajectories(
    prompts: Sequence[object] | None,
    completions: Sequence[object],
    completion_ids: Sequence[Sequence[int]] | None,
    columns: Mapping[str, object],
    context: RewardContext | None = None,
) -> list[Trajectory]:
    """One :class:`Trajectory` per completion from TRL's arguments (missing columns take the
    trajectory's defaults; the theorem is looked up in ``context`` by ``theorem_key``)."""
    n = len(completions)
    prompt_list = list(prompts) if prompts is not None else [""] * n
    cols = {name: _column(columns, name, n) for name in COLUMNS}
    ids: list[Sequence[int] | None] = (
        list(completion_ids) if completion_ids is not None else [None] * n
    )
    out = []
    for i in range(n):
        key = cols["theorem_key"][i] or ""
        extra: dict[str, object] = {"theorem_key": key}
        token_ids = ids[i]
        if token_ids is not None:
            extra["completion_length"] = len(token_ids)
        step, difficulty = cols["step"][i], cols["difficulty"][i]
        out.append(
            Trajectory(
                prompt=_text(prompt_list[i]) if i < len(prompt_list) else "",
                completion=_text(completions[i]),
                state=cols["state"][i] or "",
                theorem=context.theorem(key) if context is not None else None,
                step=int(step) if step is not None else 0,
                recorded_tactic=cols["recorded_tactic"][i] or "",
                difficulty=float(difficulty) if difficulty is not None else 0.0,
                mode=cols["mode"][i] or "tactic",
                extra=extra,
            )
        )
    return out


class ScorerRewardFunction:
    """A TRL reward function over one scorer (see :func:`reward_functions`)."""

    def __init__(self, scorer: BaseRewardScorer, context: RewardContext | None) -> None:
        self.scorer = scorer
        self.context = context
        self.__name__ = scorer.name  # TRL names the reward (and its logs) after this

    def __call__(
        self,
        prompts: Sequence[object] | None = None,
        completions: Sequence[object] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: object,
    ) -> list[float]:
        completions = list(completions or [])
        trajectories = build_trajectories(
            prompts, completions, completion_ids, kwargs, self.context
        )
        scored = self.scorer.score_batch(trajectories)
        if len(scored) != len(completions):
            raise RewardFunctionError(
                f"scorer {self.scorer.name!r} returned {len(scored)} rewards for "
                f"{len(completions)} completions; score_batch must return one per trajectory"
            )
        return [float(reward) for reward, _ in scored]

    def __repr__(self) -> str:
        return f"ScorerRewardFunction({self.scorer!r})"


def reward_functions(
    scorers: Sequence[BaseRewardScorer], context: RewardContext | None
) -> list[Callable[..., list[float]]]:
    """One TRL reward function per scorer, each named after its scorer; scorers without a
    context of their own are bound to ``context``."""
    names = [s.name for s in scorers]
    if len(set(names)) != len(names):
        raise RewardFunctionError(f"reward names must be distinct (TRL logs by name), got {names}")
    for scorer in scorers:
        if not isinstance(scorer, BaseRewardScorer):
            raise RewardFunctionError(
                f"reward_functions takes BaseRewardScorer objects, not {type(scorer).__name__}; "
                "wrap a plain function with wrap_user_reward"
            )
        scorer.bind(context)
    return [ScorerRewardFunction(s, context) for s in scorers]


# ------------------------------------------------------------------------- user functions
def _signature_plan(func: Callable[..., object]) -> tuple[bool, frozenset[str]]:
    """Whether ``func`` takes ``**kwargs``, and the names it takes; raises
    :class:`RewardFunctionError` when TRL's call cannot fit it."""
    valid = (*TRL_ARGUMENTS, *COLUMNS)
    what = getattr(func, "__name__", type(func).__name__)
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError) as exc:
        raise RewardFunctionError(
            f"cannot read the signature of reward function {what}: {exc}"
        ) from None
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    names: set[str] = set()
    for p in params.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            raise RewardFunctionError(
                f"reward function {what} has a positional-only parameter {p.name!r}; TRL passes "
                f"keywords: use def {what}(completions, **kwargs)"
            )
        if p.name not in valid and p.default is p.empty:
            raise RewardFunctionError(
                f"reward function {what} needs {p.name!r}, which TRL does not pass; parameters "
                f"it can take: {', '.join(valid)} (or **kwargs)"
            )
        names.add(p.name)
    if "completions" not in names and not var_kw:
        raise RewardFunctionError(
            f"reward function {what} does not accept completions; use def "
            f"{what}(completions, **kwargs)"
        )
    return var_kw, frozenset(names)


def _as_floats(result: object, n: int, what: str) -> list[float]:
    torch = sys.modules.get("torch")  # a tensor can only exist if torch is loaded
    if torch is not None and isinstance(result, torch.Tensor):
        if result.dim() != 1:
            raise RewardFunctionError(
                f"reward function {what} returned a tensor of shape {tuple(result.shape)}; "
                f"return a 1-D tensor or list with one reward per completion ({n})"
            )
        result = result.detach().float().cpu().tolist()
    elif hasattr(result, "tolist") and not isinstance(result, list | tuple):
        result = result.tolist()  # numpy arrays
    if not isinstance(result, list | tuple):
        raise RewardFunctionError(
            f"reward function {what} returned {type(result).__name__}; return a list of floats "
            f"or a 1-D torch.Tensor, one per completion ({n})"
        )
    if len(result) != n:
        raise RewardFunctionError(
            f"reward function {what} returned {len(result)} rewards for {n} completions; "
            "return one per completion"
        )
    out = []
    for value in result:
        if value is None:
            out.append(math.nan)  # TRL's convention: this function has no reward for it
        elif isinstance(value, Real):
            out.append(float(value))
        else:
            raise RewardFunctionError(
                f"reward function {what} returned a {type(value).__name__} among its rewards; "
                "every reward must be a number"
            )
    return out


def wrap_user_reward(func: Callable[..., object]) -> Callable[..., list[float]]:
    """A TRL reward function around a user's ``func(completions, **kwargs)`` (or one naming only
    the arguments and columns it reads). Its signature is checked now; at each call, the result
    must be a list of numbers or a 1-D ``torch.Tensor`` with one entry per completion. Raises
    :class:`RewardFunctionError` (one line) otherwise."""
    if not callable(func):
        raise RewardFunctionError(
            f"reward_func must be callable, not {type(func).__name__}; write def "
            "reward_func(completions, **kwargs)"
        )
    var_kw, names = _signature_plan(func)
    what = getattr(func, "__name__", type(func).__name__)

    def reward(
        prompts: Sequence[object] | None = None,
        completions: Sequence[object] | None = None,
        completion_ids: object = None,
        **kwargs: object,
    ) -> list[float]:
        completions = list(completions or [])
        call: dict[str, object] = {
            "prompts": prompts,
            "completions": completions,
            "completion_ids": completion_ids,
        }
        call.update(kwargs)
        if not var_kw:
            call = {k: v for k, v in call.items() if k in names}
        return _as_floats(func(**call), len(completions), what)

    reward.__name__ = what if what != "<lambda>" else "reward_func"
    reward.__qualname__ = reward.__name__
    reward.user_function = func  # type: ignore[attr-defined]
    return reward


# ------------------------------------------------------------------------- every function
def _call_within(
    func: Callable[..., T], kwargs: Mapping[str, object], timeout: float, what: str
) -> T:
    """``func(**kwargs)`` on a daemon thread, its result or its exception; a
    :class:`RewardTimeoutError` when it has not returned after ``timeout`` seconds."""
    values: list[T] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            values.append(func(**kwargs))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)
        finally:
            done.set()

    # A daemon thread: a call that never returns must not keep the process alive at exit.
    threading.Thread(target=run, name=f"lean-dojo-v2-reward-{what}", daemon=True).start()
    if not done.wait(timeout):
        raise RewardTimeoutError(
            f"reward function {what!r} did not return within reward_timeout={timeout:g} s, so "
            "training stopped (the call is left running in the background); make it return "
            "sooner, or raise reward_timeout in the GRPO config"
        )
    if errors:
        raise errors[0]
    return values[0]


def guard_reward(
    func: Callable[..., list[float]], *, timeout: float | None
) -> Callable[..., list[float]]:
    """``func`` (a TRL reward function: :func:`reward_functions`, :func:`wrap_user_reward`) as a
    training step calls it: it must return within ``timeout`` seconds (None: no limit), else
    :class:`RewardTimeoutError` naming it; an infinite reward is a
    :class:`RewardFunctionError` naming it and the completion (NaN stays TRL's "no reward from
    this function"). The name TRL logs it by is kept."""
    what = getattr(func, "__name__", None) or type(func).__name__

    def guarded(**kwargs: object) -> list[float]:
        if timeout is None:
            rewards = func(**kwargs)
        else:
            rewards = _call_within(func, kwargs, timeout, what)
        for i, value in enumerate(rewards):
            if isinstance(value, Real) and math.isinf(value):
                raise RewardFunctionError(
                    f"reward function {what!r} returned {value} for completion {i}; rewards "
                    "must be finite (an infinite one makes the group's advantages NaN): clip it, "
                    "or return None for no reward"
                )
        return rewards

    guarded.__name__ = what
    guarded.__qualname__ = what
    guarded.guarded_function = func  # type: ignore[attr-defined]
    return guarded


__all__ = [
    "COLUMNS",
    "ScorerRewardFunction",
    "build_trajectories",
    "guard_reward",
    "reward_functions",
    "wrap_user_reward",
]
