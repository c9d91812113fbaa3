"""Layer 3 (trainer): the trainers' typed errors. Each message names what is wrong and the valid
choices. ``TrainerError``, ``EmptyDatasetError`` and the config errors live in
:mod:`lean_dojo_v2.errors` (layer 0, where the config system raises them) and are re-exported
here, the very same classes.
"""

from __future__ import annotations

from ..errors import (
    AgentConfigError,
    ConfigValueError,
    EmptyDatasetError,
    TrainerError,
    UnknownConfigKeyError,
    did_you_mean,
)

__all__ = [
    "ConfigValueError",
    "EmptyDatasetError",
    "NonFiniteLossError",
    "OutputDirArgumentError",
    "TrainerError",
    "RewardFunctionError",
    "RewardTimeoutError",
    "TooFewRowsError",
    "TrainingStateError",
    "UnknownConfigKeyError",
    "UnknownRewardError",
]


class TrainingStateError(TrainerError):
    """An ``output_dir`` holds a run of this library that cannot be resumed as asked (its config or
    data differ). Choose another ``output_dir``, or set ``overwrite_output_dir`` / ``--force``."""


class TooFewRowsError(EmptyDatasetError):
    """Fewer rows than the run's processes need: SFT examples than processes, GRPO prompts than
    one generation batch takes. Launch fewer processes, or give more data (docs/errors.md)."""


class OutputDirArgumentError(ConfigValueError, AgentConfigError, TrainerError):
    """``SFTTrainer(output_dir=...)`` / ``GRPOTrainer(output_dir=...)`` got no directory (None or
    an empty path) or something that is not a path. Raised by the constructor, before anything
    is written. It is a ``ConfigValueError`` and a ``TrainerError``, and also the
    ``AgentConfigError`` the agents promise for a trainer without an ``output_dir``
    (``HFAgent(SFTTrainer(output_dir=None))``)."""


class NonFiniteLossError(TrainerError):
    """The training loss or the gradients became NaN or infinite: the run stops at that step,
    before the optimizer applies them, and saves no model (the output directory keeps what it
    held). Usually a learning rate far too high; the message names the step and the value."""


class UnknownAlgorithmError(TrainerError, ValueError):
    """A GRPO algorithm name is not in the registry (:mod:`lean_dojo_v2.trainer.rl.algorithms`);
    ``name`` is what was asked for, ``valid`` the registered names, which the message lists."""

    def __init__(self, name: str, valid: list[str]) -> None:
        self.name = name
        self.valid = list(valid)
        super().__init__(
            f"unknown GRPO algorithm {name!r}{did_you_mean(name, valid)}; valid algorithms: "
            f"{', '.join(self.valid)}"
        )

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        return (type(self), (self.name, self.valid))


class UnknownRewardError(TrainerError, ValueError):
    """A reward name (``get_scorer(name)``, ``create_composite_scorer(...)``, a composite's
    ``weights``, ``reward_type`` in a config) is not a registered reward scorer; ``name`` is what
    was asked for, ``valid`` the registered names, which the message lists."""

    def __init__(self, name: str, valid: list[str], what: str = "reward") -> None:
        self.name = name
        self.valid = list(valid)
        self.what = what
        hint = did_you_mean(name, valid)
        super().__init__(f"unknown {what} {name!r}{hint}; valid names: {', '.join(self.valid)}")

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        return (type(self), (self.name, self.valid, self.what))


class RewardFunctionError(TrainerError, ValueError):
    """A user's reward function (``GRPOTrainer(reward_func=...)``, :func:`wrap_user_reward`) or
    reward scorer cannot be used: its signature does not accept ``completions`` (and ``**kwargs``
    or the dataset columns it names), it returned something other than a list of numbers or a
    1-D ``torch.Tensor``, or a number of rewards other than one per completion, or an infinite
    reward (a ``+inf`` would make the group's advantages NaN and train nothing); or a Lean-checked
    scorer was asked to score without a :class:`RewardContext`. The message says which, in one
    line."""


class RewardTimeoutError(TrainerError, TimeoutError):
    """A reward function (a user's ``reward_func`` or a reward scorer) did not return within the
    GRPO config's ``reward_timeout`` seconds: training stops at that step, naming the function.
    Python cannot stop a running function, so the call is left running in a daemon thread (it
    ends with the process). Make the function return sooner, or raise ``reward_timeout``."""
