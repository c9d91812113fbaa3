"""``PantographConfig``: everything needed to launch and drive a Pantograph REPL."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import ConfigError

_FORBIDDEN_OPTIONS = {
    "printJsonPretty": "it breaks the one-line-per-reply framing",
    "noRepeat": "goals must carry every hypothesis's type to be rendered",
    "printExprPretty": "goal text comes from the pretty-printed expressions",
}


@dataclass(frozen=True)
class PantographConfig:
    """How to launch and drive the REPL.

    - ``command``: the REPL binary (a path, a command-line string, or an argv list); None: discover
      it (see :mod:`lean_dojo_v2.interaction.pantograph.locate`).
    - ``project_dir``: the Lean project (cwd of the REPL; ``LEAN_PATH`` comes from
      ``lake env printenv LEAN_PATH`` there unless ``lean_path`` is given; its ``lean-toolchain``
      is checked against the REPL's Lean version).
    - ``imports``: modules imported at launch (every theorem you ``start`` must be in them).
    - ``core_options``: Lean core options, ``"maxHeartbeats=400000"`` or ``{"maxHeartbeats": 400000}``.
    - ``options``: Pantograph REPL options sent with ``options.set`` after every (re)start.
    - ``ready_timeout``: seconds to wait for ``ready.`` (imports can take minutes).
    - ``request_timeout``: client-side limit (s) of a request without its own timeout.
    - ``tactic_timeout``: default limit (s) of one tactic: set as the REPL ``timeout`` option (the
      REPL interrupts the tactic and stays usable); the client-side watchdog (kills and restarts
      the REPL) waits :meth:`watchdog_limit` of it. None: no tactic limit beyond
      ``request_timeout``.
    - ``timeout_grace`` / ``timeout_grace_factor``: the watchdog waits the limit plus
      ``max(timeout_grace, timeout_grace_factor * limit)`` seconds. Lean's cancellation is
      cooperative and the REPL's timeout timers block a pool thread with ``IO.sleep``
      (``goal.tactic`` runs two), so the REPL's own ``interrupt`` can come seconds late; killing
      it earlier costs a relaunch and re-import (minutes with Mathlib) where waiting works.
    - ``verify_timeout``: limit (s) of one ``verify``/``frontend.process``.
    - ``max_requests`` / ``max_rss_mb``: memory guard; when exceeded the REPL is restarted at the next
      ``start`` (between theorems, so live states are not lost mid-search).
    - ``stderr_lines``: size of the stderr ring buffer; ``stderr_tail_lines`` go into messages.
    - ``check_version``: compare ``repl --version`` with the project's ``lean-toolchain``.
    - ``env``: extra environment variables for the REPL.
    - ``auto_restart``: relaunch right after a crash/timeout kill (in the background).
    - ``gc_batch``: dropped states are freed with one ``goal.delete`` once this many are pending.
    """

    command: str | os.PathLike[str] | Sequence[str] | None = None
    project_dir: str | os.PathLike[str] | None = None
    imports: Sequence[str] = ("Init",)
    core_options: Sequence[str] | Mapping[str, Any] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    lean_path: str | None = None
    ready_timeout: float = 600.0
    request_timeout: float = 120.0
    tactic_timeout: float | None = 30.0
    verify_timeout: float | None = 300.0
    timeout_grace: float = 5.0
    timeout_grace_factor: float = 0.5
    max_requests: int | None = None
    max_rss_mb: float | None = None
    stderr_lines: int = 500
    stderr_tail_lines: int = 40
    check_version: bool = True
    version_timeout: float = 60.0
    lake_timeout: float = 300.0
    env: Mapping[str, str] | None = None
    auto_restart: bool = True
    gc_batch: int = 64

    def __post_init__(self) -> None:
        for name in ("ready_timeout", "request_timeout", "timeout_grace", "version_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"PantographConfig.{name} must be positive")
        if not self.timeout_grace_factor >= 0:
            raise ConfigError("PantographConfig.timeout_grace_factor must be >= 0")
        for name in ("tactic_timeout", "verify_timeout", "max_rss_mb"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ConfigError(f"PantographConfig.{name} must be positive or None")
        if self.max_requests is not None and self.max_requests < 1:
            raise ConfigError("PantographConfig.max_requests must be at least 1 or None")
        if isinstance(self.imports, str):
            raise ConfigError("PantographConfig.imports must be a list of module names, not a str")
        for key, why in _FORBIDDEN_OPTIONS.items():
            if key in self.options and bool(self.options[key]) != (key == "printExprPretty"):
                raise ConfigError(
                    f"REPL option {key}={self.options[key]!r} is not supported: {why}"
                )
        if self.options.get("automaticMode") is False:
            raise ConfigError(
                "the ProofEnv layer needs automaticMode on (a tactic keeps the other goals); "
                "use the low-level AsyncPantographClient for manual mode"
            )

    def watchdog_limit(self, timeout: float) -> float:
        """Seconds the client waits for a command the REPL itself stops after ``timeout``."""
        return timeout + max(self.timeout_grace, self.timeout_grace_factor * timeout)

    def core_option_args(self) -> list[str]:
        """``--key=value`` arguments."""
        items: list[str]
        if isinstance(self.core_options, Mapping):
            items = [f"{k}={_opt_value(v)}" for k, v in self.core_options.items()]
        elif isinstance(self.core_options, str):
            items = [self.core_options]
        else:
            items = [str(x) for x in self.core_options]
        out = []
        for item in items:
            item = item.strip()
            if not item:
                continue
            out.append(item if item.startswith("--") else f"--{item}")
        return out

    @property
    def project_path(self) -> Path | None:
        return Path(self.project_dir).expanduser().resolve() if self.project_dir else None

    def with_(self, **changes: Any) -> PantographConfig:
        return replace(self, **changes)


def _opt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
