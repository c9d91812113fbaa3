"""Layer 1 (interaction): ``PantographConfig``, everything needed to launch and drive a Pantograph
REPL."""

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
    """How to launch and drive the Pantograph REPL (documented like the trainers' configs: each
    field's doc below is what ``field_docs`` / ``describe_config`` read).

    Parameters:
        > Parameters that control the REPL process

        command (`str`, `PathLike`, `list[str]` or `None`, *optional*, defaults to `None`):
            The REPL binary: a path, a command-line string, or an argv list. `None`: discover it
            (see `lean_dojo_v2.interaction.pantograph.locate`).
        project_dir (`str`, `PathLike` or `None`, *optional*, defaults to `None`):
            The Lean project: the REPL's working directory. `LEAN_PATH` comes from
            `lake env printenv LEAN_PATH` there unless `lean_path` is given, and its
            `lean-toolchain` is checked against the REPL's Lean version.
        imports (`list[str]`, *optional*, defaults to `("Init",)`):
            Modules imported at launch; every theorem you `start` must be in them.
        core_options (`list[str]` or `dict`, *optional*, defaults to `()`):
            Lean core options, `"maxHeartbeats=400000"` or `{"maxHeartbeats": 400000}`.
        options (`dict`, *optional*, defaults to `{}`):
            Pantograph REPL options sent with `options.set` after every (re)start.
        lean_path (`str` or `None`, *optional*, defaults to `None`):
            `LEAN_PATH` for the REPL, given directly instead of asking `lake` in `project_dir`
            (for a project whose `lake` cannot run here, or to save its start-up time).

        > Parameters that control the time limits

        ready_timeout (`float`, *optional*, defaults to `600.0`):
            Seconds to wait for `ready.` after launch; imports can take minutes (Mathlib).
        request_timeout (`float`, *optional*, defaults to `120.0`):
            Client-side limit (s) of a request without its own timeout.
        tactic_timeout (`float` or `None`, *optional*, defaults to `30.0`):
            Default limit (s) of one tactic, set as the REPL `timeout` option: the REPL interrupts
            the tactic and stays usable; the client-side watchdog (which kills and restarts the
            REPL) waits `watchdog_limit` of it. `None`: no tactic limit beyond `request_timeout`.
        verify_timeout (`float` or `None`, *optional*, defaults to `300.0`):
            Limit (s) of one `verify` (`frontend.process` of the whole file).
        timeout_grace (`float`, *optional*, defaults to `5.0`):
            The watchdog waits the limit plus `max(timeout_grace, timeout_grace_factor * limit)`
            seconds. Lean's cancellation is cooperative and the REPL's timeout timers block a pool
            thread with `IO.sleep` (`goal.tactic` runs two), so the REPL's own interrupt can come
            seconds late; killing it earlier costs a relaunch and re-import (minutes with Mathlib)
            where waiting works.
        timeout_grace_factor (`float`, *optional*, defaults to `0.5`):
            The part of the watchdog's grace that grows with the limit (see `timeout_grace`).

        > Parameters that control memory

        max_requests (`int` or `None`, *optional*, defaults to `None`):
            Memory guard: after this many requests the REPL is restarted at the next `start`
            (between theorems, so live states are not lost mid-search). `None`: no limit.
        max_rss_mb (`float` or `None`, *optional*, defaults to `None`):
            Memory guard: when the REPL's resident memory exceeds this many MB it is restarted at
            the next `start`, as for `max_requests`. `None`: no limit.

        > Parameters that control error messages

        stderr_lines (`int`, *optional*, defaults to `500`):
            Size of the ring buffer of the REPL's stderr lines kept in memory.
        stderr_tail_lines (`int`, *optional*, defaults to `40`):
            How many of the last stderr lines go into an error's message.

        > Parameters that control the start-up

        check_version (`bool`, *optional*, defaults to `True`):
            Compare `repl --version` with the project's `lean-toolchain` before launching: a REPL
            built for another Lean fails later in ways much harder to read.
        version_timeout (`float`, *optional*, defaults to `60.0`):
            Seconds `repl --version` may take (never more than `ready_timeout`).
        lake_timeout (`float`, *optional*, defaults to `300.0`):
            Seconds `lake env printenv LEAN_PATH` may take (lake may fetch or configure first).
        env (`dict[str, str]` or `None`, *optional*, defaults to `None`):
            Extra environment variables for the REPL (applied last, so they win over
            `LEAN_PATH` above; e.g. `LEAN_SYSROOT`).

        > Parameters that control restarts and clean-up

        auto_restart (`bool`, *optional*, defaults to `True`):
            Relaunch the REPL right after a crash or a timeout kill (in the background), so the
            next call does not wait for the imports.
        gc_batch (`int`, *optional*, defaults to `64`):
            Dropped proof states are freed with one `goal.delete` once this many are pending
            (one request per state would double the traffic of a search).
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

    def with_(self, **changes: Any) -> PantographConfig:  # each a field's own type
        return replace(self, **changes)


def _opt_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
