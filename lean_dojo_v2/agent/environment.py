"""Layer 4 (agent): which proof environment an agent proves with, chosen for it.

Pantograph (Lean itself checks every tactic and the whole proof) when a Pantograph ``repl``
binary is found (:func:`~lean_dojo_v2.interaction.pantograph.locate.locate_repl`) *and* the
repository's checkout is a built Lake project (``.lake/build`` is there); otherwise ``ReplayEnv``
over the agent's export of its repositories (only recorded tactics are accepted), with a one-line
notice saying so. The choice is made per repository; every report says ``backend``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..prover.search_types import EnvFactory

logger = logging.getLogger(__name__)

REPLAY_NOTICE = (
    "backend: replay (no Pantograph REPL and built Lean project found{why}): only tactics "
    "recorded in the traced data are accepted, so proofs are evidence of the pipeline, not new "
    "Lean proofs; `lean-dojo-v2 doctor` says what to install for Lean-checked proofs"
)


@dataclass(frozen=True)
class EnvChoice:
    """The environment factory for one repository, its backend name and why it was chosen."""

    backend: str
    make_env: EnvFactory
    notice: str | None = None


def is_built_project(path: str | Path | None) -> bool:
    """A Lake project whose build folder exists (what Pantograph needs to import its modules)."""
    if path is None:
        return False
    p = Path(path)
    return (p / ".lake" / "build").is_dir() and (
        (p / "lakefile.lean").is_file() or (p / "lakefile.toml").is_file()
    )


def choose_env(
    source_dir: str | Path | None,
    replay_data: str | Path,
    *,
    backend: str = "auto",
    tactic_timeout: float | None = None,
) -> EnvChoice:
    """The environment for a repository whose checkout is ``source_dir`` (None: no checkout) and
    whose traced theorems are in the dataset ``replay_data``. ``backend``: ``"auto"`` (see the
    module docstring), ``"pantograph"`` (a missing REPL or project is an error) or ``"replay"``."""
    from ..errors import ConfigError, LeanNotFoundError
    from ..prover.parallel import PantographEnvSpec, ReplayEnvSpec

    if backend not in ("auto", "pantograph", "replay"):
        raise ConfigError(f"backend must be auto, pantograph or replay, not {backend!r}")
    replay = ReplayEnvSpec(str(Path(replay_data).resolve()))
    if backend == "replay":
        return EnvChoice("replay", replay, None)
    from ..interaction.pantograph.locate import locate_repl

    try:
        located = locate_repl()
    except LeanNotFoundError as exc:
        if backend == "pantograph":
            raise
        return EnvChoice("replay", replay, REPLAY_NOTICE.format(why=f": {_short(exc)}"))
    if source_dir is None or not is_built_project(source_dir):
        if backend == "pantograph":
            raise LeanNotFoundError(
                f"backend='pantograph' needs the repository's built Lean project; {source_dir} "
                "is none (run `lake build` in it, or set it up with setup_local_repository)"
            )
        why = ": the repository has no built checkout" if source_dir else ": no checkout"
        return EnvChoice("replay", replay, REPLAY_NOTICE.format(why=why))
    config: dict[str, Any] = {
        "command": list(located.command),
        "project_dir": str(Path(source_dir).resolve()),
    }
    if tactic_timeout is not None:
        config["tactic_timeout"] = tactic_timeout
    return EnvChoice("pantograph", PantographEnvSpec(config), None)


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text.split(" (tried")[0].split(". ")[0]


__all__ = ["REPLAY_NOTICE", "EnvChoice", "choose_env", "is_built_project"]
