"""Layer 3 (trainer): reinforcement learning for provers — the GRPO family on TRL.

- :mod:`.rewards`: reward scorers (Lean-checked tactic and proof rewards, format, efficiency,
  difficulty, overlong, domain), their registry, and the TRL adapter;
- :mod:`.algorithms`, :mod:`.advantages`, :mod:`.dynamic_sampling`, :mod:`.trl_trainer`: the
  published algorithms as TRL settings, plus what TRL lacks;
- :mod:`.evaluate`: the Lean-checked reward a model earns on sampled tactics (before vs after).

Importing this package loads nothing: each submodule is imported on first attribute access.
"""

from __future__ import annotations

from ..._lazy import reexport

__getattr__, __dir__ = reexport(
    globals(),
    {},
    submodules=(
        "rewards",
        "algorithms",
        "advantages",
        "dynamic_sampling",
        "trl_trainer",
        "evaluate",
    ),
)
